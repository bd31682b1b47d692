/**
 * tiny_lm's request handling (model_repository/tiny_lm/1/generation.ts, #35 item 2): the
 * settings from Triton's LLM inputs in both forms Triton's OpenAI frontend sends
 * (TensorRT-LLM style tensors, vLLM style sampling_parameters), the seeded sampler and the
 * text stream's hold-back of incomplete UTF-8 and stop strings.
 */
import { describe, it, expect } from "vitest";
import { DEFAULTS, InputError, Random, Sampler, TextStream, parseSettings, type Settings } from "../../../model_repository/tiny_lm/1/generation.ts";
import type { Tensor } from "../../../src/backends/typescript/api.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const bytes = (name: string, ...v: string[]): Tensor => ({ name, datatype: "BYTES", shape: [1, v.length], data: v.map(enc) });
const bool = (name: string, v: boolean): Tensor => ({ name, datatype: "BOOL", shape: [1, 1], data: Uint8Array.of(v ? 1 : 0) });
const int = (name: string, v: number): Tensor => ({ name, datatype: "INT32", shape: [1, 1], data: Int32Array.of(v) });
const fp = (name: string, v: number): Tensor => ({ name, datatype: "FP32", shape: [1, 1], data: Float32Array.of(v) });

function settings(...tensors: Tensor[]): Settings {
  return parseSettings((name) => tensors.find((t) => t.name === name));
}
function fails(message: string | RegExp, ...tensors: Tensor[]): void {
  let err: unknown;
  try {
    settings(...tensors);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(InputError);
  expect((err as InputError).code).toBe("INVALID_ARG");
  expect((err as Error).message).toMatch(message);
}

const BASE: Settings = {
  prompt: "Hi",
  stream: false,
  maxTokens: 16,
  temperature: 1,
  topP: 1,
  topK: 0,
  seed: 0n,
  stop: [],
  frequencyPenalty: 0,
  presencePenalty: 0,
  ignoreEos: false,
  minTokens: 0,
  logitBias: new Map(),
  excludeInput: false,
  returnInputTokens: false,
  returnOutputTokens: false,
  returnFinishReason: false,
};

describe("tiny_lm settings", () => {
  it("text_input alone: vLLM's and OpenAI's defaults (16 tokens, temperature 1), seed 0, not streaming, the prompt kept in the output", () => {
    expect(settings(bytes("text_input", "Hi"))).toEqual(BASE);
    expect(DEFAULTS.maxTokens).toBe(16);
  });

  it("exclude_input_in_output: the config's default applies when the request sends none, the input wins when it does", () => {
    const parse = (byDefault: boolean, ...t: Tensor[]) =>
      parseSettings((name) => [bytes("text_input", "Hi"), ...t].find((x) => x.name === name), byDefault).excludeInput;
    expect([parse(true), parse(false), parse(true, bool("exclude_input_in_output", false)), parse(false, bool("exclude_input_in_output", true))]).toEqual([
      true,
      false,
      false,
      true,
    ]);
  });

  it("TensorRT-LLM style tensors, as Triton's OpenAI frontend sends them to a non-vLLM model", () => {
    expect(
      settings(
        bytes("text_input", "Hi"),
        bool("stream", true),
        int("max_tokens", 5),
        fp("temperature", 0.5),
        fp("top_p", 0.75),
        int("top_k", 3),
        { name: "seed", datatype: "UINT64", shape: [1, 1], data: BigUint64Array.of(2n ** 64n - 1n) },
        bytes("stop_words", "\n", "END"),
        fp("frequency_penalty", 0.25),
        fp("presence_penalty", -0.5),
        bool("exclude_input_in_output", true),
        bool("return_num_input_tokens", true),
        bool("return_num_output_tokens", true),
        bool("return_finish_reason", true),
      ),
    ).toEqual({
      ...BASE,
      stream: true,
      maxTokens: 5,
      temperature: 0.5,
      topP: 0.75,
      topK: 3,
      seed: 2n ** 64n - 1n,
      stop: ["\n", "END"],
      frequencyPenalty: 0.25,
      presencePenalty: -0.5,
      excludeInput: true,
      returnInputTokens: true,
      returnOutputTokens: true,
      returnFinishReason: true,
    });
  });

  it("vLLM style sampling_parameters JSON; a tensor wins over the same key", () => {
    const json = {
      max_tokens: 7,
      temperature: 0,
      top_p: 0.5,
      top_k: -1,
      seed: 9,
      stop: "x",
      frequency_penalty: 1,
      presence_penalty: 2,
      ignore_eos: true,
      min_tokens: 2,
      logit_bias: { "5": -100, "12": 2.5 },
      n: 1,
    };
    expect(settings(bytes("text_input", "Hi"), bytes("sampling_parameters", JSON.stringify(json)), bool("exclude_input_in_output", true))).toEqual({
      ...BASE,
      maxTokens: 7,
      temperature: 0,
      topP: 0.5,
      topK: 0,
      seed: 9n,
      stop: ["x"],
      frequencyPenalty: 1,
      presencePenalty: 2,
      ignoreEos: true,
      minTokens: 2,
      logitBias: new Map([
        [5, -100],
        [12, 2.5],
      ]),
      excludeInput: true,
    });
    const both = settings(bytes("text_input", "Hi"), bytes("sampling_parameters", '{"max_tokens": 7, "stop": ["a", "b"]}'), int("max_tokens", 3));
    expect([both.maxTokens, both.stop]).toEqual([3, ["a", "b"]]);
  });

  it("bad settings are INVALID_ARG naming the setting", () => {
    fails("input 'text_input' is required");
    fails("input 'text_input' must hold one string, it holds 2", bytes("text_input", "a", "b"));
    fails("input 'text_input' is not valid UTF-8", { name: "text_input", datatype: "BYTES", shape: [1, 1], data: [Uint8Array.of(0xff)] });
    fails("'max_tokens' must be an integer of at least 1, got 0", bytes("text_input", "a"), int("max_tokens", 0));
    fails("'temperature' must be at least 0, got -1", bytes("text_input", "a"), fp("temperature", -1));
    fails("'top_p' must be in (0, 1], got 0", bytes("text_input", "a"), fp("top_p", 0));
    fails("'presence_penalty' must be in [-2, 2], got 3", bytes("text_input", "a"), fp("presence_penalty", 3));
    fails("stop strings must not be empty", bytes("text_input", "a"), bytes("stop_words", ""));
    fails(/^tiny_lm: sampling_parameters is not JSON: /, bytes("text_input", "a"), bytes("sampling_parameters", "{"));
    fails("sampling_parameters must be a JSON object", bytes("text_input", "a"), bytes("sampling_parameters", "[1]"));
    fails(
      'sampling parameter "response_format" is not supported (supported: max_tokens, temperature, top_p, top_k, seed, stop, frequency_penalty, presence_penalty, ignore_eos, min_tokens, logit_bias, n, best_of)',
      bytes("text_input", "a"),
      bytes("sampling_parameters", '{"response_format": {}}'),
    );
    fails("'min_tokens' must be an integer from 0 to max_tokens (16), got 17", bytes("text_input", "a"), bytes("sampling_parameters", '{"min_tokens": 17}'));
    fails(`'logit_bias' key "x" is not a token id`, bytes("text_input", "a"), bytes("sampling_parameters", '{"logit_bias": {"x": 1}}'));
    fails("'logit_bias' for token 3 must be a number in [-100, 100]", bytes("text_input", "a"), bytes("sampling_parameters", '{"logit_bias": {"3": 101}}'));
    fails("sampling parameter 'n' must be 1", bytes("text_input", "a"), bytes("sampling_parameters", '{"n": 2}'));
    fails("'stop' must be a string or a list of strings", bytes("text_input", "a"), bytes("sampling_parameters", '{"stop": [1]}'));
    fails("'temperature' must be a finite number", bytes("text_input", "a"), bytes("sampling_parameters", '{"temperature": "hot"}'));
    fails("input 'max_tokens' must hold one element, it holds 2", bytes("text_input", "a"), {
      name: "max_tokens",
      datatype: "INT32",
      shape: [1, 2],
      data: Int32Array.of(1, 2),
    });
  });
});

describe("tiny_lm sampler", () => {
  const sampler = (patch: Partial<Settings>) => new Sampler({ ...BASE, ...patch });

  it("SplitMix64: the reference's first output for seed 0 (0xe220a8397b1dcdaf), as 53 bits in [0, 1)", () => {
    expect(new Random(0n).next()).toBe(Number(0xe220a8397b1dcdafn >> 11n) / 2 ** 53);
  });

  it("temperature 0 is greedy: the highest logit, the lower id on a tie", () => {
    const s = sampler({ temperature: 0 });
    expect(s.pick(Float32Array.of(0, 3, 1, 3))).toBe(1);
    expect(s.pick(Float32Array.of(5, 0, 1, 0))).toBe(0);
  });

  it("logit_bias shifts logits before picking; banned tokens (EOS before min_tokens) are never picked", () => {
    const s = sampler({ temperature: 0, logitBias: new Map([[2, 1.5]]) });
    expect(s.pick(Float32Array.of(1, 0, 0))).toBe(2);
    expect(s.pick(Float32Array.of(1, 0, 0), [2])).toBe(0);
    const sampled = sampler({ seed: 3n });
    expect(new Set(Array.from({ length: 200 }, () => sampled.pick(Float32Array.of(5, 0, 0), [0])))).toEqual(new Set([1, 2]));
  });

  it("the presence penalty moves greedy decoding off a token once it was picked", () => {
    const s = sampler({ temperature: 0, presencePenalty: 2 });
    const logits = Float32Array.of(1, 0.5, 0);
    expect([s.pick(logits), s.pick(logits), s.pick(logits)]).toEqual([0, 1, 2]);
  });

  it("the same seed gives the same tokens, another seed other tokens", () => {
    const flat = new Float32Array(50);
    const draw = (seed: bigint) => {
      const s = sampler({ seed });
      return Array.from({ length: 20 }, () => s.pick(flat));
    };
    expect(draw(7n)).toEqual(draw(7n));
    expect(draw(7n)).not.toEqual(draw(8n));
  });

  it("samples by probability (0.75 / 0.25 over 4000 draws), and top_k 1 or a small top_p keep only the best token", () => {
    const logits = Float32Array.of(Math.log(3), 0);
    const s = sampler({ seed: 1n });
    let zeros = 0;
    for (let i = 0; i < 4000; i++) if (s.pick(logits) === 0) zeros++;
    expect(zeros / 4000).toBeGreaterThan(0.72);
    expect(zeros / 4000).toBeLessThan(0.78);
    for (const patch of [{ topK: 1 }, { topP: 0.7 }]) {
      const only = sampler({ seed: 1n, ...patch });
      expect(new Set(Array.from({ length: 200 }, () => only.pick(logits)))).toEqual(new Set([0]));
    }
  });
});

describe("tiny_lm text stream", () => {
  it("sends what each token adds", () => {
    const t = new TextStream([]);
    expect([t.push("Hel"), t.push("Hello"), t.push("Hello!"), t.finish()]).toEqual(["Hel", "lo", "!", ""]);
  });

  it("holds back an incomplete UTF-8 sequence until its last byte comes", () => {
    const t = new TextStream([]);
    expect([t.push("a\uFFFD"), t.push("a\uFFFD\uFFFD"), t.push("aé")]).toEqual(["a", "", "é"]);
  });

  it("holds back a possible stop string's start; a stop string ends the text before it", () => {
    const t = new TextStream(["END"]);
    expect([t.push("abc E"), t.push("abc EN"), t.push("abc END more")]).toEqual(["abc ", "", ""]);
    expect([t.stopped, t.text]).toEqual([true, "abc "]);
    expect(t.push("abc END more and more")).toBe("");
  });

  it("releases held text once it cannot start a stop string, or at the end", () => {
    const t = new TextStream(["END", "\n\n"]);
    expect([t.push("x E"), t.push("x Ex"), t.push("x Ex\n"), t.finish()]).toEqual(["x ", "Ex", "", "\n"]);
    expect(t.stopped).toBe(false);
  });

  it("before min_tokens no stop string is looked for or held back; after, only new text is searched", () => {
    const t = new TextStream(["ab"]);
    expect(t.push("xab", false)).toBe("xab");
    expect(t.push("xaba", false)).toBe("a");
    expect([t.push("xabab"), t.stopped, t.text]).toEqual(["", true, "xaba"]);
  });

  it("finds a stop string inside one token's text, and the earliest of several", () => {
    const t = new TextStream(["b", "c"]);
    expect(t.push("a c b")).toBe("a ");
    expect(t.text).toBe("a ");
  });
});
