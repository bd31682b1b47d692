/**
 * Every command-line flag through the compiled binary (#17 acceptance): the server is
 * started once per flag with a value in Triton's syntax (from its documentation and
 * `tritonserver --help`), and must come up, or, for a feature not built yet, exit 1 with
 * its reason. Where a flag's effect shows from outside, that is checked too: inert flags
 * log what they mean here; --id names the server; --log-file writes the log; and so on.
 * The table must cover every flag the parser knows (flagTable()).
 */
import { afterAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, serverCommand, runServerToExit, SIMPLE_TWOS_AND_THREES, type ServerProcess } from "../helpers/server-process.ts";
import { eventually } from "../helpers/eventually.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";
import { flagTable } from "../../src/options.ts";

const repo = makeRepository(["simple"]);
const tmp = mkdtempSync(join(tmpdir(), "nereid-flags-"));
afterAll(() => {
  repo.remove();
  rmSync(tmp, { recursive: true, force: true });
});

type Check = (s: ServerProcess) => Promise<void> | void;
const inert =
  (flag: string, value: string): Check =>
  (s) =>
    expect(s.log()).toContain(`--${flag}=${value} accepted; it has no effect here: `);
const get = async (s: ServerProcess, path: string) => fetch(`${s.url}${path}`);
/** The OpenAI-compatible listener started on `address` and lists the repository's model (#35). */
const openAiServes = (s: ServerProcess, address: string) =>
  eventually(async () => {
    const port = new RegExp(`Started OpenAI-compatible HTTPService at ${address.replaceAll(".", "\\.")}:(\\d+)`).exec(s.log())?.[1];
    expect(port).toBeDefined();
    const list = (await (await fetch(`http://${address}:${port}/v1/models`)).json()) as { data: { id: string }[] };
    expect(list.data.map((m) => m.id)).toEqual(["simple"]);
  });

