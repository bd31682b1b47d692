/**
 * @module tiny_lm: the example text-generation model (issue #35), a decoupled TypeScript
 * model that follows Triton's LLM convention (what Triton's OpenAI frontend, the vLLM and
 * TensorRT-LLM backends use): `text_input` in, `text_output` out, one response per token
 * when `stream` is true, else one response with the whole text. It tokenizes with the
 * folder's tokenizer.json (@huggingface/tokenizers), runs the ONNX causal LM `tiny_lm_step`
 * once per token through BLS with its KV cache (the prompt in one step, then one token a
 * step), and picks each token with ./generation.ts. It stops at max_tokens, at
 * `<|im_end|>` or `<|endoftext|>`, at a stop string or at the end of the context.
 * With `return_finish_reason` the final response carries `finish_reason` ("stop" or
 * "length"), as the vLLM backend's does.
 * Parameters: lm_model, layers, heads, head_dim, max_positions (the step model's), and
 * exclude_input_in_output (the default when a request sends no such input).
 * Inputs and defaults: docs/models/text-generation.md.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import type { InferenceRequest, InitializeArgs, ResponseSender, Tensor, TritonCode, TritonModel } from "../../../src/backends/typescript/api.ts";
import { InputError, Sampler, TextStream, parseSettings, type Settings } from "./generation.ts";

interface Shape {
  lm: string;
  layers: number;
  heads: number;
  headDim: number;
  maxPositions: number;
}

/** Why a generation ended, as vLLM says it: an end-of-turn token or a stop string, else max_tokens or the full context. */
type FinishReason = "stop" | "length";

const CODES = new Set(["INVALID_ARG", "NOT_FOUND", "UNAVAILABLE", "UNSUPPORTED", "INTERNAL", "ALREADY_EXISTS", "CANCELLED"]);

export default class TinyLm implements TritonModel {
  #tokenizer!: Tokenizer;
  #eos: number[] = [];
  #shape!: Shape;
  #excludeInput = false;

