/**
 * The example text-generation model (issue #35): a byte-level BPE tokenizer learnt from a
 * small built-in corpus, and a tiny decoder-only transformer with a KV cache as ONNX, both
 * made here, deterministically, by scripts/make-models.ts. The weights are seeded random
 * except a bigram head counted from the same corpus (logits += log P(next | this token)),
 * so greedy output is words from the corpus rather than random bytes. The pipeline is the
 * point, not the prose: see docs/models/text-generation.md.
 *
 * Graph (opset 13; b = batch, s = new tokens, p = cached tokens, T = p + s):
 *   in   input_ids INT64 [b, s], attention_mask INT64 [b, T], position_ids INT64 [b, s],
 *        past_key_values.<l>.key / .value FP32 [b, HEADS, p, HEAD_DIM] for each layer l
 *   out  logits FP32 [b, s, vocab], present.<l>.key / .value FP32 [b, HEADS, T, HEAD_DIM]
 * Query i attends to key j when j <= position_ids[i] and attention_mask[j] is 1 (keys are
 * numbered by their place in the cache, so positions must be 0.. with no left padding).
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { ElemType, valueInfo, node, initializer, encodeModel, mulberry32 } from "./onnx-builder.ts";

export const LAYERS = 2;
export const HEADS = 2;
export const HEAD_DIM = 32;
export const D_MODEL = HEADS * HEAD_DIM;
export const FFN = 128;
export const MAX_POSITIONS = 256;
export const MERGES = 120;
export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** ChatML, as SmolLM's and Qwen's tokenizer_config.json write it. */
export const CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const chat = (user: string, assistant: string) => `<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n${assistant}<|im_end|>\n`;

/** What the tokenizer's merges and the bigram head are learnt from. */
export const CORPUS = [
  chat("What is Nereid?", "Nereid is a small inference server that speaks the Triton protocol."),
  chat("Hello!", "Hello! I am a tiny language model with random weights, so my answers are short."),
  chat("What can you do?", "I can stream tokens over HTTP and gRPC, one response per token."),
  chat("Who made you?", "A script made me at build time, with a tokenizer and a model of my own."),
  chat("Tell me about Triton.", "Triton serves models over HTTP and gRPC, and so does Nereid."),
  "Nereid is a Triton compatible inference server written in TypeScript.\n",
  "The server runs models in the model repository, one folder per model.\n",
  "A decoupled model sends one response per token, then a final flag.\n",
  "The tokenizer splits text into tokens, and the model predicts the next token.\n",
  "Each step reads the key and value cache, and writes it back one token longer.\n",
  "<|endoftext|>",
].join("");

/** GPT-2's byte → printable character map (what ByteLevel pre-tokenizers and decoders use). */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) map[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + extra++);
  return map;
}

/** GPT-2's pre-tokenizer split (the ByteLevel pre-tokenizer's `use_regex`). */
const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** Byte-level BPE merges learnt from the corpus (its text between special tokens), most frequent pair first, ties by name. */
export function learnMerges(corpus: string, count: number): [string, string][] {
  const byteChar = bytesToUnicode();
  const enc = new TextEncoder();
  const words = new Map<string, number>();
  const specials = new RegExp(SPECIAL_TOKENS.map((t) => t.replace(/[|]/g, "\\|")).join("|"), "g");
  for (const piece of corpus.split(specials)) {
    for (const w of piece.match(GPT2_SPLIT) ?? []) {
      const mapped = [...enc.encode(w)].map((b) => byteChar[b]!).join("\u0000");
      words.set(mapped, (words.get(mapped) ?? 0) + 1);
    }
  }
  let split = [...words].map(([w, n]) => ({ symbols: w.split("\u0000"), n }));
  const merges: [string, string][] = [];
  while (merges.length < count) {
    const pairs = new Map<string, number>();
    for (const { symbols, n } of split) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]}\u0000${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    }
    let best: string | undefined;
    let bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== undefined && k < best)) [best, bestN] = [k, n];
    if (best === undefined) break;
    const [a, b] = best.split("\u0000") as [string, string];
    merges.push([a, b]);
    split = split.map(({ symbols, n }) => {
      const out: string[] = [];
      for (let i = 0; i < symbols.length; i++) {
        if (symbols[i] === a && symbols[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(symbols[i]!);
      }
      return { symbols: out, n };
    });
  }
  return merges;
}

