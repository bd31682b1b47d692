/**
 * @module One OpenAI request's inference: `n` requests to the model (one a choice), their
 * responses merged as they come, each choice's text decoded as UTF-8 across responses,
 * and the usage counts (the model's own `num_input_tokens`/`num_output_tokens` outputs
 * when every choice reported them, as Triton's frontend reads them, else the model's
 * tokenizer.json, else none). All requests carry the client's signal: when the client
 * goes away the server cancels them (counted CANCELED, as generate_stream), and when one
 * fails or the reader stops early the others are cancelled too.
 */
import { ServerError } from "../../core/errors.ts";
import { readOutputs } from "./convention.ts";
import { countTokens, type ModelFiles } from "../../server/model-files.ts";
import type { InferenceServer, ResolvedModel } from "../../server/server.ts";
import type { InferenceRequest, InputTensor, StreamedResponse } from "../../core/request.ts";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A piece of one choice's text; `final` when the choice is complete. */
export interface Step {
  index: number;
  delta: string;
  final: boolean;
}

interface Choice {
  text: string;
  decoder: TextDecoder;
  /** The model's counts (num_input_tokens from the first response that has one, num_output_tokens summed). */
  inputTokens?: number;
  outputTokens?: number;
  /** The model's own finish_reason output, the last one it sent. */
  finishReason?: "stop" | "length";
}

export class Generation {
  readonly #choices: Choice[];
  readonly #events: AsyncGenerator<[number, StreamedResponse]>;
  readonly #files: ModelFiles;
  readonly #prompt: { text: string; addSpecialTokens: boolean };
  readonly #maxTokens: number | undefined;

  constructor(
    server: InferenceServer,
    resolved: ResolvedModel,
    o: {
      model: string;
      n: number;
      inputs: () => InputTensor[];
      signal?: AbortSignal;
      files: ModelFiles;
      prompt: string;
      /** Whether the tokenizer adds its special tokens to the prompt (completions), or the chat template did (chat). */
      addSpecialTokens: boolean;
      maxTokens: number | undefined;
    },
  ) {
    const stop = new AbortController();
    const signal = o.signal ? AbortSignal.any([o.signal, stop.signal]) : stop.signal;
    const streams = Array.from({ length: o.n }, () => {
      const request: InferenceRequest = { modelName: o.model, parameters: {}, inputs: o.inputs(), signal };
      return server.inferStream(request, resolved);
    });
    this.#choices = streams.map(() => ({ text: "", decoder: new TextDecoder("utf-8") }));
    this.#events = merge(streams, stop);
    this.#files = o.files;
    this.#prompt = { text: o.prompt, addSpecialTokens: o.addSpecialTokens };
    this.#maxTokens = o.maxTokens;
  }

  get n(): number {
    return this.#choices.length;
  }

  /** The choices' text as it comes; throws the first error a request ends with. */
  async *steps(): AsyncGenerator<Step> {
    for await (const [index, event] of this.#events) {
      if (event.error) throw event.error;
      const c = this.#choices[index]!;
      let delta = "";
      if (event.response) {
        const out = readOutputs(event.response);
        for (const piece of out.text) delta += c.decoder.decode(piece, { stream: true });
        if (out.inputTokens !== undefined) c.inputTokens ??= out.inputTokens;
        if (out.outputTokens !== undefined) c.outputTokens = (c.outputTokens ?? 0) + out.outputTokens;
        if (out.finishReason !== undefined) c.finishReason = out.finishReason;
      }
      if (event.final) delta += c.decoder.decode();
      c.text += delta;
      yield { index, delta, final: event.final };
    }
  }

  text(index: number): string {
    return this.#choices[index]!.text;
  }

  /** Choice `index`'s completion tokens, by the model's count or the tokenizer's. */
  #completionTokens(index: number): number | undefined {
    const c = this.#choices[index]!;
    return c.outputTokens ?? countTokens(this.#files, c.text, false);
  }

  /** The model's finish_reason output when it sent one; else "length" when the choice reached the max_tokens the model was given, else "stop". */
  finishReason(index: number): "stop" | "length" {
    const model = this.#choices[index]!.finishReason;
    if (model !== undefined) return model;
    const used = this.#completionTokens(index);
    return this.#maxTokens !== undefined && used !== undefined && used >= this.#maxTokens ? "length" : "stop";
  }

  /** The usage of all choices (the prompt counted once), or undefined when neither the model nor a tokenizer counts. */
  usage(): Usage | undefined {
    const model = this.#choices.every((c) => c.inputTokens !== undefined && c.outputTokens !== undefined);
    const prompt = model ? this.#choices[0]!.inputTokens : countTokens(this.#files, this.#prompt.text, this.#prompt.addSpecialTokens);
    if (prompt === undefined) return undefined;
    let completion = 0;
    for (let i = 0; i < this.#choices.length; i++) {
      const c = model ? this.#choices[i]!.outputTokens : countTokens(this.#files, this.#choices[i]!.text, false);
      completion += c!;
    }
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
}

/** The streams' events as they come, tagged with the stream's index; stopping early cancels the streams still running. */
async function* merge(streams: AsyncGenerator<StreamedResponse>[], stop: AbortController): AsyncGenerator<[number, StreamedResponse]> {
  const next = (i: number) =>
    streams[i]!.next().then(
      (r) => ({ i, r }),
      (err: unknown) => ({ i, r: { done: false as const, value: { error: ServerError.from(err), final: true } } }),
    );
  const pending = new Map(streams.map((_, i) => [i, next(i)] as const));
  try {
    while (pending.size > 0) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pending.set(i, next(i));
      yield [i, r.value];
    }
  } finally {
    // An error, a reader gone or a stream left unread: the requests still running are cancelled.
    if (pending.size > 0) stop.abort();
  }
}
