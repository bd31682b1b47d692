/**
 * A TypeScript model's BLS calls start on a turn of their own on the main thread (#30). A
 * model that calls a model run inline there (ONNX Runtime, run_mode sync) over and over
 * used to hold back the main thread's immediates and the other workers' messages until its
 * chain ended, under Bun: a generation's tokens reached its gRPC stream all at the end, and
 * a client's cancel came too late to stop it. Run under Bun (bls-turns-check.ts): the
 * instances' worker threads need Web Workers. The hold came in the first rounds of a
 * process, in 7 of 8 processes, so the check runs in three.
 */
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../../..");

describe("a TypeScript model's chain of BLS calls to a model run inline", () => {
  it("lets the main thread's immediates run between its calls (at most 2 calls between two immediates, where up to 197 of 200 came), every call answered right", async () => {
    for (let run = 0; run < 3; run++) {
      const { stdout } = await promisify(execFile)(
        join(ROOT, "node_modules", ".bin", "bun"),
        [join(ROOT, "test/unit/backends/typescript/bls-turns-check.ts")],
        {
          timeout: 60_000,
        },
      );
      const seen = JSON.parse(stdout.trim().split("\n").at(-1)!) as { calls: number[]; maxGap: number };
      expect(seen.calls).toEqual(new Array(24).fill(200));
      // One call a turn now; before, a held round showed 6 to 197.
      expect(seen.maxGap).toBeLessThanOrEqual(2);
    }
  }, 120_000);
});
