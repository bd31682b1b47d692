/**
 * @module tiny_lm's request handling, apart from the model: the request's settings (Triton's
 * LLM inputs, TensorRT-LLM style tensors or vLLM style `sampling_parameters`), the sampler
 * (greedy at temperature 0, else seeded temperature / top-k / top-p sampling with OpenAI's
 * presence and frequency penalties) and the text stream (what each token adds to the text,
 * holding back incomplete UTF-8 and what may be the start of a stop string).
 */
import type { Tensor } from "../../../src/backends/typescript/api.ts";

export class InputError extends Error {
  readonly code = "INVALID_ARG";
}

export interface Settings {
  prompt: string;
  stream: boolean;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** 0: off. */
  topK: number;
  seed: bigint;
  stop: string[];
  frequencyPenalty: number;
  presencePenalty: number;
  ignoreEos: boolean;
  /** No EOS and no stop string before this many tokens (vLLM's min_tokens). */
  minTokens: number;
  /** Added to the logit of each token id (OpenAI's logit_bias). */
  logitBias: Map<number, number>;
  /** The prompt is put before the generated text (streaming: before the first response's) unless this is true. */
  excludeInput: boolean;
  returnInputTokens: boolean;
  returnOutputTokens: boolean;
  /** The final response says why the generation ended (the vLLM backend's `finish_reason` output). */
  returnFinishReason: boolean;
}

export const DEFAULTS = { maxTokens: 16, temperature: 1, topP: 1, topK: 0, seed: 0n } as const;

/** The keys `sampling_parameters` may hold (vLLM's names), and what each sets. */
const SAMPLING_KEYS = [
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "seed",
  "stop",
  "frequency_penalty",
  "presence_penalty",
  "ignore_eos",
  "min_tokens",
  "logit_bias",
  "n",
  "best_of",
] as const;

/** One element of an optional input, as a number, bigint or boolean; undefined when absent. */
function scalar(t: Tensor | undefined): number | bigint | boolean | undefined {
  if (!t) return undefined;
  const data = t.data as ArrayLike<number | bigint>;
  if (data.length !== 1) throw new InputError(`tiny_lm: input '${t.name}' must hold one element, it holds ${data.length}`);
  const v = data[0]!;
  return t.datatype === "BOOL" ? v !== 0 : v;
}

function text(t: Tensor): string[] {
  return (t.data as Uint8Array[]).map((b) => {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(b);
    } catch {
      throw new InputError(`tiny_lm: input '${t.name}' is not valid UTF-8`);
    }
  });
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new InputError(`tiny_lm: ${message}`);
}

/** The sampling_parameters JSON as the same fields the tensors set. */
function samplingParameters(json: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    throw new InputError(`tiny_lm: sampling_parameters is not JSON: ${(err as Error).message}`);
  }
  check(typeof doc === "object" && doc !== null && !Array.isArray(doc), "sampling_parameters must be a JSON object");
  const params = doc as Record<string, unknown>;
  for (const key of Object.keys(params)) {
    check(
      (SAMPLING_KEYS as readonly string[]).includes(key),
      `sampling parameter ${JSON.stringify(key)} is not supported (supported: ${SAMPLING_KEYS.join(", ")})`,
    );
  }
  for (const key of ["n", "best_of"]) check(params[key] === undefined || params[key] === 1, `sampling parameter '${key}' must be 1`);
  return params;
}

function num(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === "bigint") return Number(v);
  check(typeof v === "number" && Number.isFinite(v), `'${name}' must be a finite number`);
  return v as number;
}

/**
 * The request's settings; `input(name)` gives an input tensor or undefined.
 * `excludeInputByDefault` is the config's `exclude_input_in_output` parameter, the default
 * when the request sends no such input (as TensorRT-LLM's model config sets it).
 */
