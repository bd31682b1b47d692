/**
 * @module The streamed answer of /v1/completions and /v1/chat/completions as OpenAI
 * sends it (`text/event-stream`): `data: <chunk JSON>\n\n` events, the usage chunk when
 * stream_options.include_usage asked for it (and a count exists), then `data: [DONE]\n\n`.
 * An error after the first event is an event of its own in OpenAI's error shape (the
 * official clients raise it), and the stream ends there, without [DONE].
 */
import { errorObject } from "./errors.ts";
import type { Generation, Step } from "./generation.ts";
import type { ChunkWriter } from "./responses.ts";

export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

export const sseEvent = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const SSE_DONE = "data: [DONE]\n\n";

/** The events of a streamed answer; `first` is the generation's first step, already taken (an error before it is an HTTP error instead). */
export async function* sseStream(gen: Generation, steps: AsyncGenerator<Step>, first: IteratorResult<Step>, chunks: ChunkWriter): AsyncGenerator<string> {
  try {
    for (const head of chunks.opening(gen.n)) yield sseEvent(head);
    let next = first;
    while (!next.done) {
      const step = next.value;
      if (step.delta !== "" || step.final) yield sseEvent(chunks.step(step, step.final ? gen.finishReason(step.index) : null));
      next = await steps.next();
    }
    if (chunks.includeUsage) {
      const usage = gen.usage();
      if (usage) yield sseEvent(chunks.usage(usage));
    }
    yield SSE_DONE;
  } catch (err) {
    yield sseEvent(errorObject(err));
  } finally {
    await steps.return(undefined);
  }
}
