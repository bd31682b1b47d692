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
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Client, credentials, makeGenericClientConstructor, type ClientDuplexStream } from "@grpc/grpc-js";
import * as ort from "onnxruntime-node";
import { Tokenizer } from "@huggingface/tokenizers";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { ROOT, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let tok: Tokenizer;
let session: ort.InferenceSession;
let eos: number[];

const CHAT = "<|im_start|>user\nWhat is Nereid?<|im_end|>\n<|im_start|>assistant\n";
const PROMPT = "The server";

beforeAll(async () => {
  repo = makeRepository(["tiny_lm", "tiny_lm_step"]);
  cpSync(join(ROOT, "model_repository", "tiny_lm", "1"), join(repo.dir, "tiny_lm", "1"), { recursive: true });
  const json = (f: string) => JSON.parse(readFileSync(join(repo.dir, "tiny_lm", f), "utf8"));
  const config = json("tokenizer_config.json");
  tok = new Tokenizer(json("tokenizer.json"), config);
  eos = [config.eos_token, config.pad_token].map((t: string) => tok.token_to_id(t)!);
  session = await ort.InferenceSession.create(readFileSync(join(repo.dir, "tiny_lm_step", "1", "model.onnx")));
  server = await startServerProcess([`--model-repository=${repo.dir}`], { timeoutMs: 60_000 });
}, 120_000);

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

/** The `data:` payloads of a generate_stream body. */
async function sse(body: object): Promise<any[]> {
  const res = await fetch(`${server.url}/v2/models/tiny_lm/generate_stream`, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text
    .split("\n\n")
    .filter((e) => e.length > 0)
    .map((e) => JSON.parse(e.slice("data: ".length)));
}

const bytesElement = (s: string) => {
  const b = Buffer.from(s);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(b.length);
  return Buffer.concat([len, b]);
};

/** A ModelStreamInfer request for tiny_lm in TensorRT-LLM style tensors (each [1, 1], as Triton's OpenAI frontend sends them). */
function grpcRequest(prompt: string, opts: { maxTokens: number; temperature: number; seed?: bigint; stream?: boolean }) {
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
    for (const m of ["tiny_lm", "tiny_lm_step"]) expect((await fetch(`${server.url}/v2/models/${m}/ready`)).status, m).toBe(200);
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
      const res = await fetch(`${server.url}/v2/models/tiny_lm/generate`, {
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
    const res = await fetch(`${server.url}/v2/models/tiny_lm/generate_stream`, { method: "POST", body: JSON.stringify({ text_input: PROMPT, max_tokens: 0 }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "tiny_lm: 'max_tokens' must be an integer of at least 1, got 0" });
    const empty = await fetch(`${server.url}/v2/models/tiny_lm/generate`, { method: "POST", body: JSON.stringify({ text_input: "" }) });
    expect([empty.status, await empty.json()]).toEqual([400, { error: "tiny_lm: 'text_input' must not be empty" }]);
    const msgs = await grpcAll({ ...grpcRequest(PROMPT, { maxTokens: 1, temperature: 0 }), model_name: "tiny_lm" });
    expect(msgs.map(grpcText)).toEqual((await expectedGreedy(PROMPT, 1)).slice(0, 1));
  });

  it("a cancelled gRPC stream stops the generation: tiny_lm_step runs far fewer steps than max_tokens asked", async () => {
    const stats = async (model: string) => ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
    const steps = async () => Number((await stats("tiny_lm_step")).inference_count);
    const failed = async () => Number((await stats("tiny_lm")).inference_stats.fail.count);
    const before = await steps();
    const failedBefore = await failed();
    const { client, stream } = grpcStream();
    await new Promise<void>((resolve) => {
      stream.on("data", () => {
        stream.cancel();
        resolve();
      });
      stream.on("error", () => undefined);
      stream.write(grpcRequest(PROMPT, { maxTokens: 250, temperature: 0 }));
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
    await eventually(async () => expect(await failed()).toBe(failedBefore + 1));
  }, 60_000);
});
