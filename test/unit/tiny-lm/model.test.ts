/**
 * tiny_lm's tokenizer and ONNX causal LM as scripts/lib/tiny-lm.ts makes them (#35 item 2):
 * the tokenizer is a real Hugging Face tokenizer.json (@huggingface/tokenizers reads it,
 * with ChatML's special tokens, and the chat template renders with @huggingface/jinja), and
 * the graph is the transformer it claims to be: its logits equal a plain TypeScript
 * forward pass over its own initializers, and running it token by token with the KV cache
 * gives the same logits as running the whole sequence at once.
 */
import { describe, it, expect, beforeAll } from "vitest";
import * as ort from "onnxruntime-node";
import onnxProto from "onnx-proto";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import { CORPUS, D_MODEL, FFN, HEADS, HEAD_DIM, LAYERS, tinyLmModel, tinyLmTokenizer, type TinyTokenizerFiles } from "../../../scripts/lib/tiny-lm.ts";

// onnxruntime-node's ONNX Runtime (the reference here) reads this with getenv when it starts: its telemetry stays off, as the server's does.
process.env.ORT_DISABLE_TELEMETRY ??= "1";

const { onnx } = onnxProto;

let files: TinyTokenizerFiles;
let tok: Tokenizer;
let bytes: Uint8Array;
let session: ort.InferenceSession;
let vocab: number;

beforeAll(async () => {
  files = tinyLmTokenizer();
  tok = new Tokenizer(files.tokenizer, files.config);
  bytes = tinyLmModel(files);
  session = await ort.InferenceSession.create(bytes);
  vocab = Object.keys((files.tokenizer.model as { vocab: object }).vocab).length;
});

type Feeds = Record<string, ort.Tensor>;
const i64 = (v: number[], dims: number[]) => new ort.Tensor("int64", BigInt64Array.from(v.map(BigInt)), dims);

/** One run on `ids` after `past` (present.* of the last run, or none). */
async function run(ids: number[], pastLength: number, past?: ort.InferenceSession.OnnxValueMapType) {
  const feeds: Feeds = {
    input_ids: i64(ids, [1, ids.length]),
    attention_mask: i64(new Array(pastLength + ids.length).fill(1), [1, pastLength + ids.length]),
    position_ids: i64(
      ids.map((_, i) => pastLength + i),
      [1, ids.length],
    ),
  };
  for (let l = 0; l < LAYERS; l++) {
    for (const kv of ["key", "value"]) {
      feeds[`past_key_values.${l}.${kv}`] =
        (past?.[`present.${l}.${kv}`] as ort.Tensor) ?? new ort.Tensor("float32", new Float32Array(0), [1, HEADS, 0, HEAD_DIM]);
    }
  }
  return session.run(feeds);
}

/** Logits [n, vocab] by a plain forward pass over the model's initializers. */
function reference(ids: number[]): Float32Array[] {
  const w = new Map(onnx.ModelProto.decode(bytes).graph!.initializer!.map((t) => [t.name!, new Float32Array(new Uint8Array(t.rawData!).slice().buffer)]));
  const W = (name: string) => w.get(name)!;
  const matmul = (x: Float64Array, m: Float32Array, cols: number) => {
    const out = new Float64Array(cols);
    for (let i = 0; i < x.length; i++) for (let j = 0; j < cols; j++) out[j]! += x[i]! * m[i * cols + j]!;
    return out;
  };
  const rms = (x: Float64Array, gain: Float32Array) => {
    const r = Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length + 1e-5);
    return x.map((v, i) => (v / r) * gain[i]!);
  };
  const add = (a: Float64Array, b: Float64Array) => a.map((v, i) => v + b[i]!);
  let xs = ids.map((id, t) => Float64Array.from({ length: D_MODEL }, (_, i) => W("embed_tokens")[id * D_MODEL + i]! + W("embed_positions")[t * D_MODEL + i]!));
  for (let l = 0; l < LAYERS; l++) {
    const p = `layers.${l}`;
    const h = xs.map((x) => rms(x, W(`${p}.attn_norm.gain`)));
    const [q, k, v] = ["q", "k", "v"].map((n) => h.map((x) => matmul(x, W(`${p}.${n}_proj`), D_MODEL)));
    const ctx = xs.map((_, t) => {
      const out = new Float64Array(D_MODEL);
      for (let hd = 0; hd < HEADS; hd++) {
        const o = hd * HEAD_DIM;
        const scores = Array.from({ length: t + 1 }, (_, j) => {
          let s = 0;
          for (let d = 0; d < HEAD_DIM; d++) s += q![t]![o + d]! * k![j]![o + d]!;
          return s / Math.sqrt(HEAD_DIM);
        });
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++) for (let d = 0; d < HEAD_DIM; d++) out[o + d]! += (e[j]! / sum) * v![j]![o + d]!;
      }
      return out;
    });
    xs = xs.map((x, t) => add(x, matmul(ctx[t]!, W(`${p}.o_proj`), D_MODEL)));
    xs = xs.map((x) => {
      const up = matmul(rms(x, W(`${p}.mlp_norm.gain`)), W(`${p}.up_proj`), FFN);
      return add(
        x,
        matmul(
          up.map((g) => g / (1 + Math.exp(-g))),
          W(`${p}.down_proj`),
          D_MODEL,
        ),
      );
    });
  }
  return xs.map((x, t) => {
    const logits = matmul(rms(x, W("final_norm.gain")), W("lm_head"), vocab);
    return Float32Array.from(logits, (v, j) => v + W("bigram")[ids[t]! * vocab + j]!);
  });
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const CHAT = "<|im_start|>user\nWhat is Nereid?<|im_end|>\n<|im_start|>assistant\n";

