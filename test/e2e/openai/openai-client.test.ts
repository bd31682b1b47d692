/**
 * #35 acceptance: the official `openai` Python client (PyPI, pinned) drives the compiled
 * binary's OpenAI-compatible frontend (--openai-port): /v1/completions and
 * /v1/chat/completions, streamed and not, on the test models of
 * test/helpers/openai-models.ts; exact text, usage, finish_reason, the error shape of an
 * unknown model and a bad body as the client raises them; and a stream the client closes
 * midway stops the model and counts the request CANCELED, as on generate_stream (item 4).
 * The raw SSE bytes (the [DONE] the client hides) are read with fetch.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { addOpenAiModels } from "../../helpers/openai-models.ts";
import { openaiPython, runOpenAiClient, startOpenAiServer } from "../../helpers/openai-client.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let python: string;
/** The HTTP (/v2) frontend's base URL, for statistics. */
let http: string;

beforeAll(async () => {
  python = openaiPython();
  repo = makeRepository(["simple"]);
  addOpenAiModels(repo);
  ({ server, http } = await startOpenAiServer([`--model-repository=${repo.dir}`]));
}, 900_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const runClient = (script: string) => runOpenAiClient(python, server.url, script);

async function failedCanceled(model: string): Promise<number> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`nv_inference_request_failure{model="${model}",version="1",reason="CANCELED"}`));
  if (line === undefined) throw new Error(`no CANCELED failure count for ${model}:\n${text}`);
  return Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** How many `forever` answers `model` is still producing (its `active` prompt). */
