/**
 * Issue #35 item 2: the example text-generation model through the server binary. tiny_lm
 * (decoupled TypeScript, Triton's LLM convention) runs tiny_lm_step (ONNX, KV cache) once
 * per token through BLS. The expected tokens are computed here independently: the same
 * tokenizer.json through @huggingface/tokenizers and the same model.onnx through
 * onnxruntime-node, re-running the whole sequence each step (no cache), greedy. The stream
 * over HTTP generate_stream and gRPC ModelStreamInfer must give exactly those tokens, one
 * response per token; seeded sampling must give the same tokens over both; max_tokens, EOS,
 * stop words and the non-streaming form are checked, and a cancelled stream stops the
 * generation. The repository is a copy outside the checkout, so the model's
 * `import "@huggingface/tokenizers"` is served by the binary, not by a node_modules.
 *
 * The same server runs the OpenAI-compatible frontend (--openai-port): /v1/chat/completions
 * (the messages rendered here with @huggingface/jinja from tokenizer_config.json, as the
 * frontend renders them) and /v1/completions must stream, delta by delta, the texts
 * generate_stream and gRPC stream for the same prompt and settings, with the model's
 * finish_reason and token counts; the official `openai` Python client drives it too.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Client, credentials, makeGenericClientConstructor, type ClientDuplexStream } from "@grpc/grpc-js";
import * as ort from "onnxruntime-node";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { ROOT, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";
import { openaiPython, runOpenAiClient, startOpenAiServer } from "../../helpers/openai-client.ts";

// onnxruntime-node's ONNX Runtime (the reference here) reads this with getenv when it starts: its telemetry stays off, as the server's does.
process.env.ORT_DISABLE_TELEMETRY ??= "1";

/** `server.url` is the OpenAI listener; `http` the HTTP (/v2) frontend's base URL. */
let server: ServerProcess;
let http: string;
let python: string;
let repo: ReturnType<typeof makeRepository>;
let tok: Tokenizer;
let session: ort.InferenceSession;
let eos: number[];
/** tiny_lm's chat template and the special tokens it may use. */
let template: Template;
let specialTokens: Record<string, string>;

const CHAT = "<|im_start|>user\nWhat is Nereid?<|im_end|>\n<|im_start|>assistant\n";
const PROMPT = "The server";