export function parseSettings(input: (name: string) => Tensor | undefined, excludeInputByDefault = false): Settings {
  const prompt = input("text_input");
  check(prompt !== undefined, "input 'text_input' is required");
  const prompts = text(prompt!);
  check(prompts.length === 1, `input 'text_input' must hold one string, it holds ${prompts.length}`);
  const sp = input("sampling_parameters");
  const params = sp ? samplingParameters(text(sp).join("")) : {};
  // A tensor wins over the same setting in sampling_parameters.
  const pick = (tensor: string, key: string) => scalar(input(tensor)) ?? params[key];

  const maxTokens = num(pick("max_tokens", "max_tokens"), "max_tokens") ?? DEFAULTS.maxTokens;
  check(Number.isInteger(maxTokens) && maxTokens >= 1, `'max_tokens' must be an integer of at least 1, got ${maxTokens}`);
  const temperature = num(pick("temperature", "temperature"), "temperature") ?? DEFAULTS.temperature;
  check(temperature >= 0, `'temperature' must be at least 0, got ${temperature}`);
  const topP = num(pick("top_p", "top_p"), "top_p") ?? DEFAULTS.topP;
  check(topP > 0 && topP <= 1, `'top_p' must be in (0, 1], got ${topP}`);
  const topK = num(pick("top_k", "top_k"), "top_k") ?? DEFAULTS.topK;
  check(Number.isInteger(topK) && topK >= -1, `'top_k' must be an integer of at least -1 (-1 and 0: off), got ${topK}`);
  const penalty = (name: string) => {
    const v = num(pick(name, name), name) ?? 0;
    check(v >= -2 && v <= 2, `'${name}' must be in [-2, 2], got ${v}`);
    return v;
  };
  const seedValue = pick("seed", "seed");
  let seed: bigint = DEFAULTS.seed;
  if (typeof seedValue === "bigint") seed = seedValue;
  else if (seedValue !== undefined) {
    check(typeof seedValue === "number" && Number.isInteger(seedValue), "'seed' must be an integer");
    seed = BigInt(seedValue as number);
  }
  const stopTensor = input("stop_words");
  const stopParam = params.stop;
  let stop: string[] = [];
  if (stopTensor) stop = text(stopTensor);
  else if (typeof stopParam === "string") stop = [stopParam];
  else if (stopParam !== undefined) {
    check(Array.isArray(stopParam) && stopParam.every((s) => typeof s === "string"), "'stop' must be a string or a list of strings");
    stop = stopParam as string[];
  }
  check(
    stop.every((s) => s.length > 0),
    "stop strings must not be empty",
  );
  const ignoreEos = params.ignore_eos;
  check(ignoreEos === undefined || typeof ignoreEos === "boolean", "'ignore_eos' must be a boolean");
  const minTokens = num(params.min_tokens, "min_tokens") ?? 0;
  check(
    Number.isInteger(minTokens) && minTokens >= 0 && minTokens <= maxTokens,
    `'min_tokens' must be an integer from 0 to max_tokens (${maxTokens}), got ${minTokens}`,
  );
  const bias = params.logit_bias ?? {};
  check(typeof bias === "object" && bias !== null && !Array.isArray(bias), "'logit_bias' must be an object of token id → bias");
  const logitBias = new Map<number, number>();
  for (const [id, b] of Object.entries(bias as object)) {
    check(/^(0|[1-9][0-9]*)$/.test(id), `'logit_bias' key ${JSON.stringify(id)} is not a token id`);
    check(typeof b === "number" && b >= -100 && b <= 100, `'logit_bias' for token ${id} must be a number in [-100, 100]`);
    logitBias.set(Number(id), b as number);
  }
  const flag = (name: string, byDefault = false) => {
    const v = scalar(input(name));
    return v === undefined ? byDefault : v === true;
  };
  return {
    prompt: prompts[0]!,
    stream: flag("stream"),
    maxTokens,
    temperature,
    topP,
    topK: Math.max(0, topK),
    seed: BigInt.asUintN(64, seed),
    stop,
    frequencyPenalty: penalty("frequency_penalty"),
    presencePenalty: penalty("presence_penalty"),
    ignoreEos: ignoreEos === true,
    minTokens,
    logitBias,
    excludeInput: flag("exclude_input_in_output", excludeInputByDefault),
    returnInputTokens: flag("return_num_input_tokens"),
    returnOutputTokens: flag("return_num_output_tokens"),
    returnFinishReason: flag("return_finish_reason"),
  };
}

