/**
 * Run under Bun by bls-turns.test.ts (TypeScript models' worker threads need Web Workers):
 * a TypeScript model whose execute makes CALLS BLS calls to `simple` one after the other,
 * `simple` running ONNX Runtime inline on the main thread (run_mode sync), the server in
 * process. Meanwhile the main thread keeps one setImmediate queued, each re-queueing the
 * next, and notes `simple`'s inference count at each. Prints one JSON line: the calls each
 * of ROUNDS executes made (as `simple` answered them right), and the most of them made
 * between two of those immediates.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, appendFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createServer } from "../../../../src/index.ts";

const ROOT = resolve(import.meta.dirname, "../../../..");
const CALLS = 200;
const ROUNDS = 24;

/** Y = the number of BLS calls whose answer was right, each adding A to itself through `simple`. */
const MODEL = `
export default class Chain {
  async execute(requests) {
    const out = [];
    for (const r of requests) {
      const a = r.input("A").data;
      let n = 0;
      for (let i = 0; i < ${CALLS}; i++) {
        const res = await r.infer({
          model: "simple",
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: a },
          ],
          outputs: ["OUTPUT0"],
        });
        if (res.output("OUTPUT0").data.every((v, k) => v === a[k] * 2)) n++;
      }
      out.push({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [n] }] });
    }
    return out;
  }
}
`;

const dir = mkdtempSync(join(tmpdir(), "nereid-bls-turns-"));
try {
  cpSync(join(ROOT, "model_repository", "simple"), join(dir, "simple"), { recursive: true });
  appendFileSync(join(dir, "simple", "config.pbtxt"), '\nparameters [ { key: "run_mode" value: { string_value: "sync" } } ]\n');
  mkdirSync(join(dir, "chain", "1"), { recursive: true });
  writeFileSync(join(dir, "chain", "1", "model.js"), MODEL);
  writeFileSync(
    join(dir, "chain", "config.pbtxt"),
    'name: "chain"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
  );
  const nereid = await createServer({ modelRepository: dir, logInfo: false, logWarning: false });
  const count = () => Number(nereid.statistics("simple")[0]!.inference_count);
  const calls: number[] = [];
  const gaps: number[] = [];
  const a = Int32Array.from({ length: 16 }, (_, i) => i);
  // Several rounds: before, a chain held the immediates back in some rounds only.
  for (let round = 0; round < ROUNDS; round++) {
    let running = true;
    let last = count();
    let maxGap = 0;
    const tick = () => {
      if (!running) return;
      const now = count();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      setImmediate(tick);
    };
    setImmediate(tick);
    const r = await nereid.infer({ model: "chain", inputs: [{ name: "A", datatype: "INT32", shape: [16], data: a }] });
    running = false;
    calls.push(r.output("Y", "INT32").data[0]!);
    gaps.push(maxGap);
  }
  await nereid.stop();
  console.log(JSON.stringify({ calls, maxGap: Math.max(...gaps), gaps }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