/** flag → [value, extra arguments, what to check once it is up]. */
const STARTS: Record<string, [string, string[]?, Check?]> = {
  "model-repository": [repo.dir],
  "model-store": [repo.dir],
  "model-control-mode": ["explicit", [], async (s) => expect((await get(s, "/v2/models/simple/ready")).status).not.toBe(200)],
  "repository-poll-secs": ["5", ["--model-control-mode=poll"]],
  "load-model": ["simple", ["--model-control-mode=explicit"], async (s) => expect((await get(s, "/v2/models/simple/ready")).status).toBe(200)],
  "model-config-name": ["production"],
  "disable-auto-complete-config": [""],
  "strict-model-config": [
    "false",
    [],
    (s) => expect(s.log()).toContain("Warning: '--strict-model-config' has been deprecated! Please use '--disable-auto-complete-config' instead.\n"),
  ],
  "exit-on-error": ["false"],
  "strict-readiness": ["false"],
  "exit-timeout-secs": ["30"],
  id: ["my-nereid", [], async (s) => expect(((await (await get(s, "/v2")).json()) as { name: string }).name).toBe("my-nereid")],
  "allow-http": ["true"],
  "http-port": ["0"],
  "http-address": ["127.0.0.1"],
  "http-max-input-size": ["1048576"],
  "allow-grpc": ["false", [], (s) => expect(s.grpcTarget).toBeUndefined()],
  "grpc-port": ["0"],
  "grpc-address": ["127.0.0.1"],
  "grpc-keepalive-time": ["7200000"],
  "grpc-keepalive-timeout": ["20000"],
  "grpc-keepalive-permit-without-calls": ["true"],
  "grpc-http2-max-pings-without-data": ["2"],
  "grpc-http2-min-recv-ping-interval-without-data": ["300000"],
  "grpc-http2-max-ping-strikes": ["2"],
  "grpc-max-connection-age": ["60000"],
  "grpc-max-connection-age-grace": ["5000"],
  "grpc-max-connections": ["64"],
  "grpc-handshake-timeout-secs": ["5"],
  "grpc-idle-timeout-secs": ["60"],
  "allow-metrics": ["true", [], async (s) => expect((await fetch(`${s.metricsUrl}/metrics`)).status).toBe(200)],
  "metrics-port": ["0"],
  "metrics-address": ["127.0.0.1"],
  "metrics-interval-ms": ["1000"],
  "allow-cpu-metrics": ["false"],
  "max-queued-bytes": ["1048576"],
  "allow-client-shm": ["true", [], async (s) => expect((await get(s, "/v2/systemsharedmemory/status")).status).toBe(200)],
  "allow-model-code-overrides": ["true", ["--model-control-mode=explicit"]],
  "allow-status-page": ["true", [], async (s) => expect((await get(s, "/nereid/status.json")).status).toBe(200)],
  "allow-gpu-metrics": ["false"],
  "http-restricted-api": [
    "model-repository:admin-key=secret",
    [],
    async (s) => expect((await fetch(`${s.url}/v2/repository/index`, { method: "POST" })).status).toBe(403),
  ],
  "grpc-restricted-protocol": ["model-repository:admin-key=secret"],
  "trace-config": ["rate=100"],
  "trace-file": [join(tmp, "trace.json")],
  "trace-level": ["TIMESTAMPS"],
  "trace-rate": ["100"],
  "trace-count": ["-1"],
  "metrics-config": ["summary_latencies=true"],
  "cache-config": ["local,size=1048576"],
  "response-cache-byte-size": ["1048576"],
  "log-verbose": ["1"],
  "log-info": ["true"],
  "log-warning": ["true"],
  "log-error": ["true"],
  "log-format": ["ISO8601", [], (s) => expect(s.log()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I /m)],
  "backend-config": ["onnxruntime,default-max-batch-size=8"],
  "trace-log-frequency": ["100"],
  "model-load-thread-count": ["2"],
  "model-load-retry-count": ["1"],
  // The namespace is the repository; one repository, so `simple` resolves by name alone. test/e2e/repository/namespacing.test.ts has the rest.
  "model-namespacing": [
    "true",
    [],
    async (s) => {
      await fetch(`${s.url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify(SIMPLE_TWOS_AND_THREES) });
      expect(await (await fetch(`${s.metricsUrl}/metrics`)).text()).toContain(
        `nv_inference_request_success{model="simple",version="1",namespace="${repo.dir}"} 1`,
      );
    },
  ],
  "rate-limit": ["execution_count"],
  "rate-limit-resource": ["R1:10:0"],
  // Worker threads under Bun, as many as given (more than this machine's cores here); test/e2e/frontend-thread-counts.test.ts runs the frontend suite on 1, 2 and 4.
  "http-thread-count": [
    "8",
    [],
    async (s) => {
      expect(s.log()).toContain("HTTP frontend on 8 worker threads");
      expect((await fetch(`${s.url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify(SIMPLE_TWOS_AND_THREES) })).status).toBe(200);
    },
  ],
  "grpc-infer-thread-count": [
    "2",
    [],
    async (s) => {
      expect(s.log()).toMatch(/gRPC frontend on 2 worker threads/);
      const { client, call } = inferenceClient(s.grpcTarget!);
      try {
        expect(await call("ServerReady")({})).toEqual({ ready: true });
      } finally {
        client.close();
      }
    },
  ],
  "reuse-http-port": ["true"],
  "reuse-grpc-port": ["true"],
  "http-header-forward-pattern": ["^x-request-"],
  "grpc-header-forward-pattern": ["^x-request-"],
  "grpc-use-ssl": ["false"],
  "grpc-use-ssl-mutual": ["false"],
  "grpc-server-cert": ["server.crt"],
  "grpc-server-key": ["server.key"],
  "grpc-root-cert": ["ca.crt"],
  "grpc-infer-response-compression-level": ["high", [], inert("grpc-infer-response-compression-level", "high")],
  "allow-sagemaker": ["true", ["--sagemaker-port=0"]],
  "sagemaker-port": ["8080"],
  "sagemaker-safe-port-range": ["0-65535"],
  "openai-port": ["0", [], (s) => openAiServes(s, "127.0.0.1")],
  "openai-address": ["127.0.0.2", ["--openai-port=0"], (s) => openAiServes(s, "127.0.0.2")],
  "allow-vertex-ai": ["false"],
  "vertex-ai-port": ["8080"],
  "vertex-ai-default-model": ["simple"],
  "sagemaker-thread-count": ["8", [], inert("sagemaker-thread-count", "8")],
  "vertex-ai-thread-count": ["8", [], inert("vertex-ai-thread-count", "8")],
  "grpc-infer-allocation-pool-size": ["8", [], inert("grpc-infer-allocation-pool-size", "8")],
  "grpc-max-response-pool-size": ["1024", [], inert("grpc-max-response-pool-size", "1024")],
  "cache-directory": ["/opt/tritonserver/caches", [], inert("cache-directory", "/opt/tritonserver/caches")],
  "backend-directory": ["/opt/tritonserver/backends", [], inert("backend-directory", "/opt/tritonserver/backends")],
  "repoagent-directory": ["/opt/tritonserver/repoagents", [], inert("repoagent-directory", "/opt/tritonserver/repoagents")],
  "pinned-memory-pool-byte-size": ["268435456", [], inert("pinned-memory-pool-byte-size", "268435456")],
  "cuda-memory-pool-byte-size": ["0:67108864", [], inert("cuda-memory-pool-byte-size", "0:67108864")],
  "cuda-virtual-address-size": ["0:1073741824", [], inert("cuda-virtual-address-size", "0:1073741824")],
  "min-supported-compute-capability": ["6.0", [], inert("min-supported-compute-capability", "6.0")],
  "buffer-manager-thread-count": ["0", [], inert("buffer-manager-thread-count", "0")],
  "host-policy": ["gpu_0,numa-node=0", [], inert("host-policy", "gpu_0,numa-node=0")],
  "model-load-gpu-limit": ["0:0.8", [], inert("model-load-gpu-limit", "0:0.8")],
  "enable-peer-access": ["true", [], inert("enable-peer-access", "true")],
};

