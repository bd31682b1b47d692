/**
 * #35: the OpenAI-compatible routes in process, on the test models of
 * test/helpers/openai-models.ts: exact answers and SSE events, usage counts from the
 * tokenizer and from the model, n choices, UTF-8 split across responses, errors in
 * OpenAI's shape before and after the first event, and a client gone mid-stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../../src/startup/start.ts";
import { parseArgs } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";
import { createOpenAiHandler } from "../../../src/frontends/openai/routes.ts";
import { fetchHandler } from "../../../src/frontends/http/fetch.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { addOpenAiModels } from "../../helpers/openai-models.ts";

let repo: ReturnType<typeof makeRepository>;
let running: RunningServer;
let fetchOpenAi: (request: Request) => Promise<Response>;

const LIMIT = 4096;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  addOpenAiModels(repo);
  configureLog({ info: false, warning: false, error: true, verbose: 0, format: "default" });
  const parsed = parseArgs([`--model-repository=${repo.dir}`, "--allow-http=false", "--allow-grpc=false", "--allow-metrics=false"]);
  if (parsed.kind !== "run") throw new Error("run expected");
  running = await startServer(parsed.options);
  fetchOpenAi = fetchHandler(createOpenAiHandler(running.server, { maxInputSize: LIMIT }));
});

afterAll(async () => {
  await running?.shutdown();
  repo?.remove();
});

/** A Response whose JSON the tests read freely. */
type Answer = Omit<Response, "json"> & { json(): Promise<any> };

