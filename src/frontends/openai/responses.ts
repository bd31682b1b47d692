/**
 * @module The JSON OpenAI answers with: a completion or chat completion whole, and the
 * chunks of a streamed one (`text_completion` chunks carry `text`, `chat.completion.chunk`
 * chunks a `delta`, the first per choice with the role, as Triton's frontend sends them).
 */
import { randomUUID } from "node:crypto";
import type { Generation, Step, Usage } from "./generation.ts";
import type { OpenAiRequest } from "./request.ts";

type FinishReason = "stop" | "length" | null;

/** What every answer and chunk of one request shares. */
function header(r: OpenAiRequest, object: string) {
  return { id: `cmpl-${randomUUID()}`, object, created: Math.floor(Date.now() / 1000), model: r.model, system_fingerprint: null };
}

/** The whole answer of a request that did not stream. */
export function fullAnswer(r: OpenAiRequest, gen: Generation): object {
  const choices = Array.from({ length: gen.n }, (_, index) => {
    const finish_reason = gen.finishReason(index);
    const text = gen.text(index);
    return r.kind === "chat"
      ? { index, message: { role: "assistant", content: text }, logprobs: null, finish_reason }
      : { index, text, logprobs: null, finish_reason };
  });
  const usage = gen.usage();
  return { ...header(r, r.kind === "chat" ? "chat.completion" : "text_completion"), choices, ...(usage ? { usage } : {}) };
}

/** The chunks of one streamed answer, all with the same id and creation time. */
export interface ChunkWriter {
  readonly includeUsage: boolean;
  /** What goes before any text: the role of each chat choice. */
  opening(n: number): object[];
  step(step: Step, finish: FinishReason): object;
  usage(usage: Usage): object;
}

export function chunkWriter(r: OpenAiRequest): ChunkWriter {
  const chat = r.kind === "chat";
  const head = header(r, chat ? "chat.completion.chunk" : "text_completion");
  const chunk = (choice: object) => ({ ...head, choices: [choice] });
  return {
    includeUsage: r.includeUsage,
    opening: (n) =>
      chat ? Array.from({ length: n }, (_, index) => chunk({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null })) : [],
    step: ({ index, delta }, finish_reason) =>
      chunk(
        chat ? { index, delta: delta === "" ? {} : { content: delta }, logprobs: null, finish_reason } : { index, text: delta, logprobs: null, finish_reason },
      ),
    usage: (usage) => ({ ...head, choices: [], usage }),
  };
}