  initialize(args: InitializeArgs): void {
    const read = (file: string) => JSON.parse(readFileSync(join(args.repositoryPath, file), "utf8"));
    const config = read("tokenizer_config.json");
    this.#tokenizer = new Tokenizer(read("tokenizer.json"), config);
    this.#eos = [config.eos_token, config.pad_token].map((t: string) => this.#tokenizer.token_to_id(t)).filter((id): id is number => id !== undefined);
    const p = args.parameters;
    this.#excludeInput = p.exclude_input_in_output === "true";
    this.#shape = {
      lm: p.lm_model ?? "tiny_lm_step",
      layers: Number(p.layers),
      heads: Number(p.heads),
      headDim: Number(p.head_dim),
      maxPositions: Number(p.max_positions),
    };
    const bad = Object.entries(this.#shape).filter(([k, v]) => k !== "lm" && !(Number.isInteger(v) && v > 0));
    if (bad.length > 0 || this.#eos.length === 0)
      throw new Error(`tiny_lm: bad parameters or tokenizer_config.json (${bad.map(([k]) => k).join(", ") || "eos_token"})`);
  }

  /** Each request runs on after execute returns; its responses go through its sender. */
  execute(requests: InferenceRequest[]): void {
    for (const r of requests) {
      const sender = r.getResponseSender();
      this.#generate(r, sender).catch((err: unknown) => {
        const code = r.isCancelled() ? "CANCELLED" : (err as { code?: unknown }).code;
        const message = r.isCancelled() ? "tiny_lm: the request was cancelled" : err instanceof Error ? err.message : String(err);
        try {
          sender.send({ error: typeof code === "string" && CODES.has(code) ? { message, code: code as TritonCode } : message }, { final: true });
        } catch {
          // The sender is closed (the request already ended): nothing is left to tell.
        }
      });
    }
  }

  async #generate(request: InferenceRequest, sender: ResponseSender): Promise<void> {
    const s = parseSettings((name) => request.input(name), this.#excludeInput);
    const prompt = this.#tokenizer.encode(s.prompt, { add_special_tokens: false }).ids;
    const max = this.#shape.maxPositions;
    if (prompt.length === 0) throw new InputError("tiny_lm: 'text_input' must not be empty");
    if (prompt.length >= max) throw new InputError(`tiny_lm: the prompt is ${prompt.length} tokens; the context holds ${max}, with room for at least one more`);
    const sampler = new Sampler(s);
    const text = new TextStream(s.stop);
    const generated: number[] = [];
    let past: Tensor[] = [];
    let step = prompt;
    // With exclude_input_in_output false, a stream's first response starts with the prompt (as OpenAI's echo streams it).
    let head = s.excludeInput ? "" : s.prompt;
    let finish: FinishReason = "length";
    for (;;) {
      if (request.isCancelled()) throw Object.assign(new Error("tiny_lm: the request was cancelled"), { code: "CANCELLED" });
      const out = await this.#step(request, step, generated.length + prompt.length - step.length, past);
      past = out.present;
      const early = generated.length < s.minTokens;
      const token = sampler.pick(out.logits, early ? this.#eos : []);
      generated.push(token);
      const eos = !s.ignoreEos && this.#eos.includes(token);
      let delta = text.push(this.#tokenizer.decode(generated, { skip_special_tokens: true }), generated.length >= s.minTokens);
      if (eos || text.stopped) finish = "stop";
      const done = eos || text.stopped || generated.length >= s.maxTokens || prompt.length + generated.length >= max;
      if (done) delta += text.finish();
      if (s.stream) {
        this.#send(sender, s, head + delta, prompt.length, 1, done ? finish : undefined);
        head = "";
      }
      if (done) break;
      step = [token];
    }
    if (!s.stream) this.#send(sender, s, head + text.text, prompt.length, generated.length, finish);
  }

  /** One response; `finish` (why the generation ended) marks the final one. */
  #send(sender: ResponseSender, s: Settings, text: string, inputTokens: number, outputTokens: number, finish: FinishReason | undefined): void {
    const outputs: Tensor[] = [{ name: "text_output", datatype: "BYTES", shape: [1, 1], data: [text] }];
    if (s.returnInputTokens) outputs.push({ name: "num_input_tokens", datatype: "INT32", shape: [1, 1], data: [inputTokens] });
    if (s.returnOutputTokens) outputs.push({ name: "num_output_tokens", datatype: "INT32", shape: [1, 1], data: [outputTokens] });
    if (s.returnFinishReason && finish) outputs.push({ name: "finish_reason", datatype: "BYTES", shape: [1, 1], data: [finish] });
    sender.send({ outputs }, { final: finish !== undefined });
  }

  /** One run of the LM on `ids` after `pastLength` cached tokens: the last position's logits and the grown cache. */
  async #step(request: InferenceRequest, ids: number[], pastLength: number, past: Tensor[]): Promise<{ logits: Float32Array; present: Tensor[] }> {
    const { lm, layers, heads, headDim } = this.#shape;
    const total = pastLength + ids.length;
    const names = Array.from({ length: layers }, (_, l) => [`${l}.key`, `${l}.value`]).flat();
    const inputs: Tensor[] = [
      { name: "input_ids", datatype: "INT64", shape: [1, ids.length], data: BigInt64Array.from(ids, BigInt) },
      { name: "attention_mask", datatype: "INT64", shape: [1, total], data: new BigInt64Array(total).fill(1n) },
      { name: "position_ids", datatype: "INT64", shape: [1, ids.length], data: BigInt64Array.from(ids, (_, i) => BigInt(pastLength + i)) },
      ...names.map(
        (n, i): Tensor =>
          past[i]
            ? { ...past[i]!, name: `past_key_values.${n}` }
            : { name: `past_key_values.${n}`, datatype: "FP32", shape: [1, heads, 0, headDim], data: new Float32Array(0) },
      ),
    ];
    const res = await request.infer({ model: lm, inputs, outputs: ["logits", ...names.map((n) => `present.${n}`)], signal: request.signal });
    const logits = res.output("logits");
    const present = names.map((n) => res.output(`present.${n}`));
    if (!logits || present.some((t) => !t)) throw Object.assign(new Error(`tiny_lm: '${lm}' did not return logits and present.*`), { code: "INTERNAL" });
    const vocab = logits.shape[2]!;
    const data = logits.data as Float32Array;
    return { logits: data.subarray((ids.length - 1) * vocab, ids.length * vocab), present: present as Tensor[] };
  }
}
