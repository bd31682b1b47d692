/**
 * Run under Bun by health-threads.test.ts (the frontends' worker threads need Bun): a
 * server in process with 2 HTTP and 2 gRPC worker threads. A child process
 * (health-threads-probe.ts) probes the server's health over both while this, the main,
 * thread is kept busy for BLOCK_MS; then a model that fails to load, and its unload, move
 * the strict readiness the workers answer. Prints one JSON line.
 */
import { mkdirSync, mkdtempSync, rmSync, cpSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { credentials, makeGenericClientConstructor, type ServiceError } from "@grpc/grpc-js";
import { createServer } from "../../src/index.ts";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const BLOCK_MS = 4000;
/** The child's limit for each probe: under BLOCK_MS, so that only an answer given while this thread was busy counts. */
const PROBE_LIMIT_MS = 1500;

declare const Bun: typeof import("bun");

const dir = mkdtempSync(join(tmpdir(), "nereid-health-threads-"));
try {
  cpSync(join(ROOT, "model_repository", "simple"), join(dir, "simple"), { recursive: true });
  // No model file: its load fails, and with strict readiness the server is not ready until it is unloaded.
  mkdirSync(join(dir, "broken", "1"), { recursive: true });
  writeFileSync(join(dir, "broken", "config.pbtxt"), 'name: "broken"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n');
  const nereid = await createServer({
    modelRepository: dir,
    loadModels: ["simple"],
    httpThreadCount: 2,
    grpcInferThreadCount: 2,
    logInfo: false,
    logWarning: false,
    logError: false,
  });
  try {
    const { http, grpc } = await nereid.listen({ http: { port: 0, address: "127.0.0.1" }, grpc: { port: 0, address: "127.0.0.1" } });
    const child = Bun.spawn([process.execPath, join(import.meta.dirname, "health-threads-probe.ts"), http!, grpc!, String(PROBE_LIMIT_MS)], { stdout: "pipe" });
    // Busy: no message from a worker is read on this thread until the end.
    const end = performance.now() + BLOCK_MS;
    while (performance.now() < end) {}
    const whileBusy = JSON.parse((await new Response(child.stdout).text()).trim());

    const httpReady = async () => (await fetch(`${http}/v2/health/ready`)).status;
    const Health = makeGenericClientConstructor(serviceDefinition("grpc.health.v1.Health"), "Health");
    const health = new Health(grpc!, credentials.createInsecure()) as unknown as {
      Check(req: object, cb: (err: ServiceError | null, res: { status: string }) => void): void;
      close(): void;
    };
    const check = () => new Promise<string>((resolve, reject) => health.Check({}, (err, res) => (err ? reject(err) : resolve(res.status))));
    const readiness = async () => [await httpReady(), (await fetch(`${http}/v2/health/live`)).status, await check()];

    const before = await readiness();
    const loadError = await nereid.load("broken").then(
      () => "",
      (e: Error) => e.message,
    );
    const afterFailedLoad = await readiness();
    await nereid.unload("broken");
    const afterUnload = await readiness();
    health.close();
    console.log(JSON.stringify({ whileBusy, before, loadFailed: loadError !== "", afterFailedLoad, afterUnload }));
  } finally {
    await nereid.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