export interface TinyTokenizerFiles {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** tokenizer.json (Hugging Face's format: byte-level BPE, GPT-2 style) and tokenizer_config.json (with the chat template). */
export function tinyLmTokenizer(): TinyTokenizerFiles {
  const vocab: Record<string, number> = {};
  for (const c of bytesToUnicode()) vocab[c] = Object.keys(vocab).length;
  const merges = learnMerges(CORPUS, MERGES);
  for (const [a, b] of merges) vocab[a + b] ??= Object.keys(vocab).length;
  const added = SPECIAL_TOKENS.map((content) => ({
    id: (vocab[content] = Object.keys(vocab).length),
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: { ...byteLevel, trim_offsets: false },
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const config = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...t }) => [String(id), t])),
    bos_token: null,
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: "<|im_end|>",
    model_max_length: MAX_POSITIONS,
    pad_token: "<|endoftext|>",
    tokenizer_class: "PreTrainedTokenizerFast",
    unk_token: null,
  };
  return { tokenizer, config };
}

/** The ONNX causal LM for `files`' vocabulary. */
export function tinyLmModel(files: TinyTokenizerFiles = tinyLmTokenizer()): Uint8Array {
  const vocab = Object.keys((files.tokenizer.model as { vocab: object }).vocab).length;
  const rand = mulberry32(35);
  const inits: ReturnType<typeof initializer>[] = [];
  const weight = (name: string, dims: number[], bound: number) => {
    const w = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < w.length; i++) w[i] = (rand() * 2 - 1) * bound;
    inits.push(initializer(name, ElemType.FLOAT, dims, new Uint8Array(w.buffer)));
    return name;
  };
  const constant = (name: string, elem: number, dims: number[], values: Float32Array | BigInt64Array) => {
    inits.push(initializer(name, elem, dims, new Uint8Array(values.buffer)));
    return name;
  };
  const f32 = (name: string, v: number) => constant(name, ElemType.FLOAT, [], Float32Array.of(v));
  const i64 = (name: string, values: number[]) => constant(name, ElemType.INT64, [values.length], BigInt64Array.from(values.map(BigInt)));
  const nodes: ReturnType<typeof node>[] = [];
  const op = (type: string, inputs: string[], output: string, attrs: Record<string, number | number[]> = {}) => {
    nodes.push(node(type, inputs, [output], attrs));
    return output;
  };
  const unit = 1 / Math.sqrt(D_MODEL);
  f32("eps", 1e-5);
  f32("scale", 1 / Math.sqrt(HEAD_DIM));
  f32("masked", -1e9);
  i64("heads_shape", [0, 0, HEADS, HEAD_DIM]);
  i64("model_shape", [0, 0, D_MODEL]);

  /** RMSNorm with a gain: x / sqrt(mean(x²) + eps) · g. */
  const rmsNorm = (x: string, name: string) => {
    const gain = new Float32Array(D_MODEL);
    for (let i = 0; i < D_MODEL; i++) gain[i] = 1 + (rand() * 2 - 1) * 0.1;
    constant(`${name}.gain`, ElemType.FLOAT, [D_MODEL], gain);
    const ms = op("ReduceMean", [op("Mul", [x, x], `${name}.sq`)], `${name}.ms`, { axes: [-1], keepdims: 1 });
    const rms = op("Sqrt", [op("Add", [ms, "eps"], `${name}.ms_eps`)], `${name}.rms`);
    return op("Mul", [op("Div", [x, rms], `${name}.unit`), `${name}.gain`], `${name}.out`);
  };
  /** [b, s, D_MODEL] → [b, HEADS, s, HEAD_DIM]. */
  const splitHeads = (x: string) => op("Transpose", [op("Reshape", [x, "heads_shape"], `${x}.heads`)], `${x}.bhsd`, { perm: [0, 2, 1, 3] });

  const tok = weight("embed_tokens", [vocab, D_MODEL], 1);
  const pos = weight("embed_positions", [MAX_POSITIONS, D_MODEL], 0.5);
  let x = op("Add", [op("Gather", [tok, "input_ids"], "tok_emb"), op("Gather", [pos, "position_ids"], "pos_emb")], "h0");

  // The mask, shared by the layers: [b, 1, s, T], true where a query may see a key.
  constant("zero_scalar", ElemType.INT64, [], BigInt64Array.of(0n));
  constant("one_scalar", ElemType.INT64, [], BigInt64Array.of(1n));
  i64("query_axes", [1, 3]);
  i64("mask_axes", [1, 2]);
  const keyCount = op("Gather", [op("Shape", ["attention_mask"], "mask_shape"), "one_scalar"], "key_count");
  const keyPos = op("Range", ["zero_scalar", keyCount, "one_scalar"], "key_pos");
  const queryPos = op("Unsqueeze", ["position_ids", "query_axes"], "query_pos");
  const causal = op("LessOrEqual", [keyPos, queryPos], "causal");
  const padding = op("Cast", [op("Unsqueeze", ["attention_mask", "mask_axes"], "mask_b11t")], "mask_bool", { to: ElemType.BOOL });
  const mask = op("And", [causal, padding], "mask");

  const inputs = [
    valueInfo("input_ids", ElemType.INT64, ["batch", "sequence"]),
    valueInfo("attention_mask", ElemType.INT64, ["batch", "total_sequence"]),
    valueInfo("position_ids", ElemType.INT64, ["batch", "sequence"]),
  ];
  const outputs = [valueInfo("logits", ElemType.FLOAT, ["batch", "sequence", vocab])];
  for (let l = 0; l < LAYERS; l++) {
    const p = `layers.${l}`;
    for (const kv of ["key", "value"]) {
      inputs.push(valueInfo(`past_key_values.${l}.${kv}`, ElemType.FLOAT, ["batch", HEADS, "past_sequence", HEAD_DIM]));
      outputs.push(valueInfo(`present.${l}.${kv}`, ElemType.FLOAT, ["batch", HEADS, "total_sequence", HEAD_DIM]));
    }
    const h = rmsNorm(x, `${p}.attn_norm`);
    const q = splitHeads(op("MatMul", [h, weight(`${p}.q_proj`, [D_MODEL, D_MODEL], unit)], `${p}.q`));
    const k = splitHeads(op("MatMul", [h, weight(`${p}.k_proj`, [D_MODEL, D_MODEL], unit)], `${p}.k`));
    const v = splitHeads(op("MatMul", [h, weight(`${p}.v_proj`, [D_MODEL, D_MODEL], unit)], `${p}.v`));
    const keys = op("Concat", [`past_key_values.${l}.key`, k], `present.${l}.key`, { axis: 2 });
    const values = op("Concat", [`past_key_values.${l}.value`, v], `present.${l}.value`, { axis: 2 });
    const scores = op("Mul", [op("MatMul", [q, op("Transpose", [keys], `${p}.keys_t`, { perm: [0, 1, 3, 2] })], `${p}.qk`), "scale"], `${p}.scores`);
    const probs = op("Softmax", [op("Where", [mask, scores, "masked"], `${p}.masked`)], `${p}.probs`, { axis: -1 });
    const attn = op(
      "Reshape",
      [op("Transpose", [op("MatMul", [probs, values], `${p}.ctx`)], `${p}.ctx_t`, { perm: [0, 2, 1, 3] }), "model_shape"],
      `${p}.ctx_m`,
    );
    x = op("Add", [x, op("MatMul", [attn, weight(`${p}.o_proj`, [D_MODEL, D_MODEL], unit)], `${p}.attn_out`)], `${p}.h_attn`);
    const g = op("MatMul", [rmsNorm(x, `${p}.mlp_norm`), weight(`${p}.up_proj`, [D_MODEL, FFN], unit)], `${p}.up`);
    const silu = op("Mul", [g, op("Sigmoid", [g], `${p}.gate`)], `${p}.silu`);
    x = op("Add", [x, op("MatMul", [silu, weight(`${p}.down_proj`, [FFN, D_MODEL], 1 / Math.sqrt(FFN))], `${p}.mlp_out`)], `${p}.h_out`);
  }
  const lm = op("MatMul", [rmsNorm(x, "final_norm"), weight("lm_head", [D_MODEL, vocab], unit)], "lm_logits");
  constant("bigram", ElemType.FLOAT, [vocab, vocab], bigramLogProbs(files, vocab));
  op("Add", [lm, op("Gather", ["bigram", "input_ids"], "bigram_logits")], "logits");
  return encodeModel({ name: "tiny_lm_step", inputs, outputs, nodes, initializers: inits });
}

/**
 * log P(next | token), counted over the corpus as the tokenizer splits it, add-0.01
 * smoothed; `<|im_start|>` and `<|endoftext|>` are never predicted (-20), so the model
 * does not open a turn of its own.
 */
function bigramLogProbs(files: TinyTokenizerFiles, vocab: number): Float32Array {
  const tok = new Tokenizer(files.tokenizer, files.config);
  const ids = tok.encode(CORPUS, { add_special_tokens: false }).ids;
  const counts = new Float64Array(vocab * vocab);
  for (let i = 0; i + 1 < ids.length; i++) counts[ids[i]! * vocab + ids[i + 1]!]! += 1;
  const never = ["<|im_start|>", "<|endoftext|>"].map((t) => tok.token_to_id(t)!);
  const out = new Float32Array(vocab * vocab);
  for (let a = 0; a < vocab; a++) {
    let total = 0;
    for (let b = 0; b < vocab; b++) total += counts[a * vocab + b]! + 0.01;
    for (let b = 0; b < vocab; b++) out[a * vocab + b] = never.includes(b) ? -20 : Math.log((counts[a * vocab + b]! + 0.01) / total);
  }
  return out;
}
