/**
 * Builds a temporary model repository for a test: the example models from
 * scripts/make-models.ts plus whatever extra folders the test writes.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./server-process.ts";

export function makeRepository(models: string[]): { dir: string; add(path: string, content: string | Uint8Array): void; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "nereid-repo-"));
  execFileSync(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "scripts", "make-models.ts"), dir, `--only=${models.join(",")}`], {
    cwd: ROOT,
    stdio: "pipe",
  });
  return {
    dir,
    add(path, content) {
      const full = join(dir, path);
      mkdirSync(join(full, ".."), { recursive: true });
      writeFileSync(full, content);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Model metadata of the example `simple` model, the same over HTTP and gRPC (P-04). */
export const SIMPLE_METADATA = {
  name: "simple",
  versions: ["1"],
  platform: "onnxruntime_onnx",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [-1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [-1, 16] },
  ],
  outputs: [
    { name: "OUTPUT0", datatype: "INT32", shape: [-1, 16] },
    { name: "OUTPUT1", datatype: "INT32", shape: [-1, 16] },
  ],
};

/** `simple`'s config in Triton's JSON form with `patch` applied: a repository load's `config` override. */
export function simpleConfigJson(patch: object = {}): string {
  return JSON.stringify({
    name: "simple",
    platform: "onnxruntime_onnx",
    max_batch_size: 8,
    input: [
      { name: "INPUT0", data_type: "TYPE_INT32", dims: [16] },
      { name: "INPUT1", data_type: "TYPE_INT32", dims: [16] },
    ],
    output: [
      { name: "OUTPUT0", data_type: "TYPE_INT32", dims: [16] },
      { name: "OUTPUT1", data_type: "TYPE_INT32", dims: [16] },
    ],
    ...patch,
  });
}
