/**
 * The compiled binary copied alone into an empty directory (no node_modules, no
 * sources) starts on a copy of the example models and serves inference, the OCR
 * pipeline's TypeScript models (which import pngjs and jpeg-js) included.
 */
import { describe, it, expect, afterAll } from "vitest";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ROOT, startServerProcess } from "../helpers/server-process.ts";
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
    // ONNX Runtime's telemetry stays off in the binary too (Bun's process.env does not
    // reach getenv): it would leave /tmp/mat-debug-<pid>.log and a database under
    // $HOME/.cache/Microsoft or $XDG_CACHE_HOME/Microsoft.
    expect(readdirSync(dir).sort()).toEqual(["cache", "models", "nereid"]);
    expect(readdirSync(join(dir, "cache"))).toEqual(["nereid"]);
    expect(existsSync(`/tmp/mat-debug-${server.pid}.log`)).toBe(false);
  });

  it("serves the OCR ensemble from a copy of model_repository/: its TypeScript models get pngjs from the binary", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-alone-ocr-"));
    dirs.push(dir);
    copyFileSync(BINARY, join(dir, "nereid"));
    mkdirSync(join(dir, "models"));
    for (const m of ["ocr", "ocr_pre", "ocr_det", "ocr_boxes", "ocr_cls", "ocr_rotate", "ocr_rec", "ocr_ctc"]) {
      cpSync(join(ROOT, "model_repository", m), join(dir, "models", m), { recursive: true });
    }
    const server = await startServerProcess(["--model-repository=models"], {
      command: "./nereid",
      cwd: dir,
      cleanEnv: true,
      env: { PATH: "/usr/bin:/bin", HOME: dir, XDG_CACHE_HOME: join(dir, "cache") },
      timeoutMs: 120_000,
    });
    try {
      const png = readFileSync(join(ROOT, "docs", "ocr-example.png"));
      const element = Buffer.alloc(4 + png.length);
      element.writeUInt32LE(png.length, 0);
      png.copy(element, 4);
      const header = JSON.stringify({
        inputs: [{ name: "image", shape: [1], datatype: "BYTES", parameters: { binary_data_size: element.length } }],
        outputs: [{ name: "text", parameters: { binary_data: false } }],
      });
      const res = await fetch(`${server.url}/v2/models/ocr/infer`, {
        method: "POST",
        headers: { "Inference-Header-Content-Length": String(header.length) },
        body: Buffer.concat([Buffer.from(header), element]),
      });
      const json = (await res.json()) as { outputs: { data: string[] }[] };
      expect(res.status, JSON.stringify(json)).toBe(200);
      expect(json.outputs[0]!.data).toContain("NEREID SERVES OCR");
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
  }, 180_000);
});