/** A 64-bit seeded generator (SplitMix64), uniform in [0, 1). */
export class Random {
  #state: bigint;
  constructor(seed: bigint) {
    this.#state = BigInt.asUintN(64, seed);
  }
  next(): number {
    this.#state = BigInt.asUintN(64, this.#state + 0x9e3779b97f4a7c15n);
    let z = this.#state;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    return Number(z >> 11n) / 2 ** 53;
  }
}

/** Picks each next token from one position's logits. */
export class Sampler {
  readonly #s: Settings;
  readonly #random: Random;
  /** How often each token was generated so far (for the penalties). */
  readonly #counts = new Map<number, number>();

  constructor(settings: Settings) {
    this.#s = settings;
    this.#random = new Random(settings.seed);
  }

  /** The next token from `logits`; `banned` tokens (EOS before min_tokens) are never picked. */
  pick(logits: Float32Array, banned: readonly number[] = []): number {
    const s = this.#s;
    const l = Float64Array.from(logits);
    for (const [t, b] of s.logitBias) if (t < l.length) l[t] = l[t]! + b;
    for (const t of banned) if (t < l.length) l[t] = Number.NEGATIVE_INFINITY;
    for (const [t, n] of this.#counts) l[t] = l[t]! - s.presencePenalty - s.frequencyPenalty * n;
    let token = 0;
    if (s.temperature === 0) {
      for (let i = 1; i < l.length; i++) if (l[i]! > l[token]!) token = i;
    } else token = this.#sample(l);
    this.#counts.set(token, (this.#counts.get(token) ?? 0) + 1);
    return token;
  }

  #sample(l: Float64Array): number {
    const s = this.#s;
    // Candidates by logit, highest first (ties: lower id first), cut to top_k.
    let order = Array.from(l.keys()).sort((a, b) => l[b]! - l[a]! || a - b);
    if (s.topK > 0) order = order.slice(0, s.topK);
    const max = l[order[0]!]!;
    const p = order.map((t) => Math.exp((l[t]! - max) / s.temperature));
    const total = p.reduce((a, b) => a + b, 0);
    // The smallest head of the list whose probability reaches top_p.
    let keep = 0;
    for (let acc = 0; keep < p.length && (keep === 0 || acc < s.topP * total); keep++) acc += p[keep]!;
    const kept = p.slice(0, keep).reduce((a, b) => a + b, 0);
    let r = this.#random.next() * kept;
    for (let i = 0; i < keep; i++) {
      r -= p[i]!;
      if (r < 0) return order[i]!;
    }
    return order[keep - 1]!;
  }
}

/**
 * The generated text as tokens arrive: `push(fullText)` takes the decoding of every
 * generated token so far and answers the text newly safe to send, and whether a stop
 * string was reached (the text then ends before it). `finish()` releases the rest.
 */
export class TextStream {
  readonly #stop: string[];
  #text = "";
  #sent = 0;
  stopped = false;

  constructor(stop: string[]) {
    this.#stop = stop;
  }

  /** `stops` false (before min_tokens): no stop string is looked for or held back. */
  push(full: string, stops = true): string {
    if (this.stopped) return "";
    const stop = stops ? this.#stop : [];
    let cut = -1;
    for (const s of stop) {
      const at = full.indexOf(s, Math.max(0, this.#sent - s.length + 1));
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      // Text already sent stays sent (a stop string can only straddle it after min_tokens).
      this.#text = full.slice(0, Math.max(cut, this.#sent));
      return this.finish();
    }
    this.#text = full;
    // Hold back an incomplete UTF-8 sequence (decoded as U+FFFD) and a possible stop string's start.
    let safe = full.length;
    while (safe > this.#sent && full[safe - 1] === "\uFFFD") safe--;
    let hold = 0;
    for (const s of stop) {
      for (let k = Math.min(s.length - 1, safe - this.#sent); k > hold; k--) {
        if (full.endsWith(s.slice(0, k), safe)) {
          hold = k;
          break;
        }
      }
    }
    safe -= hold;
    const out = full.slice(this.#sent, Math.max(this.#sent, safe));
    this.#sent += out.length;
    return out;
  }

  finish(): string {
    const out = this.#text.slice(this.#sent);
    this.#sent = this.#text.length;
    return out;
  }

  get text(): string {
    return this.#text;
  }
}
