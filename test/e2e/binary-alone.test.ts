/**
 * The compiled binary copied alone into an empty directory (no node_modules, no
 * sources) starts on a copy of the example models and serves inference.
 */
import { describe, it, expect, afterAll } from "vitest";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, startServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe.skipIf(!existsSync(BINARY))("dist/nereid alone in an empty directory", () => {
  it("extracts its ONNX Runtime, loads the models, answers and exits 0 on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-alone-"));
    dirs.push(dir);
    copyFileSync(BINARY, join(dir, "nereid"));
    const repo = makeRepository(["simple", "simple_identity"]);
    cpSync(repo.dir, join(dir, "models"), { recursive: true });
    repo.remove();
    expect(readdirSync(dir).sort()).toEqual(["models", "nereid"]);

    const server = await startServerProcess(["--model-repository=models"], {
      command: "./nereid",
      cwd: dir,
      cleanEnv: true,
      env: { PATH: "/usr/bin:/bin", HOME: dir, XDG_CACHE_HOME: join(dir, "cache") },
    });
    try {
      expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
      const res = await fetch(`${server.url}/v2/models/simple/infer`, {
        method: "POST",
        body: JSON.stringify({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(3) },
          ],
        }),
      });
      expect(((await res.json()) as any).outputs[1].data).toEqual(Array.from({ length: 16 }, (_, i) => i - 3));
      expect(readdirSync(join(dir, "cache", "nereid"))[0]).toMatch(new RegExp(`^onnxruntime-${process.arch}-\\d+$`));
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
  });
});
