/**
 * The cost of one ONNX Runtime run through Nereid's layers (moved out of the test tree,
 * #33: it asserts nothing): µs per BackendInstance.execute() in the sync, async and auto
 * run modes, and µs per OrtSession.run() sync or async with outputs preallocated or
 * allocated by ONNX Runtime. Modes take turns, five rounds each, so JIT warm-up and the
 * machine's drift hit all alike; each figure is the median of the rounds. Every run's
 * answer is checked. Writes scripts/results/ort-execute.md.
 *
 *   bun scripts/bench-ort-execute.ts
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { OrtSession } from "../ffi/onnxruntime/session.ts";
import { OrtEnvironment, OrtSessionOptions } from "../ffi/onnxruntime/handles.ts";
import { ModelDir, params, instanceFor, int32s, addSubSpec, addSubInputs } from "../test/ffi/ort-helpers.ts";
import { machineHeading } from "./lib/bench.ts";

const median = (v: number[]) => [...v].sort((x, y) => x - y)[v.length >> 1]!;
const lines: string[] = [];

function check(got: number[], want: number[], what: string): void {
  if (got.length !== want.length || got.some((x, i) => x !== want[i])) throw new Error(`${what}: wrong answer`);
}

const dir = new ModelDir();
dir.open();
try {
  {
    const RUNS = 1000;
    const { a, b, inputs } = addSubInputs(8);
    const modes = ["sync", "async", "auto"] as const;
    const us: Record<string, number[]> = { sync: [], async: [], auto: [] };
    const path = dir.model(addSubSpec("bench"));
    const loaded = await Promise.all(modes.map((mode) => instanceFor(dir.path, path, { name: `bench_${mode}`, parameters: params({ run_mode: mode }) })));
    try {
      for (const { inst } of loaded) for (let i = 0; i < 200; i++) await inst.execute(inputs, ["SUM", "DIFF"]);
      for (let round = 0; round < 5; round++) {
        for (const [k, mode] of modes.entries()) {
          const inst = loaded[k]!.inst;
          const t0 = performance.now();
          let last: Awaited<ReturnType<typeof inst.execute>> | undefined;
          for (let i = 0; i < RUNS; i++) last = await inst.execute(inputs, ["SUM", "DIFF"]);
          us[mode]!.push(((performance.now() - t0) * 1000) / RUNS);
          check(
            int32s(last!.outputs[0]!),
            a.map((x, i) => x + b[i]!),
            `${mode} SUM`,
          );
          check(
            int32s(last!.outputs[1]!),
            a.map((x, i) => x - b[i]!),
            `${mode} DIFF`,
          );
        }
      }
    } finally {
      for (const l of loaded) l.close();
    }
    lines.push(`| Add/Sub INT32 [8,16], µs per execute() (median of 5×${RUNS}) | ${modes.map((m) => `${m} ${median(us[m]!).toFixed(1)}`).join(", ")} |`);
  }
  {
    const RUNS = 2000;
    const env = OrtEnvironment.get();
    using options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
    using session = new OrtSession(env, dir.model(addSubSpec("bench_session")), options);
    const inputs = addSubInputs(1).inputs.map((t) => ({ name: t.name, elementType: 6, shape: t.shape, data: t.data }));
    const cases = {
      "sync, preallocated": [false, true],
      "sync, ORT-allocated": [false, false],
      "async, preallocated": [true, true],
      "async, ORT-allocated": [true, false],
    } as const;
    const us: Record<string, number[]> = {};
    for (let round = 0; round < 5; round++) {
      for (const [label, [async, batched]] of Object.entries(cases)) {
        for (let i = 0; i < 100; i++) await session.run(inputs, ["SUM", "DIFF"], async, batched);
        const t0 = performance.now();
        for (let i = 0; i < RUNS; i++) await session.run(inputs, ["SUM", "DIFF"], async, batched);
        (us[label] ??= []).push(((performance.now() - t0) * 1000) / RUNS);
      }
    }
    lines.push(
      `| Add/Sub INT32 [1,16], µs per OrtSession.run() (median of 5×${RUNS}) | ${Object.keys(cases)
        .map((k) => `${k} ${median(us[k]!).toFixed(1)}`)
        .join(", ")} |`,
    );
  }
} finally {
  dir.close();
}

const text = `\n${machineHeading()}\n\n| measure | result |\n| --- | --- |\n${lines.join("\n")}\n`;
console.log(text);
appendFileSync(join(import.meta.dirname, "results", "ort-execute.md"), text);
