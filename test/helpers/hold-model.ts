/**
 * A TypeScript model's source that holds the thread it runs on: its execute writes `held`,
 * then spins until `release` exists (20 s at most) and echoes A as SUM. Given
 * execution_thread "main", it holds the main thread's event loop: what is answered
 * meanwhile was answered without it (the frontend worker tests, #30).
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { eventually } from "./eventually.ts";

export const holdModel = (held: string, release: string) => `
import { existsSync, writeFileSync } from "node:fs";
export default class Hold {
  execute(requests) {
    writeFileSync(${JSON.stringify(held)}, "held");
    const until = Date.now() + 20000;
    while (!existsSync(${JSON.stringify(release)}) && Date.now() < until) {}
    return requests.map((r) => ({ outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: r.input("A").data }] }));
  }
}
`;

/** Adds `hold` (the model above, on the main thread; A and SUM INT32 [16]) to `repo`; returns its files. */
export function addHoldModel(repo: { dir: string; add(path: string, content: string): void }): { held: string; release: string } {
  const held = join(repo.dir, "held");
  const release = join(repo.dir, "release");
  const io = `max_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]\n`;
  repo.add("hold/config.pbtxt", `name: "hold"\nbackend: "typescript"\n${io}parameters { key: "execution_thread" value: { string_value: "main" } }\n`);
  repo.add("hold/1/model.js", holdModel(held, release));
  return { held, release };
}

/** Runs `during` while a request to `hold` (addHoldModel) holds the main thread of the server at `url`; then releases it, checks its answer and removes the files. */
export async function whileMainHeld(url: string, files: { held: string; release: string }, during: () => Promise<void>): Promise<void> {
  const held = fetch(`${url}/v2/models/hold/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [16], data: Array(16).fill(1) }] }),
  });
  try {
    await eventually(async () => expect(existsSync(files.held)).toBe(true));
    await during();
  } finally {
    writeFileSync(files.release, "");
    expect((await held).status).toBe(200);
    rmSync(files.held, { force: true });
    rmSync(files.release, { force: true });
  }
}