describe("tiny_lm tokenizer", () => {
  it("round-trips text through @huggingface/tokenizers, non-ASCII included, and merges the corpus's common pieces", () => {
    for (const text of [CORPUS, "héllo wörld ✓ 日本", "  two  spaces\tand a tab\n"]) {
      expect(tok.decode(tok.encode(text, { add_special_tokens: false }).ids)).toBe(text);
    }
    expect(tok.tokenize(" the model")).toEqual(["Ġthe", "Ġmodel"]);
    expect(tok.encode("é", { add_special_tokens: false }).ids).toEqual([0xc3, 0xa9]);
  });

  it("special tokens are one id each and are skipped when decoding for text", () => {
    const ids = tok.encode(CHAT, { add_special_tokens: false }).ids;
    expect(ids.filter((id) => id >= vocab - 3)).toEqual([vocab - 2, vocab - 1, vocab - 2]);
    expect(tok.decode(ids, { skip_special_tokens: true })).toBe("user\nWhat is Nereid?\nassistant\n");
  });

  it("the chat template (tokenizer_config.json) renders ChatML with @huggingface/jinja", () => {
    const text = new Template(files.config.chat_template as string).render({
      messages: [{ role: "user", content: "What is Nereid?" }],
      add_generation_prompt: true,
    });
    expect(text).toBe(CHAT);
  });
});

describe("tiny_lm_step (ONNX Runtime via onnxruntime-node)", () => {
  it("its logits are a plain transformer's over its own weights (2 layers, RMSNorm, causal attention, SiLU MLP, bigram head)", async () => {
    const ids = tok.encode("The model reads the cache", { add_special_tokens: false }).ids;
    const out = await run(ids, 0);
    const logits = out.logits!.data as Float32Array;
    const ref = reference(ids);
    for (let t = 0; t < ids.length; t++) expect(maxDiff(logits.subarray(t * vocab, (t + 1) * vocab), ref[t]!), `position ${t}`).toBeLessThan(1e-3);
  });

  it("token by token with the KV cache gives the logits of the whole sequence at once, and the cache grows by one per step", async () => {
    const ids = tok.encode(CHAT + "Nereid is a small server", { add_special_tokens: false }).ids;
    const whole = (await run(ids, 0)).logits!.data as Float32Array;
    const split = 5;
    let out = await run(ids.slice(0, split), 0);
    expect(maxDiff(out.logits!.data as Float32Array, whole.subarray(0, split * vocab))).toBeLessThan(1e-4);
    for (let t = split; t < ids.length; t++) {
      out = await run([ids[t]!], t, out);
      expect(out["present.1.value"]!.dims).toEqual([1, HEADS, t + 1, HEAD_DIM]);
      expect(maxDiff(out.logits!.data as Float32Array, whole.subarray(t * vocab, (t + 1) * vocab)), `position ${t}`).toBeLessThan(1e-4);
    }
  });

  it("is causal (later tokens do not change earlier logits) and attends to context beyond the last token", async () => {
    const a = tok.encode("Nereid serves the model", { add_special_tokens: false }).ids;
    const b = [...a.slice(0, -2), a.at(-2)! === 0 ? 1 : 0, a.at(-1)!];
    const la = (await run(a, 0)).logits!.data as Float32Array;
    const lb = (await run(b, 0)).logits!.data as Float32Array;
    const n = a.length;
    expect(maxDiff(la.subarray(0, (n - 2) * vocab), lb.subarray(0, (n - 2) * vocab))).toBe(0);
    // Same last token, another token before it: the last position's logits move.
    expect(maxDiff(la.subarray((n - 1) * vocab), lb.subarray((n - 1) * vocab))).toBeGreaterThan(0.01);
  });
});
