/**
 * Run under Bun by port-close.test.ts (TypeScript models' worker threads need Web Workers):
 * a worker-thread instance (WorkerModel) serving a frontend worker's port, whose other end
 * this script holds as the frontend worker would. It sends two executes on the port, the
 * first held by the model until its request's signal aborts, then closes its end as an
 * ending frontend worker does, and prints what the model saw as one JSON line.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { WorkerModel } from "../../../../src/backends/typescript/worker.ts";
import { CustomMetrics } from "../../../../src/backends/custom-metrics.ts";
import type { FromInstancePort, PlainRequest, ToInstancePort } from "../../../../src/backends/typescript/worker-protocol.ts";

/** Y = A; A = 1 writes `started-1`, waits for its signal to abort, then writes `aborted-1`; any other A writes `ran-<A>`. */
const MODEL = `
import { writeFileSync } from "node:fs";
const mark = (name) => writeFileSync(new URL(name, import.meta.url), "");
export default class Hold {
  async execute(requests) {
    const r = requests[0];
    const a = r.input("A").data[0];
    if (a === 1) {
      mark("started-1");
      await new Promise((resolve) => r.signal.addEventListener("abort", resolve));
      mark("aborted-1");
    } else {
      mark("ran-" + a);
    }
    return requests.map((q) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: q.input("A").data }] }));
  }
}
`;

const dir = mkdtempSync(join(tmpdir(), "nereid-port-close-"));
const version = join(dir, "hold", "1");
mkdirSync(version, { recursive: true });
const path = join(version, "model.js");
writeFileSync(path, MODEL);
const at = (name: string) => existsSync(join(version, name));
const until = async (what: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
};

const config = {
  name: "hold",
  backend: "typescript",
  max_batch_size: 0,
  input: [{ name: "A", data_type: "TYPE_INT32", dims: [1] }],
  output: [{ name: "Y", data_type: "TYPE_INT32", dims: [1] }],
};
const logger = { info() {}, warn() {}, error() {}, verbose() {} };
const model = await WorkerModel.create(
  pathToFileURL(path).href,
  path,
  {
    modelConfig: config,
    modelName: "hold",
    modelVersion: 1,
    instanceName: "hold_0",
    instanceKind: "KIND_CPU",
    deviceId: 0,
    repositoryPath: join(dir, "hold"),
    parameters: {},
    logger,
  },
  { model: "hold", instance: "hold_0", logger, unavailable() {} },
  new CustomMetrics(),
);
// The instance's shared ENDED slot, as the TypeScript backend gives it (backend.ts).
model.endedFlag = new Int32Array(new SharedArrayBuffer(4));
const channel = model.connect();
if (!channel) throw new Error("the instance gave no port");
const port = channel.port;
/** The port's onmessage (the DOM MessagePort's, which @types/node's lacks). */
const onMessage = (p: MessagePort, f: (e: MessageEvent) => void) => ((p as unknown as { onmessage: (e: MessageEvent) => void }).onmessage = f);
const answers: FromInstancePort[] = [];
onMessage(port, (e) => answers.push(...(e.data as FromInstancePort[])));
await until(() => answers.some((m) => m.t === "serving"));

const request = (a: number): PlainRequest => ({
  id: `r${a}`,
  inputs: [{ name: "A", datatype: "INT32", shape: [1], data: new Uint8Array(Int32Array.of(a).buffer) }],
  requestedOutputNames: ["Y"],
  parameters: {},
  correlationId: undefined,
  flags: { sequenceStart: false, sequenceEnd: false },
  cancelled: false,
});
const send = (m: ToInstancePort) => port.postMessage([m], []);
send({ t: "execute", id: 1, requests: [request(1)], buffers: [] });
const held = await until(() => at("started-1"));
// Queued behind the held one: it has not started when the port closes.
send({ t: "execute", id: 2, requests: [request(2)], buffers: [] });
await new Promise((r) => setTimeout(r, 100));
const answeredBeforeClose = answers.filter((m) => m.t !== "serving").length;
port.close();
const aborted = await until(() => at("aborted-1"));
// Time for the queued one to run, were it going to.
await new Promise((r) => setTimeout(r, 300));
// The instance still serves: a new port's request runs.
const again = model.connect();
let ranAfter = false;
if (again) {
  const next: FromInstancePort[] = [];
  onMessage(again.port, (e) => next.push(...(e.data as FromInstancePort[])));
  await until(() => next.some((m) => m.t === "serving"));
  again.port.postMessage([{ t: "execute", id: 3, requests: [request(3)], buffers: [] } satisfies ToInstancePort], []);
  ranAfter = await until(() => next.some((m) => m.t === "done" && m.id === 3));
  again.port.close();
}
const result = { held, answeredBeforeClose, aborted, ranQueued: at("ran-2"), ranAfter, ran3: at("ran-3") };
await model.finalize();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(result));
process.exit(0);
