/**
 * Issue #34 item 4: Triton's genai-perf (pinned in test/helpers/perf-analyzer.ts, driving
 * the perf_analyzer of perf-analyzer.test.ts) against the compiled binary, on two small
 * TypeScript models that follow the LLM convention genai-perf expects (text_input,
 * max_tokens, text_output, and the optional exclude_input_in_output and stream):
 *
 * - `llm_stream` (decoupled) streams the prompt's words back one response each, max_tokens
 *   of them, then the final flag alone: genai-perf's kserve endpoint (tensorrtllm backend)
 *   over gRPC ModelStreamInfer.
 * - `llm_whole` answers the same words in one response: genai-perf's generate endpoint
 *   (POST /v2/models/<m>/generate). genai-perf 0.0.16 has no generate_stream endpoint type.
 *
 * genai-perf's request count and output lengths are checked against Nereid's statistics
 * (success, fail and, for the decoupled model, response_stats per response index), and each
 * answer perf_analyzer exported against the prompt it sent. The tokenizer is written at test
 * time (word-level, whitespace), so a text of n words is n tokens and nothing is downloaded.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { genaiPerf, perfAnalyzer, type GenaiPerf } from "../helpers/perf-analyzer.ts";

const INPUTS = `input [
  { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "max_tokens" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "exclude_input_in_output" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "stream" data_type: TYPE_BOOL dims: [ 1 ] optional: true }
]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

/** " w0 w1 ...": max_tokens words of the prompt, from its first, starting again at its end. */
const WORDS = `
const dec = new TextDecoder();
export function words(r) {
  const prompt = dec.decode(r.input("text_input").data[0]).split(/\\s+/).filter((w) => w.length > 0);
  return Array.from({ length: Number(r.input("max_tokens").data[0]) }, (_, i) => \` \${prompt[i % prompt.length] ?? "x"}\`);
}
`;

const STREAM = `
import { words } from "./words.js";
const enc = new TextEncoder();
export default class LlmStream {
  execute(requests) {
    for (const r of requests) {
      const sender = r.getResponseSender();
      for (const w of words(r)) sender.send({ outputs: [{ name: "text_output", datatype: "BYTES", shape: [1], data: [enc.encode(w)] }] });
      sender.send(undefined, { final: true });
    }
  }
}
`;

const WHOLE = `
import { words } from "./words.js";
const enc = new TextEncoder();
export default class LlmWhole {
  execute(requests) {
    return requests.map((r) => ({ outputs: [{ name: "text_output", datatype: "BYTES", shape: [1], data: [enc.encode(words(r).join(""))] }] }));
  }
}
`;

/** What the models answer to `prompt` with max_tokens `n`. */
const expectedWords = (prompt: string, n: number): string[] => {
  const w = prompt.split(/\s+/).filter((x) => x.length > 0);
  return Array.from({ length: n }, (_, i) => ` ${w[i % w.length] ?? "x"}`);
};

const REQUESTS = 20;
const TOKENS = 8;

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let genai: GenaiPerf;
let dir: string;

