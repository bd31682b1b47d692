/**
 * @module The model-facing convention of Triton's OpenAI frontend (its
 * engine/utils/triton.py), so that a model written for that frontend works here:
 *
 * - `text_input` (BYTES): the prompt, or the chat prompt the model's chat template made;
 * - `stream` (BOOL): whether the client streams;
 * - either one `sampling_parameters` (BYTES) input holding the sampling fields as a JSON
 *   object (Triton's vLLM format: max_tokens, temperature, top_p, stop, seed,
 *   frequency_penalty, presence_penalty), or an input per field (its TensorRT-LLM format,
 *   Triton's default for Python, ensemble and BLS models): `max_tokens`, `temperature`,
 *   `top_p`, `frequency_penalty`, `presence_penalty`, `seed`, `stop_words`. Triton picks
 *   the format by the model's backend (or its --backend flag); Nereid by whether the
 *   model has a `sampling_parameters` input;
 * - `exclude_input_in_output` (or `sampling_param_exclude_input_from_output`) (BOOL): not
 *   `echo`; `return_num_input_tokens`, `return_num_output_tokens` (BOOL): true;
 *   `return_logprobs` (BOOL): false; `return_finish_reason` (BOOL, the vLLM backend's):
 *   true (Triton's frontend does not send it);
 * - outputs: `text_output` (BYTES), each response's piece of the text, and optionally
 *   `num_input_tokens`, `num_output_tokens` (integers) for the usage counts and
 *   `finish_reason` (BYTES, "stop" or "length") for the choice's finish_reason.
 *
 * Every input takes the model's declared type and dims (as the generate extension fills
 * them). Unlike Triton, which sends its inputs whether or not the model declares them,
 * only declared inputs are sent, and a field the client set that the model has no input
 * for is refused (400) rather than dropped.
 */
import { inputTensor } from "../http/generate.ts";
import { bytesToValues } from "../../core/tensor-values.ts";
import { internal } from "../../core/errors.ts";
import { badField } from "./errors.ts";
import type { ModelSignature } from "../../core/signature.ts";
import type { InferenceResponse, InputTensor } from "../../core/request.ts";
import type { OpenAiRequest, Sampling } from "./request.ts";

/** max_tokens when the request gives none: Triton's --default-max-tokens default. */
export const DEFAULT_MAX_TOKENS = 16;

const ECHO_INPUTS = ["exclude_input_in_output", "sampling_param_exclude_input_from_output"];

/** Sampling fields and the input each goes to in the one-input-per-field format. */
const FIELD_INPUTS: readonly (readonly [keyof Sampling, string])[] = [
  ["max_tokens", "max_tokens"],
  ["temperature", "temperature"],
  ["top_p", "top_p"],
  ["frequency_penalty", "frequency_penalty"],
  ["presence_penalty", "presence_penalty"],
  ["seed", "seed"],
  ["stop", "stop_words"],
];

export interface ModelInputs {
  inputs: InputTensor[];
  /** The max_tokens the model was given (undefined when it takes none): a choice that reached it finished for "length". */
  maxTokens: number | undefined;
}

/** The inputs of one inference request for `r` with `prompt`, on the model with signature `sig`. */
export function modelInputs(r: OpenAiRequest, prompt: string, sig: ModelSignature): ModelInputs {
  const has = (name: string) => sig.inputs.has(name);
  if (!has("text_input")) {
    throw badField("model", `model '${r.model}' does not take OpenAI requests: it has no 'text_input' input (see docs/openai.md for the convention)`);
  }
  const inputs: InputTensor[] = [];
  const add = (name: string, value: unknown) => inputs.push(inputTensor(sig, name, value, "OpenAI request: the value for input"));
  add("text_input", prompt);
  if (has("stream")) add("stream", r.stream);
  const echoInput = ECHO_INPUTS.find(has);
  if (r.echo === true && echoInput === undefined) {
    throw badField("echo", `model '${r.model}' cannot echo the prompt: it has no 'exclude_input_in_output' input`);
  }
  const maxTokens = r.sampling.max_tokens ?? DEFAULT_MAX_TOKENS;
  let took: number | undefined;
  if (has("sampling_parameters")) {
    add("sampling_parameters", JSON.stringify({ ...r.sampling, max_tokens: maxTokens }));
    took = maxTokens;
    // Triton's vLLM format always sends it: the prompt is left out unless echo is true.
    if (echoInput) add(echoInput, r.echo !== true);
  } else {
    for (const [field, input] of FIELD_INPUTS) {
      const value = field === "max_tokens" ? maxTokens : r.sampling[field];
      if (value === undefined) continue;
      if (!has(input)) {
        if (r.sampling[field] === undefined) continue;
        throw badField(field, `model '${r.model}' does not take '${field}': it has no '${input}' input`);
      }
      add(input, value);
      if (field === "max_tokens") took = maxTokens;
    }
    if (echoInput && r.echo !== undefined) add(echoInput, !r.echo);
  }
  for (const name of ["return_num_input_tokens", "return_num_output_tokens", "return_finish_reason"]) if (has(name)) add(name, true);
  if (has("return_logprobs")) add("return_logprobs", false);
  return { inputs, maxTokens: took };
}

/** What one of the model's responses carries: its `text_output` elements, token counts and finish reason. */
export interface ModelOutput {
  text: Uint8Array[];
  inputTokens?: number;
  outputTokens?: number;
  /** The model's `finish_reason` when it is one OpenAI knows ("stop", "length"); vLLM's "None" and others are left out. */
  finishReason?: "stop" | "length";
}

export function readOutputs(r: InferenceResponse): ModelOutput {
  const out: ModelOutput = { text: [] };
  for (const t of r.outputs) {
    if (t.name === "text_output") {
      if (t.datatype !== "BYTES") throw internal(`model '${r.modelName}' answered 'text_output' as ${t.datatype}, not BYTES`);
      out.text = bytesToValues("BYTES", t.data) as Uint8Array[];
    } else if ((t.name === "num_input_tokens" || t.name === "num_output_tokens") && t.datatype !== "BYTES" && t.data.byteLength > 0) {
      const n = Number(bytesToValues(t.datatype, t.data)[0]);
      if (t.name === "num_input_tokens") out.inputTokens = n;
      else out.outputTokens = n;
    } else if (t.name === "finish_reason" && t.datatype === "BYTES") {
      const first = bytesToValues("BYTES", t.data)[0];
      const reason = first instanceof Uint8Array ? new TextDecoder().decode(first) : undefined;
      if (reason === "stop" || reason === "length") out.finishReason = reason;
    }
  }
  return out;
}
