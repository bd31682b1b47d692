/**
 * The server the fuzz targets run against: the compiled binary (test/helpers/server-process.ts)
 * on the fuzz repository, in explicit mode with every model loaded and tracing configured,
 * so that infer, load/unload and trace routes are all reachable. Client shared memory
 * stays off: a fuzzer must not map other processes' objects.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeFuzzRepository, PYTHON } from "./models.ts";
import type { FuzzServer } from "./run.ts";
import { VERTEX_ROUTES } from "./gateway-gen.ts";

export interface FuzzFixture {
  server: ManagedServer;
  repoDir: string;
  /** Base64 of the `simple` model file, for load overrides. */
  modelBase64: string;
  /** A folder of the fixture's own (trace file, scratch). */
  scratch: string;
  close(): Promise<void>;
}

export type ManagedServer = FuzzServer & {
  process: ServerProcess;
  threadFailed(): string | undefined;
  stop(): Promise<void>;
  restart(): Promise<ManagedServer>;
};

/** The port a listener announced in the log ("Started <what> at host:port"), waiting for the line. */
async function announcedPort(p: ServerProcess, what: string): Promise<number> {
  const line = new RegExp(`Started ${what} at [^\\s:]+:(\\d+)`);
  for (let i = 0; i < 200; i++) {
    const m = line.exec(p.log());
    if (m) return Number(m[1]);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the server did not start its ${what}:\n${p.log()}`);
}

/** Starts the binary with `args` (py_add_sub's interpreter given); restart() replaces a dead process in place (same object). */
export async function startFuzzServer(given: string[], opts: { env?: Record<string, string> } = {}): Promise<ManagedServer> {
  try {
    execFileSync(PYTHON, ["-c", "import numpy"], { stdio: "pipe" });
  } catch (err) {
    throw new Error(`the fuzz repository's py_add_sub needs ${PYTHON} with numpy (apt-get install python3-numpy): ${String(err)}`);
  }
  const args = [`--backend-config=python,interpreter=${PYTHON}`, ...given];
  const s = {} as ManagedServer;
  const launch = async () => {
    const p = await startServerProcess(args, { env: opts.env });
    let dead = false;
    void p.exited.then(() => (dead = true));
    let read = 0;
    const threadFailed = () => {
      // Whole lines only: one still being written is read at the next call.
      const log = p.log();
      const end = log.lastIndexOf("\n") + 1;
      const line = / worker thread(?: ended;|:) .*/.exec(log.slice(read, end))?.[0];
      read = Math.max(read, end);
      return line;
    };
    Object.assign(s, { process: p, url: p.url, grpcTarget: p.grpcTarget!, alive: () => !dead, threadFailed });
    if (args.includes("--allow-sagemaker=true")) s.sagemakerUrl = `http://127.0.0.1:${await announcedPort(p, "Sagemaker HTTPService")}`;
    if (args.includes("--allow-vertex-ai=true")) s.vertexUrl = `http://127.0.0.1:${await announcedPort(p, "Vertex AI HTTPService")}`;
  };
  await launch();
  s.stop = async () => void (await s.process.stop());
  s.restart = async () => {
    await s.process.stop("SIGKILL");
    await launch();
    return s;
  };
  return s;
}

/** The fuzz repository and a server on it; `close()` stops the server and removes both folders. */
export async function startFuzzFixture(extraArgs: string[] = []): Promise<FuzzFixture> {
  const repo = makeFuzzRepository();
  const scratch = mkdtempSync(join(tmpdir(), "nereid-fuzz-"));
  const args = [
    `--model-repository=${repo.dir}`,
    "--model-control-mode=explicit",
    "--load-model=*",
    `--trace-config=triton,file=${join(scratch, "trace.json")}`,
    "--trace-config=level=OFF",
    // The cloud frontends (#29): SageMaker's /invocations and Vertex AI's predict route infer on `simple`.
    "--allow-sagemaker=true",
    "--sagemaker-port=0",
    "--allow-vertex-ai=true",
    "--vertex-ai-port=0",
    "--vertex-ai-default-model=simple",
    ...extraArgs,
  ];
  const env = {
    TMPDIR: scratch,
    SAGEMAKER_TRITON_DEFAULT_MODEL_NAME: "simple",
    AIP_PREDICT_ROUTE: VERTEX_ROUTES.predict,
    AIP_HEALTH_ROUTE: VERTEX_ROUTES.health,
  };
  const server = await startFuzzServer(args, { env });
  return {
    server,
    repoDir: repo.dir,
    modelBase64: readFileSync(join(repo.dir, "simple", "1", "model.onnx")).toString("base64"),
    scratch,
    close: async () => {
      await server.stop();
      repo.remove();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