async function active(model: string): Promise<string> {
  const res = await fetch(`${server.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model, prompt: "active" }) });
  return ((await res.json()) as any).choices[0].text;
}

async function stats(model: string) {
  const r = (await (await fetch(`${http}/v2/models/${model}/stats`)).json()) as any;
  return r.model_stats[0].inference_stats;
}

describe("the openai Python client against the binary", () => {
  it("lists the models", async () => {
    const r = await runClient(`print(json.dumps(sorted(m.id for m in client.models.list())))`);
    expect(r).toEqual(["no_template", "simple", "vllm_words", "words"]);
  });

  it("completes, not streamed: text, finish_reason and usage (tokenizer.json counts)", async () => {
    const r = await runClient(`r = client.completions.create(model="words", prompt="one two three four", max_tokens=3)\nprint(json.dumps(r.model_dump()))`);
    expect(r).toMatchObject({
      object: "text_completion",
      model: "words",
      choices: [{ index: 0, text: "four three two", finish_reason: "length" }],
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
  });

  it("completes, streamed: the pieces, finish_reason on the last, the usage chunk", async () => {
    const r = await runClient(
      `s = client.completions.create(model="words", prompt="a b c", stream=True, stream_options={"include_usage": True}, stop=["a"])\n` +
        `print(json.dumps([[[[c.text, c.finish_reason] for c in ch.choices], ch.usage.model_dump() if ch.usage else None] for ch in s]))`,
    );
    expect(r).toEqual([
      [[["c", null]], null],
      [[[" b", "stop"]], null],
      [[], { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, completion_tokens_details: null, prompt_tokens_details: null }],
    ]);
  });

  it("chats, not streamed: the chat template's prompt, the model's own usage counts", async () => {
    const r = await runClient(
      `r = client.chat.completions.create(model="vllm_words", messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}], temperature=0.5)\n` +
        `print(json.dumps(r.model_dump()))`,
    );
    expect(r).toMatchObject({
      object: "chat.completion",
      choices: [
        { index: 0, message: { role: "assistant", content: "[temperature=0.5] [assistant] there hi [user] brief be [system]" }, finish_reason: "stop" },
      ],
      // "[system] be brief [user] hi there [assistant]": 7 words; 8 in the answer.
      usage: { prompt_tokens: 7, completion_tokens: 8, total_tokens: 15 },
    });
  });

  it("chats, streamed: the role first, the deltas, finish_reason, n choices", async () => {
    const r = await runClient(
      `s = client.chat.completions.create(model="words", messages=[{"role": "user", "content": "hi there"}], stream=True, n=2, max_tokens=3)\n` +
        `print(json.dumps([[c.index, c.delta.role, c.delta.content, c.finish_reason] for ch in s for c in ch.choices]))`,
    );
    for (const index of [0, 1]) {
      expect(r.filter((c: unknown[]) => c[0] === index).map((c: unknown[]) => c.slice(1))).toEqual([
        ["assistant", "", null],
        [null, "assistant:", null],
        [null, " there", null],
        [null, " hi", "length"],
      ]);
    }
  });

  it("raises NotFoundError for an unknown model and BadRequestError for a bad body, with OpenAI's error fields", async () => {
    const r = await runClient(
      `out = []\n` +
        `for call in [lambda: client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}]), lambda: client.completions.create(model="words", prompt="x", temperature=5)]:\n` +
        `    try:\n        call()\n    except openai.APIStatusError as e:\n        out.append([type(e).__name__, e.status_code, e.message, e.code, e.param, e.type])\n` +
        `print(json.dumps(out))`,
    );
    expect(r).toEqual([
      ["NotFoundError", 404, "Error code: 404 - Request for unknown model: 'nope' is not found", "model_not_found", null, "invalid_request_error"],
      ["BadRequestError", 400, "Error code: 400 - 'temperature' must be a number from 0 to 2", null, "temperature", "invalid_request_error"],
    ]);
  });

  it("raises the model's failure mid-stream as an APIError", async () => {
    const r = await runClient(
      `got = []\ntry:\n    for ch in client.completions.create(model="words", prompt="fail", stream=True):\n        got.append(ch.choices[0].text)\n` +
        `except openai.APIError as e:\n    got.append(["error", e.message])\nprint(json.dumps(got))`,
    );
    expect(r).toEqual(["partial", ["error", "the model failed"]]);
  });

  it("a stream the client closes midway stops the model and counts the request CANCELED, as generate_stream (#35 item 4)", async () => {
    const before = await failedCanceled("words");
    const failBefore = (await stats("words")).fail.count;
    const r = await runClient(
      `s = client.chat.completions.create(model="words", messages=[{"role": "user", "content": "go on forever"}], stream=True)\n` +
        `got = [next(s).choices[0].delta.content for _ in range(4)]\ns.close()\nprint(json.dumps(got))`,
    );
    expect(r).toEqual(["", "tick ", "tick ", "tick "]);
    while ((await active("words")) !== "0") await new Promise((res) => setTimeout(res, 10));
    while ((await failedCanceled("words")) !== before + 1) await new Promise((res) => setTimeout(res, 10));
    expect((await stats("words")).fail.count).toBe(failBefore + 1);
    const pending = (await (await fetch(`${server.metricsUrl}/metrics`)).text())
      .split("\n")
      .find((l) => l.startsWith('nv_inference_pending_request_count{model="words"'));
    expect(pending?.endsWith(" 0")).toBe(true);
  });
});

describe("the wire under the client", () => {
  it("ends a stream with data: [DONE] after the last chunk", async () => {
    const res = await fetch(`${server.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "words", prompt: "x y", stream: true }) });
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const text = await res.text();
    const events = text.split("\n\n");
    expect(events.slice(-2)).toEqual(["data: [DONE]", ""]);
    expect(events.slice(0, -2).map((e) => JSON.parse(e.slice("data: ".length)).choices[0].text)).toEqual(["y", " x"]);
  });

  it("refuses a body over --http-max-input-size with 413 and a client going away before the answer cancels it too", async () => {
    const big = await fetch(`${server.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "words", prompt: "x".repeat(64 * 1024 * 1024) }) });
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).error.message).toMatch(/^Request JSON size of \d+ exceeds the maximum allowed value of 67108864/);
    const before = await failedCanceled("vllm_words");
    const controller = new AbortController();
    const answer = fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "vllm_words", prompt: "go forever" }),
      signal: controller.signal,
    }).catch((e: Error) => e.name);
    while ((await active("vllm_words")) !== "1") await new Promise((res) => setTimeout(res, 10));
    controller.abort();
    expect(await answer).toBe("AbortError");
    while ((await active("vllm_words")) !== "0") await new Promise((res) => setTimeout(res, 10));
    while ((await failedCanceled("vllm_words")) !== before + 1) await new Promise((res) => setTimeout(res, 10));
  });
});

describe("off by default", () => {
  it("starts no OpenAI listener without --openai-port, and the HTTP port does not serve /v1", async () => {
    const plain = await startServerProcess([`--model-repository=${repo.dir}`]);
    try {
      expect(plain.log()).not.toMatch(/OpenAI/);
      expect((await fetch(`${plain.url}/v1/models`)).status).toBe(404);
    } finally {
      await plain.stop();
    }
  });
});
