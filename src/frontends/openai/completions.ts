/**
 * @module POST /v1/completions and /v1/chat/completions: the body checked, the prompt
 * made (the chat template for chat), the model's inputs by Triton's convention, the
 * inference run, and the answer written whole or streamed.
 */
import { ServerError } from "../../core/errors.ts";
import { modelInputs } from "./convention.ts";
import { Generation } from "./generation.ts";
import { modelFiles, renderChat } from "../../server/model-files.ts";
import { FieldError } from "./errors.ts";
import { chatRequest, completionRequest } from "./request.ts";
import { chunkWriter, fullAnswer } from "./responses.ts";
import { SSE_HEADERS, sseStream } from "./sse.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";

export async function handleCompletion(server: InferenceServer, req: HttpRequest, doc: Record<string, unknown>, chat: boolean): Promise<HttpResponse> {
  const r = chat ? chatRequest(doc) : completionRequest(doc);
  const resolved = server.resolve(r.model, undefined);
  const files = modelFiles(server, r.model, resolved);
  const prompt = chat ? chatPrompt(() => renderChat(files, r.model, r.messages!)) : r.prompt!;
  // Made once: each choice's request gets its own tensor objects over the same bytes, so n choices of a large prompt hold one copy.
  const { inputs, maxTokens } = modelInputs(r, prompt, resolved.signature());
  const gen = new Generation(server, resolved, {
    model: r.model,
    n: r.n,
    inputs: () => inputs.map((t) => ({ ...t, shape: [...t.shape] })),
    signal: req.signal,
    files,
    prompt,
    addSpecialTokens: !chat,
    maxTokens,
  });
  const steps = gen.steps();
  if (!r.stream) {
    for await (const _ of steps);
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(fullAnswer(r, gen)) };
  }
  // An error before the first response keeps its HTTP status; later ones are events.
  const first = await steps.next();
  return { status: 200, headers: SSE_HEADERS, stream: sseStream(gen, steps, first, chunkWriter(r)) };
}

/** The chat prompt; the template's refusals name the messages (`param`). */
function chatPrompt(render: () => string): string {
  try {
    return render();
  } catch (err) {
    if (err instanceof ServerError && err.code === "INVALID_ARG") throw new FieldError(err.message, "messages");
    throw err;
  }
}