describe("the flag table covers every flag", () => {
  it("names each flag the parser takes", () => {
    // --log-file has a test of its own below: its log, "Started HTTPService" included, goes to the file.
    expect([...Object.keys(STARTS), "log-file"].sort()).toEqual(
      flagTable()
        .map((f) => f.name)
        .sort(),
    );
  });
});

describe.concurrent("each flag starts the binary", () => {
  it.each(Object.entries(STARTS))("--%s", async (flag, [value, extra = [], check]) => {
    const arg = value === "" ? `--${flag}` : `--${flag}=${value}`;
    const repoArgs = flag === "model-repository" || flag === "model-store" ? [] : [`--model-repository=${repo.dir}`];
    const server = await startServerProcess([...repoArgs, ...extra, arg]);
    try {
      await check?.(server);
    } finally {
      await server.stop();
    }
  });
});

// #30 item 4: the frontends on worker threads by default, one per core available, at most 8.
describe("--http-thread-count and --grpc-infer-thread-count", () => {
  it("without them: a worker thread per core for each frontend, at most 8 (the main thread on one core)", async () => {
    const server = await startServerProcess([`--model-repository=${repo.dir}`]);
    try {
      const n = Math.min(availableParallelism(), 8);
      const lines = server.log().match(/(HTTP|gRPC) frontend on \d+ worker threads/g) ?? [];
      expect(lines).toEqual(n > 1 ? [`gRPC frontend on ${n} worker threads`, `HTTP frontend on ${n} worker threads`] : []);
      expect((await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify(SIMPLE_TWOS_AND_THREES) })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it.each(["http-thread-count", "grpc-infer-thread-count"])("--%s above 128 stops the start with the bound", async (flag) => {
    const { code, output } = await runServerToExit([`--model-repository=${repo.dir}`, `--${flag}=129`]);
    expect(code).toBe(1);
    expect(output).toContain(`error: invalid value '129' for --${flag}: expected 1..128\n`);
  });
});

describe("--log-file", () => {
  it("writes the log to the file instead of the console", async () => {
    const file = join(tmp, "server.log");
    const { cmd, args } = serverCommand();
    const child = spawn(cmd, [...args, `--model-repository=${repo.dir}`, "--http-port=0", "--grpc-port=0", "--metrics-port=0", `--log-file=${file}`], {
      stdio: "ignore",
    });
    try {
      let text = "";
      for (let i = 0; i < 300 && !text.includes("Started HTTPService"); i++) {
        await new Promise((r) => setTimeout(r, 100));
        text = existsSync(file) ? readFileSync(file, "utf8") : "";
      }
      expect(text).toContain("successfully loaded 'simple' version 1");
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