beforeAll(async () => {
  repo = makeRepository(["tiny_lm", "tiny_lm_step"]);
  cpSync(join(ROOT, "model_repository", "tiny_lm", "1"), join(repo.dir, "tiny_lm", "1"), { recursive: true });
  const json = (f: string) => JSON.parse(readFileSync(join(repo.dir, "tiny_lm", f), "utf8"));
  const config = json("tokenizer_config.json");
  tok = new Tokenizer(json("tokenizer.json"), config);
  eos = [config.eos_token, config.pad_token].map((t: string) => tok.token_to_id(t)!);
  template = new Template(config.chat_template);
  specialTokens = { eos_token: config.eos_token, pad_token: config.pad_token };
  session = await ort.InferenceSession.create(readFileSync(join(repo.dir, "tiny_lm_step", "1", "model.onnx")));
  python = openaiPython();
  ({ server, http } = await startOpenAiServer([`--model-repository=${repo.dir}`], { timeoutMs: 60_000 }));
}, 900_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

/** Greedy decoding without a cache: the whole sequence each step. The text each token adds (the EOS token adds ""). */
async function expectedGreedy(prompt: string, maxTokens: number, minTokens = 0): Promise<string[]> {
  const ids = tok.encode(prompt, { add_special_tokens: false }).ids;
  const generated: number[] = [];
  const deltas: string[] = [];
  let sent = "";
  while (generated.length < maxTokens) {
    const seq = [...ids, ...generated];
    const n = seq.length;
    const i64 = (v: number[]) => new ort.Tensor("int64", BigInt64Array.from(v.map(BigInt)), [1, v.length]);
    const feeds: Record<string, ort.Tensor> = { input_ids: i64(seq), attention_mask: i64(seq.map(() => 1)), position_ids: i64(seq.map((_, i) => i)) };
    for (const l of [0, 1])
      for (const kv of ["key", "value"]) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor("float32", new Float32Array(0), [1, 2, 0, 32]);
    const logits = (await session.run(feeds)).logits!;
    const vocab = logits.dims[2]!;
    const last = (logits.data as Float32Array).subarray((n - 1) * vocab, n * vocab);
    let best = -1;
    for (let i = 0; i < vocab; i++) if ((generated.length >= minTokens || !eos.includes(i)) && (best < 0 || last[i]! > last[best]!)) best = i;
    generated.push(best);
    const text = tok.decode(generated, { skip_special_tokens: true });
    deltas.push(text.slice(sent.length));
    sent = text;
    if (eos.includes(best)) break;
  }
  return deltas;
}

/** The `data:` payloads of an SSE answer to `body` POSTed to `url`, parsed (`[DONE]` as the string). */
async function events(url: string, body: object): Promise<any[]> {
  const res = await fetch(url, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text
    .split("\n\n")
    .filter((e) => e.length > 0)
    .map((e) => e.slice("data: ".length))
    .map((e) => (e === "[DONE]" ? e : JSON.parse(e)));
}

/** The `data:` payloads of a generate_stream body. */
const sse = (body: object) => events(`${http}/v2/models/tiny_lm/generate_stream`, body);

const bytesElement = (s: string) => {
  const b = Buffer.from(s);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(b.length);
  return Buffer.concat([len, b]);
};

/** A ModelStreamInfer request for tiny_lm in TensorRT-LLM style tensors (each [1, 1], as Triton's OpenAI frontend sends them). */
function grpcRequest(prompt: string, opts: { maxTokens: number; temperature: number; seed?: bigint; stream?: boolean; samplingParameters?: object }) {
  const inputs = [
    { name: "text_input", datatype: "BYTES", shape: [1, 1] },
    { name: "stream", datatype: "BOOL", shape: [1, 1] },
    { name: "max_tokens", datatype: "INT32", shape: [1, 1] },
    { name: "temperature", datatype: "FP32", shape: [1, 1] },
    { name: "return_num_output_tokens", datatype: "BOOL", shape: [1, 1] },
  ];
  const f32 = Buffer.alloc(4);
  f32.writeFloatLE(opts.temperature);
  const i32 = Buffer.alloc(4);
  i32.writeInt32LE(opts.maxTokens);
  const raw = [bytesElement(prompt), Buffer.from([opts.stream === false ? 0 : 1]), i32, f32, Buffer.from([1])];
  if (opts.seed !== undefined) {
    inputs.push({ name: "seed", datatype: "UINT64", shape: [1, 1] });
    const u64 = Buffer.alloc(8);
    u64.writeBigUInt64LE(opts.seed);
    raw.push(u64);
  }
  if (opts.samplingParameters) {
    inputs.push({ name: "sampling_parameters", datatype: "BYTES", shape: [1, 1] });
    raw.push(bytesElement(JSON.stringify(opts.samplingParameters)));
  }
  return { model_name: "tiny_lm", inputs, raw_input_contents: raw };
}

function grpcStream(): { client: Client; stream: ClientDuplexStream<object, any> } {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: () => ClientDuplexStream<object, any> };
  return { client, stream: client.ModelStreamInfer() };
}

/** Every message of one ModelStreamInfer call carrying `request`. */
function grpcAll(request: object): Promise<any[]> {
  const { client, stream } = grpcStream();
  const out: any[] = [];
  return new Promise((resolve, reject) => {
    stream.on("data", (m) => out.push(m));
    stream.on("end", () => {
      client.close();
      resolve(out);
    });
    stream.on("error", reject);
    stream.write(request);
    stream.end();
  });
}

/** text_output of a gRPC stream response (one BYTES element). */
const grpcText = (m: any) => {
  const raw = Buffer.from(m.infer_response.raw_output_contents[0]);
  expect(raw.readUInt32LE(0)).toBe(raw.length - 4);
  return raw.subarray(4).toString("utf8");
};
const grpcFinal = (m: any) => m.infer_response.parameters?.triton_final_response?.bool_param;

describe("tiny_lm through the binary (#35 item 2)", () => {
  it("loads both models from a repository outside the checkout (the binary carries @huggingface/tokenizers)", async () => {
    for (const m of ["tiny_lm", "tiny_lm_step"]) expect((await fetch(`${http}/v2/models/${m}/ready`)).status, m).toBe(200);
  });

  it("greedy: generate_stream and ModelStreamInfer stream the independently computed tokens, one response per token, max_tokens honoured", async () => {
    const expected = await expectedGreedy(PROMPT, 12);
    expect(expected).toHaveLength(12); // no EOS within 12 tokens for this prompt
    expect(expected.join("").length).toBeGreaterThan(12);

    const events = await sse({
      text_input: PROMPT,
      stream: true,
      max_tokens: 12,
      temperature: 0,
      return_num_input_tokens: true,
      return_num_output_tokens: true,
    });
    const inputTokens = tok.encode(PROMPT, { add_special_tokens: false }).ids.length;
    expect(events).toEqual(
      expected.map((t) => ({ model_name: "tiny_lm", model_version: "1", text_output: t, num_input_tokens: inputTokens, num_output_tokens: 1 })),
    );

    const msgs = await grpcAll(grpcRequest(PROMPT, { maxTokens: 12, temperature: 0 }));
    expect(msgs.map((m) => m.error_message).filter(Boolean)).toEqual([]);
    expect(msgs.map(grpcText)).toEqual(expected);
    expect(msgs.map(grpcFinal)).toEqual([...new Array(11).fill(false), true]);
    expect(msgs[0].infer_response.outputs.map((o: any) => [o.name, o.datatype, o.shape.map(Number)])).toEqual([
      ["text_output", "BYTES", [1, 1]],
      ["num_output_tokens", "INT32", [1, 1]],
    ]);
  });

  it("stops at the end-of-turn token before max_tokens, its response carrying no text; min_tokens holds it off", async () => {
    const expected = await expectedGreedy(CHAT, 50);
    expect(expected.length).toBeLessThan(50);
    expect(expected.at(-1)).toBe("");
    const events = await sse({ text_input: CHAT, stream: true, max_tokens: 50, temperature: 0 });
    expect(events.map((e) => e.text_output)).toEqual(expected);
    expect((await grpcAll(grpcRequest(CHAT, { maxTokens: 50, temperature: 0 }))).map(grpcText)).toEqual(expected);
    // vLLM's min_tokens: no EOS before it.
    const longer = await expectedGreedy(CHAT, 50, expected.length + 2);
    expect(longer.length).toBeGreaterThan(expected.length + 2);
    const sp = JSON.stringify({ max_tokens: 50, temperature: 0, min_tokens: expected.length + 2 });
    expect((await sse({ text_input: CHAT, stream: true, sampling_parameters: sp })).map((e) => e.text_output)).toEqual(longer);
  });

  it("without stream: one response, the prompt first only with exclude_input_in_output false; a stop word ends the text before it", async () => {
    const text = (await expectedGreedy(PROMPT, 20)).join("");
    const generate = async (body: object) => {
      const res = await fetch(`${http}/v2/models/tiny_lm/generate`, {
        method: "POST",
        body: JSON.stringify({ text_input: PROMPT, max_tokens: 20, temperature: 0, ...body }),
      });
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json;
    };
    // The config's exclude_input_in_output "true" is the default (a chat answer without its prompt); the input wins.
    expect(await generate({ return_num_output_tokens: true })).toEqual({ model_name: "tiny_lm", model_version: "1", text_output: text, num_output_tokens: 20 });
    expect((await generate({ exclude_input_in_output: false })).text_output).toBe(PROMPT + text);
    expect((await generate({ exclude_input_in_output: true })).text_output).toBe(text);
    const stop = text.slice(8, 11);
    expect(text.indexOf(stop)).toBe(8);
    expect((await generate({ stop_words: [stop] })).text_output).toBe(text.slice(0, 8));
    // The same through vLLM-style sampling_parameters.
    const sp = JSON.stringify({ max_tokens: 20, temperature: 0, stop: [stop] });
    expect((await generate({ sampling_parameters: sp })).text_output).toBe(text.slice(0, 8));
  });

  it("concurrent requests keep their own caches: each streams the tokens it gets alone; gRPC without stream sends one final response", async () => {
    const [a, b] = await Promise.all([expectedGreedy(PROMPT, 10), expectedGreedy(CHAT, 10)]);
    const runs = await Promise.all([
      sse({ text_input: PROMPT, stream: true, max_tokens: 10, temperature: 0 }),
      sse({ text_input: CHAT, stream: true, max_tokens: 10, temperature: 0 }),
      grpcAll(grpcRequest(PROMPT, { maxTokens: 10, temperature: 0 })),
      grpcAll(grpcRequest(PROMPT, { maxTokens: 10, temperature: 0, stream: false })),
    ]);
    expect(runs[0]!.map((e) => e.text_output)).toEqual(a);
    expect(runs[1]!.map((e) => e.text_output)).toEqual(b);
    expect(runs[2]!.map(grpcText)).toEqual(a);
    expect(runs[3]!.map((m) => [grpcText(m), grpcFinal(m)])).toEqual([[a.join(""), true]]);
  });

  it("seeded sampling: the same tokens over HTTP and gRPC and on a second request; another seed, other tokens", async () => {
    const body = { text_input: PROMPT, stream: true, max_tokens: 16, temperature: 1, seed: 42 };
    const a = (await sse(body)).map((e) => e.text_output);
    expect(a.length).toBeGreaterThan(0);
    expect((await sse(body)).map((e) => e.text_output)).toEqual(a);
    expect((await grpcAll(grpcRequest(PROMPT, { maxTokens: 16, temperature: 1, seed: 42n }))).map(grpcText)).toEqual(a);
    expect((await sse({ ...body, seed: 43 })).map((e) => e.text_output).join("")).not.toBe(a.join(""));
  });

  it("bad settings fail the request with INVALID_ARG (400), and the model keeps serving", async () => {
    const res = await fetch(`${http}/v2/models/tiny_lm/generate_stream`, { method: "POST", body: JSON.stringify({ text_input: PROMPT, max_tokens: 0 }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "tiny_lm: 'max_tokens' must be an integer of at least 1, got 0" });
    const empty = await fetch(`${http}/v2/models/tiny_lm/generate`, { method: "POST", body: JSON.stringify({ text_input: "" }) });
    expect([empty.status, await empty.json()]).toEqual([400, { error: "tiny_lm: 'text_input' must not be empty" }]);
    const msgs = await grpcAll({ ...grpcRequest(PROMPT, { maxTokens: 1, temperature: 0 }), model_name: "tiny_lm" });
    expect(msgs.map(grpcText)).toEqual((await expectedGreedy(PROMPT, 1)).slice(0, 1));
  });

  it("a cancelled gRPC stream stops the generation: tiny_lm_step runs far fewer steps than max_tokens asked", async () => {
    const stats = async (model: string) => ((await (await fetch(`${http}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
    const steps = async () => Number((await stats("tiny_lm_step")).inference_count);
    // tiny_lm's failures and successes together: should the request ever end as a success, the assertion shows it.
    const outcomes = async () => {
      const s = (await stats("tiny_lm")).inference_stats;
      return { fail: Number(s.fail.count), success: Number(s.success.count) };
    };
    const before = await steps();
    const outcomesBefore = await outcomes();
    const { client, stream } = grpcStream();
    await new Promise<void>((resolve) => {
      stream.on("data", () => {
        stream.cancel();
        resolve();
      });
      stream.on("error", () => undefined);
      // ignore_eos: uncancelled, this generation runs all 250 steps (PROMPT alone meets EOS after 46).
      stream.write(grpcRequest(PROMPT, { maxTokens: 250, temperature: 0, samplingParameters: { ignore_eos: true } }));
    });
    client.close();
    // Wait until the count stops moving, then compare with the 250 steps an uncancelled request runs.
    let last = -1;
    await eventually(async () => {
      const now = await steps();
      const settled = now === last;
      last = now;
      expect(settled).toBe(true);
    });
    expect(last - before).toBeGreaterThanOrEqual(1);
    expect(last - before).toBeLessThan(250);
    // The request ends as a failure (the model's CANCELLED error), not a success.
    await eventually(async () => expect(await outcomes()).toEqual({ fail: outcomesBefore.fail + 1, success: outcomesBefore.success }));
  }, 60_000);
});

const MESSAGES = [{ role: "user", content: "What is Nereid?" }];

/** The chat prompt for `messages`, rendered as the OpenAI frontend renders it (tiny_lm's template, the assistant's turn opened). */
const renderChat = (messages: object[]) => template.render({ ...specialTokens, messages, add_generation_prompt: true });

/** The prompt's tokens as tiny_lm counts them (no special tokens added). */
const promptTokens = (prompt: string) => tok.encode(prompt, { add_special_tokens: false }).ids.length;

/** The chunks of a streamed /v1 answer (after the chat role chunk), which ends with [DONE]: [delta text, finish_reason] each. */
async function openaiStream(path: "/v1/chat/completions" | "/v1/completions", body: object): Promise<{ pieces: [string, string | null][]; last: any }> {
  const chunks = await events(`${server.url}${path}`, { model: "tiny_lm", stream: true, ...body });
  expect(chunks.pop()).toBe("[DONE]");
  const chat = path === "/v1/chat/completions";
  if (chat) expect(chunks.shift().choices).toEqual([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
  const last = chunks.at(-1).choices.length === 0 ? chunks.pop() : undefined;
  const pieces = chunks.map((c): [string, string | null] => {
    expect(c.choices).toHaveLength(1);
    const choice = c.choices[0];
    return [(chat ? choice.delta.content : choice.text) ?? "", choice.finish_reason];
  });
  return { pieces, last };
}

/** What a /v1 stream sends for the model's response texts: each in order, an empty one only when it is the last, which carries `finish`. */
const piecesOf = (texts: string[], finish: string): [string, string | null][] =>
  texts.map((t, i): [string, string | null] => [t, i === texts.length - 1 ? finish : null]).filter(([t, f]) => t !== "" || f !== null);

const usageOf = (prompt: string, completion: number) => ({
  prompt_tokens: promptTokens(prompt),
  completion_tokens: completion,
  total_tokens: promptTokens(prompt) + completion,
});

async function openaiAnswer(path: "/v1/chat/completions" | "/v1/completions", body: object): Promise<any> {
  const res = await fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify({ model: "tiny_lm", ...body }) });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json;
}

describe("tiny_lm through the OpenAI frontend: the tokens of generate_stream and gRPC (#35 item 2)", () => {
  it("chat, streamed: the chat template's prompt; each delta is one of generate_stream's and gRPC's responses, in order; the end-of-turn token's ends it with finish_reason stop; usage the model's counts", async () => {
    const prompt = renderChat(MESSAGES);
    expect(prompt).toBe(CHAT);
    const expected = await expectedGreedy(prompt, 50);
    expect(expected.length).toBeLessThan(50);
    const texts = (await sse({ text_input: prompt, stream: true, max_tokens: 50, temperature: 0 })).map((e) => e.text_output);
    expect(texts).toEqual(expected);
    expect((await grpcAll(grpcRequest(prompt, { maxTokens: 50, temperature: 0 }))).map(grpcText)).toEqual(texts);

    const { pieces, last } = await openaiStream("/v1/chat/completions", {
      messages: MESSAGES,
      max_tokens: 50,
      temperature: 0,
      stream_options: { include_usage: true },
    });
    expect(pieces).toEqual(piecesOf(texts, "stop"));
    expect(last.usage).toEqual(usageOf(prompt, texts.length));
  });

  it("chat, not streamed: the joined text; finish_reason stop when the end-of-turn token is the max_tokens-th token, length when max_tokens cut it", async () => {
    const prompt = renderChat(MESSAGES);
    const expected = await expectedGreedy(prompt, 50);
    const n = expected.length;
    expect(expected.at(-1)).toBe("");
    const answer = async (max: number) => (await openaiAnswer("/v1/chat/completions", { messages: MESSAGES, max_tokens: max, temperature: 0 })).choices[0];
    expect(await answer(50)).toEqual({ index: 0, message: { role: "assistant", content: expected.join("") }, logprobs: null, finish_reason: "stop" });
    expect((await answer(n)).finish_reason).toBe("stop");
    expect(await answer(n - 1)).toMatchObject({ message: { content: expected.slice(0, n - 1).join("") }, finish_reason: "length" });
    const full = await openaiAnswer("/v1/chat/completions", { messages: MESSAGES, max_completion_tokens: 50, temperature: 0 });
    expect(full.usage).toEqual(usageOf(prompt, n));
    // The same end over the stream: its last chunk says stop.
    expect((await openaiStream("/v1/chat/completions", { messages: MESSAGES, max_tokens: n, temperature: 0 })).pieces.at(-1)).toEqual(["", "stop"]);
  });

  it("completions, raw prompt: streamed and not, generate_stream's and gRPC's texts, finish_reason length at max_tokens, usage the tokenizer's counts", async () => {
    const texts = (await sse({ text_input: PROMPT, stream: true, max_tokens: 12, temperature: 0 })).map((e) => e.text_output);
    expect(texts).toEqual(await expectedGreedy(PROMPT, 12));
    expect((await grpcAll(grpcRequest(PROMPT, { maxTokens: 12, temperature: 0 }))).map(grpcText)).toEqual(texts);
    const { pieces, last } = await openaiStream("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0, stream_options: { include_usage: true } });
    expect(pieces).toEqual(piecesOf(texts, "length"));
    expect(last.usage).toEqual(usageOf(PROMPT, 12));
    const whole = await openaiAnswer("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0 });
    expect(whole.choices).toEqual([{ index: 0, text: texts.join(""), logprobs: null, finish_reason: "length" }]);
    expect(whole.usage).toEqual(usageOf(PROMPT, 12));
  });

  it("echo puts the prompt first, streamed (in the first chunk) and not; a stop string ends the text before it with finish_reason stop", async () => {
    const texts = await expectedGreedy(PROMPT, 12);
    const echoed = await sse({ text_input: PROMPT, stream: true, max_tokens: 12, temperature: 0, exclude_input_in_output: false });
    expect(echoed.map((e) => e.text_output)).toEqual([PROMPT + texts[0], ...texts.slice(1)]);
    expect((await openaiStream("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0, echo: true })).pieces).toEqual(
      piecesOf([PROMPT + texts[0], ...texts.slice(1)], "length"),
    );
    expect((await openaiAnswer("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0, echo: true })).choices[0].text).toBe(
      PROMPT + texts.join(""),
    );
    const text = texts.join("");
    const stop = text.slice(8, 11);
    expect(text.indexOf(stop)).toBe(8);
    const cut = (await openaiAnswer("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0, stop })).choices[0];
    expect([cut.text, cut.finish_reason]).toEqual([text.slice(0, 8), "stop"]);
    const streamed = (await openaiStream("/v1/completions", { prompt: PROMPT, max_tokens: 12, temperature: 0, stop: [stop] })).pieces;
    const generated = (await sse({ text_input: PROMPT, stream: true, max_tokens: 12, temperature: 0, stop_words: [stop] })).map((e) => e.text_output);
    expect(streamed).toEqual(piecesOf(generated, "stop"));
    expect(generated.join("")).toBe(text.slice(0, 8));
  });

  it("seeded sampling: the same pieces as generate_stream with the same seed and temperature", async () => {
    const texts = (await sse({ text_input: PROMPT, stream: true, max_tokens: 16, temperature: 0.8, top_p: 0.9, seed: 7 })).map((e) => e.text_output);
    const { pieces } = await openaiStream("/v1/completions", { prompt: PROMPT, max_tokens: 16, temperature: 0.8, top_p: 0.9, seed: 7 });
    expect(pieces).toEqual(piecesOf(texts, texts.length === 16 ? "length" : "stop"));
    expect(pieces.map(([t]) => t).join("")).not.toBe((await expectedGreedy(PROMPT, 16)).join(""));
  });

  it("the official openai Python client: chat and completions, streamed and not, give the greedy tokens", async () => {
    const chat = await expectedGreedy(CHAT, 50);
    const completion = await expectedGreedy(PROMPT, 12);
    const r = await runOpenAiClient(
      python,
      server.url,
      `m = [{"role": "user", "content": "What is Nereid?"}]\n` +
        `chat = client.chat.completions.create(model="tiny_lm", messages=m, temperature=0, max_tokens=50)\n` +
        `chat_s = [[c.delta.content, c.finish_reason] for ch in client.chat.completions.create(model="tiny_lm", messages=m, temperature=0, max_tokens=50, stream=True) for c in ch.choices]\n` +
        `comp = client.completions.create(model="tiny_lm", prompt=${JSON.stringify(PROMPT)}, temperature=0, max_tokens=12)\n` +
        `comp_s = [[c.text, c.finish_reason] for ch in client.completions.create(model="tiny_lm", prompt=${JSON.stringify(PROMPT)}, temperature=0, max_tokens=12, stream=True) for c in ch.choices]\n` +
        `print(json.dumps({"chat": [chat.choices[0].message.content, chat.choices[0].finish_reason, chat.usage.completion_tokens], "chat_s": chat_s,` +
        ` "comp": [comp.choices[0].text, comp.choices[0].finish_reason, comp.usage.prompt_tokens, comp.usage.completion_tokens], "comp_s": comp_s}))`,
    );
    expect(r).toEqual({
      chat: [chat.join(""), "stop", chat.length],
      // The role chunk's content is "", the end-of-turn token's chunk has none.
      chat_s: [["", null], ...piecesOf(chat, "stop").map(([t, f]) => [t === "" ? null : t, f])],
      comp: [completion.join(""), "length", promptTokens(PROMPT), 12],
      comp_s: piecesOf(completion, "length"),
    });
  });
});