beforeAll(async () => {
  genai = genaiPerf(perfAnalyzer());
  dir = mkdtempSync(join(tmpdir(), "nereid-genai-perf-"));
  genai.writeTokenizer(join(dir, "tokenizer"));
  repo = makeRepository([]);
  repo.add("llm_stream/config.pbtxt", `name: "llm_stream"\nbackend: "typescript"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n${INPUTS}`);
  repo.add("llm_stream/1/model.js", STREAM);
  repo.add("llm_stream/1/words.js", WORDS);
  repo.add("llm_whole/config.pbtxt", `name: "llm_whole"\nbackend: "typescript"\nmax_batch_size: 0\n${INPUTS}`);
  repo.add("llm_whole/1/model.js", WHOLE);
  repo.add("llm_whole/1/words.js", WORDS);
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
}, 1_200_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function stats(model: string): Promise<any> {
  return ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
}

/** Runs genai-perf profile on `model` and returns its summary and perf_analyzer's export. */
async function profile(name: string, model: string, args: string[]): Promise<{ summary: any; requests: any[] }> {
  const artifacts = join(dir, name);
  await genai.run(
    [
      "profile",
      "-m",
      model,
      ...args,
      "--concurrency",
      "2",
      "--request-count",
      String(REQUESTS),
      "--output-tokens-mean",
      String(TOKENS),
      "--synthetic-input-tokens-mean",
      "12",
      "--tokenizer",
      join(dir, "tokenizer"),
      "--artifact-dir",
      artifacts,
    ],
    dir,
  );
  // The files are in --artifact-dir itself or in one folder under it, named after the run.
  const at = [artifacts, ...readdirSync(artifacts).map((f) => join(artifacts, f))].find((d) => existsSync(join(d, "profile_export_genai_perf.json")));
  if (!at) throw new Error(`genai-perf wrote no profile_export_genai_perf.json under ${artifacts}`);
  return {
    summary: JSON.parse(readFileSync(join(at, "profile_export_genai_perf.json"), "utf8")),
    requests: JSON.parse(readFileSync(join(at, "profile_export.json"), "utf8")).experiments[0].requests,
  };
}

const constant = (n: number) => expect.objectContaining({ min: n, max: n, avg: n });

describe("genai-perf against the binary", () => {
  it("kserve over gRPC streaming (decoupled): genai-perf's request count and output lengths are Nereid's", async () => {
    const before = await stats("llm_stream");
    const { summary, requests } = await profile("stream", "llm_stream", [
      "--endpoint-type",
      "kserve",
      "--backend",
      "tensorrtllm",
      "--streaming",
      "-u",
      server.grpcTarget!,
    ]);
    const after = await stats("llm_stream");
    expect(summary.request_count.avg).toBe(REQUESTS);
    expect(summary.output_sequence_length).toEqual(constant(TOKENS));
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(REQUESTS);
    expect(after.inference_stats.fail.count - before.inference_stats.fail.count).toBe(0);
    // One response per token, then the final flag alone: response_stats counts each index.
    for (let i = 0; i < TOKENS; i++) {
      expect(after.response_stats[String(i)].success.count - (before.response_stats[String(i)]?.success.count ?? 0)).toBe(REQUESTS);
    }
    expect(after.response_stats[String(TOKENS)].empty_response.count - (before.response_stats[String(TOKENS)]?.empty_response.count ?? 0)).toBe(REQUESTS);
    expect(requests).toHaveLength(REQUESTS);
    for (const q of requests) {
      expect(q.request_inputs.max_tokens).toBe(TOKENS);
      expect(q.response_outputs).toEqual([...expectedWords(q.request_inputs.text_input, TOKENS).map((w) => ({ text_output: w })), { text_output: "" }]);
    }
  });

  it("generate over HTTP: genai-perf's request count and output lengths are Nereid's, each answer its prompt's words", async () => {
    const before = await stats("llm_whole");
    const { summary, requests } = await profile("whole", "llm_whole", ["--endpoint-type", "generate", "-u", server.url.replace("http://", "")]);
    const after = await stats("llm_whole");
    expect(summary.request_count.avg).toBe(REQUESTS);
    expect(summary.output_sequence_length).toEqual(constant(TOKENS));
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(REQUESTS);
    expect(after.inference_stats.fail.count - before.inference_stats.fail.count).toBe(0);
    expect(requests).toHaveLength(REQUESTS);
    for (const q of requests) {
      const payload = JSON.parse(q.request_inputs.payload);
      expect(payload.max_tokens).toBe(TOKENS);
      expect(q.response_outputs).toHaveLength(1);
      expect(JSON.parse(q.response_outputs[0].response)).toEqual({
        model_name: "llm_whole",
        model_version: "1",
        text_output: expectedWords(payload.text_input[0], TOKENS).join(""),
      });
    }
  });
});
