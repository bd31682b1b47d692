/**
 * Started by health-threads-check.ts while its main thread is busy: probes the server's
 * health over HTTP (live, ready) and gRPC (ServerLive, ServerReady, grpc.health.v1 Check),
 * all at once, each with its own time limit, and prints one JSON line: [answer or error,
 * ms] per probe.
 */
import { credentials, makeGenericClientConstructor, type ServiceError } from "@grpc/grpc-js";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";

const [base, grpc, limitArg] = process.argv.slice(2);
const LIMIT_MS = Number(limitArg);

/** One probe's answer (or "timeout" or the error), and its milliseconds. */
async function probe(run: () => Promise<unknown>): Promise<[unknown, number]> {
  const t = performance.now();
  try {
    return [await run(), Math.round(performance.now() - t)];
  } catch (err) {
    return [
      (err as Error).name === "TimeoutError" ? "timeout" : `error ${(err as ServiceError).code ?? (err as Error).message}`,
      Math.round(performance.now() - t),
    ];
  }
}

type Unary = (req: object, options: { deadline: number }, cb: (err: ServiceError | null, res: unknown) => void) => void;
const client = (service: string, name: string) =>
  new (makeGenericClientConstructor(serviceDefinition(service), name))(grpc!, credentials.createInsecure()) as unknown as Record<string, Unary>;
const inference = client("inference.GRPCInferenceService", "GRPCInferenceService");
const health = client("grpc.health.v1.Health", "Health");
const http = (path: string) => probe(async () => (await fetch(`${base}${path}`, { signal: AbortSignal.timeout(LIMIT_MS) })).status);
const call = (c: Record<string, Unary>, method: string) =>
  probe(() => new Promise((resolve, reject) => c[method]!({}, { deadline: Date.now() + LIMIT_MS }, (err, res) => (err ? reject(err) : resolve(res)))));
// All at once, so that each is made while the server's main thread is busy.
const out = await Promise.all([
  http("/v2/health/live"),
  http("/v2/health/ready"),
  call(inference, "ServerLive"),
  call(inference, "ServerReady"),
  call(health, "Check"),
]);
console.log(JSON.stringify(out));
process.exit(0);