const post = (path: string, body: unknown, init: RequestInit = {}): Promise<Answer> =>
  fetchOpenAi(new Request(`http://localhost${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), ...init }));
const get = (path: string): Promise<Answer> => fetchOpenAi(new Request(`http://localhost${path}`));

/** The data of each SSE event, parsed ([DONE] as the string). */
async function events(res: Answer): Promise<any[]> {
  const text = await res.text();
  expect(text.endsWith("\n\n")).toBe(true);
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((e) => {
      expect(e.startsWith("data: ")).toBe(true);
      const data = e.slice(6);
      return data === "[DONE]" ? data : JSON.parse(data);
    });
}

/** What is left of a chunk once its id and time are checked. */
function body(chunk: any, object: string, model = "words"): any {
  expect(chunk.id).toMatch(/^cmpl-[0-9a-f-]{36}$/);
  expect(Number.isInteger(chunk.created)).toBe(true);
  const { id: _id, created: _c, ...rest } = chunk;
  expect(rest.object).toBe(object);
  expect(rest.model).toBe(model);
  expect(rest.system_fingerprint).toBeNull();
  const { object: _o, model: _m, system_fingerprint: _s, ...left } = rest;
  return left;
}

describe("POST /v1/completions", () => {
  it("answers the text, finish_reason and usage counted by the model's tokenizer.json", async () => {
    const res = await post("/v1/completions", { model: "words", prompt: "one two three" });
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "application/json"]);
    expect(body(await res.json(), "text_completion")).toEqual({
      choices: [{ index: 0, text: "three two one", logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
    });
  });

  it("says finish_reason length when the answer reached max_tokens; passes temperature and stop to the model", async () => {
    const cut = body(await (await post("/v1/completions", { model: "words", prompt: "a b c d e", max_tokens: 2 })).json(), "text_completion");
    expect(cut.choices).toEqual([{ index: 0, text: "e d", logprobs: null, finish_reason: "length" }]);
    const t = body(await (await post("/v1/completions", { model: "words", prompt: "a b c d e", temperature: 0.5, stop: ["b"] })).json(), "text_completion");
    expect(t.choices[0].text).toBe("[temperature=0.5] e d c");
    expect(t.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
  });

  it("echoes the prompt through exclude_input_in_output", async () => {
    const r = body(await (await post("/v1/completions", { model: "words", prompt: "x y", echo: true })).json(), "text_completion");
    expect(r.choices[0].text).toBe("x y y x");
  });

  it("streams text_completion chunks, finish_reason on the last, then the usage chunk and [DONE]", async () => {
    const res = await post("/v1/completions", { model: "words", prompt: "one two three", stream: true, stream_options: { include_usage: true } });
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    const all = await events(res);
    expect(all.at(-1)).toBe("[DONE]");
    const chunks = all.slice(0, -1);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.map((c) => body(c, "text_completion"))).toEqual([
      { choices: [{ index: 0, text: "three", logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, text: " two", logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, text: " one", logprobs: null, finish_reason: "stop" }] },
      { choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } },
    ]);
  });

  it("runs n choices, each its own inference, the prompt counted once", async () => {
    const r = body(await (await post("/v1/completions", { model: "words", prompt: "p q", n: 3 })).json(), "text_completion");
    expect(r.choices).toEqual([0, 1, 2].map((index) => ({ index, text: "q p", logprobs: null, finish_reason: "stop" })));
    expect(r.usage).toEqual({ prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 });
    const streamed = (await events(await post("/v1/completions", { model: "words", prompt: "p q", n: 2, stream: true }))).slice(0, -1);
    for (const index of [0, 1]) {
      expect(streamed.filter((c) => c.choices[0].index === index).map((c) => [c.choices[0].text, c.choices[0].finish_reason])).toEqual([
        ["q", null],
        [" p", "stop"],
      ]);
    }
  });

  it("decodes UTF-8 split across the model's responses", async () => {
    const r = body(await (await post("/v1/completions", { model: "words", prompt: "utf8" })).json(), "text_completion");
    expect(r.choices[0].text).toBe("café");
    const streamed = (await events(await post("/v1/completions", { model: "words", prompt: "utf8", stream: true }))).slice(0, -1);
    expect(streamed.map((c) => c.choices[0].text)).toEqual(["caf", "é"]);
  });

  it("sends an error that comes after the first event as an error event, without [DONE]", async () => {
    const all = await events(await post("/v1/completions", { model: "words", prompt: "fail", stream: true }));
    expect(all.length).toBe(2);
    expect(all[0].choices[0].text).toBe("partial");
    expect(all[1]).toEqual({
      error: { message: "the model failed", type: "server_error", param: null, code: null },
      detail: "the model failed",
    });
  });

  it("answers a model's failure before any text with its status, not a stream", async () => {
    const res = await post("/v1/completions", { model: "simple", prompt: "x", stream: true });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe("model");
  });

  it("stops the model and counts the request failed when the client goes away mid-stream (#35 item 4)", async () => {
    const stats = () => running.server.modelStatistics("words", "1").model_stats[0]!.inference_stats.fail.count;
    const failed = stats();
    const res = await post("/v1/completions", { model: "words", prompt: "go forever", stream: true });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^data: \{.*"text":"tick "/);
    const active = async () => (await (await post("/v1/completions", { model: "words", prompt: "active" })).json()).choices[0].text;
    expect(await active()).toBe("1");
    await reader.cancel();
    while ((await active()) !== "0") await new Promise((r) => setTimeout(r, 10));
    while (stats() !== failed + 1) await new Promise((r) => setTimeout(r, 10));
  });
});

describe("POST /v1/chat/completions", () => {
  it("builds the prompt with the chat template of tokenizer_config.json (its special tokens included)", async () => {
    const r = body(
      await (
        await post("/v1/chat/completions", {
          model: "words",
          messages: [
            { role: "system", content: "be brief" },
            { role: "user", content: "hi there" },
          ],
        })
      ).json(),
      "chat.completion",
    );
    // The prompt "<s>system: be brief\nuser: hi there\nassistant:", its words reversed.
    expect(r).toEqual({
      choices: [{ index: 0, message: { role: "assistant", content: "assistant: there hi user: brief be <s>system:" }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 7, completion_tokens: 7, total_tokens: 14 },
    });
  });

  it("streams the role first, then deltas, a flag-only final as an empty delta, usage from the model's own counts", async () => {
    const all = await events(
      await post("/v1/chat/completions", {
        model: "vllm_words",
        messages: [{ role: "user", content: "hi there" }],
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: 2,
      }),
    );
    expect(all.slice(0, -1).map((c) => body(c, "chat.completion.chunk", "vllm_words"))).toEqual([
      { choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: "[assistant]" }, logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: " there" }, logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }] },
      // 1/chat_template.jinja made "[user] hi there [assistant]": 4 words; the model counted 1 a response.
      { choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } },
    ]);
    expect(all.at(-1)).toBe("[DONE]");
  });

  it("refuses chat on a model with no chat template, naming where one goes", async () => {
    const res = await post("/v1/chat/completions", { model: "no_template", messages: [{ role: "user", content: "x" }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toEqual({
      message:
        "model 'no_template' has no chat template: chat needs chat_template.jinja, or tokenizer_config.json with a chat_template, in the model's folder (see docs/openai.md); /v1/completions takes a plain prompt",
      type: "invalid_request_error",
      param: "messages",
      code: null,
    });
  });

  it("leaves usage out where neither the model nor a tokenizer counts", async () => {
    const r = await (await post("/v1/completions", { model: "no_template", prompt: "a b" })).json();
    expect([r.choices[0].text, "usage" in r]).toEqual(["b a", false]);
  });
});

describe("errors and the other routes", () => {
  it("answers an unknown model 404 in OpenAI's shape (code model_not_found), with Triton's detail", async () => {
    const res = await post("/v1/chat/completions", { model: "nope", messages: [{ role: "user", content: "x" }] });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: { message: "Request for unknown model: 'nope' is not found", type: "invalid_request_error", param: null, code: "model_not_found" },
      detail: "Request for unknown model: 'nope' is not found",
    });
  });

  it("refuses bad bodies 400, a body over --http-max-input-size 413, a wrong method 405, an unknown path 404", async () => {
    const bad = await post("/v1/completions", "{");
    expect([bad.status, (await bad.json()).error.message]).toEqual([400, expect.stringMatching(/^failed to parse the request JSON buffer: /)]);
    const array = await post("/v1/completions", "[]");
    expect([array.status, (await array.json()).error.message]).toEqual([400, "the request body must be a JSON object"]);
    const big = await post("/v1/completions", { model: "words", prompt: "x".repeat(LIMIT) });
    expect(big.status).toBe(413);
    expect((await big.json()).error.message).toBe(
      "Request JSON size of more than 4096 exceeds the maximum allowed value of 4096. Use --http-max-input-size to increase the limit.",
    );
    expect((await get("/v1/completions")).status).toBe(405);
    expect((await get("/v2/models")).status).toBe(404);
  });

  it("lists the ready models, each as Triton's frontend describes it", async () => {
    const list = await (await get("/v1/models")).json();
    expect(list.object).toBe("list");
    expect(list.data.map((m: any) => m.id).sort()).toEqual(["no_template", "simple", "vllm_words", "words"]);
    const words = await (await get("/v1/models/words")).json();
    expect(words).toEqual({ id: "words", object: "model", created: expect.any(Number), owned_by: "Triton Inference Server" });
    expect(list.data.find((m: any) => m.id === "words")).toEqual(words);
    const missing = await get("/v1/models/nope");
    expect([missing.status, (await missing.json()).error.message]).toEqual([404, "Unknown model: nope"]);
  });

  it("answers /health/ready 200 while the server is ready", async () => {
    expect((await get("/health/ready")).status).toBe(200);
  });
});
