/**
 * Whether the start will open ONNX Runtime, guessed from the repository's files before the
 * server's modules are evaluated (src/startup/onnx-preload.ts, #30): a config that names
 * ONNX, or a version folder with a model.onnx and no config; nothing for models that the
 * start does not load (explicit mode) or for object-storage repositories.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultOptions, parseArgs, type ServerOptions } from "../../../src/options.ts";
import { onnxLibrarySetting, startLoadsOnnx } from "../../../src/startup/onnx-preload.ts";

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A repository of `models`: each a config text (or null for none) and the files of its version 1. */
function repository(models: Record<string, { config: string | null; files?: string[] }>): string {
  const root = mkdtempSync(join(tmpdir(), "nereid-onnx-preload-"));
  made.push(root);
  for (const [name, m] of Object.entries(models)) {
    mkdirSync(join(root, name, "1"), { recursive: true });
    if (m.config !== null) writeFileSync(join(root, name, "config.pbtxt"), m.config);
    for (const f of m.files ?? []) writeFileSync(join(root, name, "1", f), "x");
  }
  return root;
}

function options(repos: string[], more: Partial<ServerOptions> = {}): ServerOptions {
  return { ...defaultOptions(), modelRepositories: repos, ...more };
}

const PYTHON = { config: 'backend: "python"', files: ["model.py"] };
const ONNX_PLATFORM = { config: 'platform: "onnxruntime_onnx"', files: ["model.onnx"] };
const ONNX_BACKEND = { config: 'backend: "onnxruntime"' };

describe("startLoadsOnnx", () => {
  it("a config naming ONNX Runtime by platform or backend", () => {
    expect(startLoadsOnnx(options([repository({ a: PYTHON, b: ONNX_PLATFORM })]))).toBe(true);
    expect(startLoadsOnnx(options([repository({ a: ONNX_BACKEND })]))).toBe(true);
  });

  it("a model without a config whose version folder holds a model.onnx", () => {
    expect(startLoadsOnnx(options([repository({ bare: { config: null, files: ["model.onnx"] } })]))).toBe(true);
    expect(startLoadsOnnx(options([repository({ bare: { config: null, files: ["model.py"] } })]))).toBe(false);
  });

  it("no ONNX model: Python, TypeScript and ensembles only", () => {
    const repo = repository({ py: PYTHON, ts: { config: 'backend: "typescript"', files: ["model.ts"] }, ens: { config: 'platform: "ensemble"' } });
    expect(startLoadsOnnx(options([repo]))).toBe(false);
  });

  it("any of several repositories", () => {
    expect(startLoadsOnnx(options([repository({ py: PYTHON }), repository({ onnx: ONNX_PLATFORM })]))).toBe(true);
  });

  it("explicit mode: only the models --load-model names, and none without it", () => {
    const repo = repository({ py: PYTHON, onnx: ONNX_PLATFORM });
    expect(startLoadsOnnx(options([repo], { modelControlMode: "explicit" }))).toBe(false);
    expect(startLoadsOnnx(options([repo], { modelControlMode: "explicit", loadModels: ["py"] }))).toBe(false);
    expect(startLoadsOnnx(options([repo], { modelControlMode: "explicit", loadModels: ["onnx"] }))).toBe(true);
    expect(startLoadsOnnx(options([repo], { modelControlMode: "explicit", loadModels: ["*"] }))).toBe(true);
  });

  it("--model-config-name's config is the one read", () => {
    const repo = repository({ m: PYTHON });
    mkdirSync(join(repo, "m", "configs"));
    writeFileSync(join(repo, "m", "configs", "cpu.pbtxt"), 'platform: "onnxruntime_onnx"');
    expect(startLoadsOnnx(options([repo]))).toBe(false);
    expect(startLoadsOnnx(options([repo], { modelConfigName: "cpu" }))).toBe(true);
  });

  it("object-storage repositories and missing folders are not looked into", () => {
    expect(startLoadsOnnx(options(["s3://bucket/models", "gs://bucket/models"]))).toBe(false);
    expect(startLoadsOnnx(options([join(tmpdir(), "nereid-no-such-repository")]))).toBe(false);
  });
});

describe("onnxLibrarySetting", () => {
  it("names the library the load would use: ONNX Runtime's own setting first, else one given without a backend", () => {
    const parsed = (...flags: string[]) => {
      const p = parseArgs(["--model-repository=/m", ...flags]);
      if (p.kind !== "run") throw new Error(p.kind);
      return onnxLibrarySetting(p.options);
    };
    expect(parsed("--backend-config=library=/opt/a.so")).toBe("/opt/a.so");
    expect(parsed("--backend-config=library=/opt/a.so", "--backend-config=onnxruntime,library=/opt/b.so")).toBe("/opt/b.so");
    expect(parsed("--backend-config=openvino,library=/opt/c.so")).toBeUndefined();
    expect(parsed()).toBeUndefined();
  });
});
