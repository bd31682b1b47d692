/** #35: the OpenAI request bodies checked field by field, and their mapping to Triton's OpenAI model convention. */
import { describe, expect, it } from "vitest";
import { chatRequest, completionRequest } from "../../../src/frontends/openai/request.ts";
import { DEFAULT_MAX_TOKENS, modelInputs, readOutputs } from "../../../src/frontends/openai/convention.ts";
import { FieldError } from "../../../src/frontends/openai/errors.ts";
import { signatureOf } from "../../../src/core/signature.ts";
import { bytesToValues, valuesToBytes } from "../../../src/core/tensor-values.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const refusal = (f: () => unknown): { param: string | undefined; message: string } => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(FieldError);
    return { param: (err as FieldError).param, message: (err as FieldError).message };
  }
  throw new Error("not refused");
};

describe("completionRequest and chatRequest", () => {
  it("read the fields OpenAI's clients send, unset sampling fields absent", () => {
    expect(
      completionRequest({
        model: "m",
        prompt: "hi",
        max_tokens: 5,
        temperature: 0.5,
        stop: "x",
        stream: true,
        stream_options: { include_usage: true },
        n: 2,
        echo: true,
        user: "ignored",
      }),
    ).toEqual({
      kind: "completion",
      model: "m",
      prompt: "hi",
      stream: true,
      includeUsage: true,
      n: 2,
      echo: true,
      sampling: { max_tokens: 5, temperature: 0.5, stop: ["x"] },
    });
    expect(completionRequest({ model: "m", prompt: "hi", temperature: null, stop: null })).toEqual({
      kind: "completion",
      model: "m",
      prompt: "hi",
      stream: false,
      includeUsage: false,
      n: 1,
      sampling: {},
    });
  });

  it("take max_completion_tokens before the deprecated max_tokens in chat", () => {
    const messages = [{ role: "user", content: "hi" }];
    expect(chatRequest({ model: "m", messages, max_completion_tokens: 3, max_tokens: 9 }).sampling).toEqual({ max_tokens: 3 });
    expect(chatRequest({ model: "m", messages, max_tokens: 9 }).sampling).toEqual({ max_tokens: 9 });
  });

  it("keep text content parts, name and tool_call_id for the chat template", () => {
    const r = chatRequest({
      model: "m",
      messages: [
        { role: "system", content: null },
        { role: "user", content: [{ type: "text", text: "a" }], name: "ann" },
        { role: "tool", content: "r", tool_call_id: "c1" },
      ],
    });
    expect(r.messages).toEqual([
      { role: "system", content: null },
      { role: "user", content: [{ type: "text", text: "a" }], name: "ann" },
      { role: "tool", content: "r", tool_call_id: "c1" },
    ]);
  });

  it.each([
    [{ prompt: "x" }, "model", "'model' must be the name of a model"],
    [{ model: "m", prompt: "" }, "prompt", "prompt must be non-empty"],
    [{ model: "m", prompt: ["a", "b"] }, "prompt", "only single string input is supported"],
    [{ model: "m", prompt: "x", suffix: "y" }, "suffix", "suffix is not currently supported"],
    [{ model: "m", prompt: "x", logit_bias: { "1": 2 } }, "logit_bias", "logit bias is not supported"],
    [{ model: "m", prompt: "x", best_of: 2 }, "best_of", "Received best_of=2, but only single choice (best_of=1) is currently supported"],
    [{ model: "m", prompt: "x", logprobs: 1 }, "logprobs", "logprobs are not supported"],
    [{ model: "m", prompt: "x", stream_options: { include_usage: true } }, "stream_options", "`stream_options` can only be used when `stream` is True"],
    [{ model: "m", prompt: "x", n: 129 }, "n", "'n' must be an integer from 1 to 128"],
    [{ model: "m", prompt: "x", temperature: 3 }, "temperature", "'temperature' must be a number from 0 to 2"],
    [{ model: "m", prompt: "x", top_p: "1" }, "top_p", "'top_p' must be a number from 0 to 1"],
    [{ model: "m", prompt: "x", max_tokens: 0 }, "max_tokens", "'max_tokens' must be an integer from 1 to 2147483647"],
    [{ model: "m", prompt: "x", stop: ["a", "b", "c", "d", "e"] }, "stop", "'stop' must be a non-empty string or an array of at most 4 non-empty strings"],
    [{ model: "m", prompt: "x", stream: "yes" }, "stream", "'stream' must be true or false"],
  ])("refuse a completion body %j (%s)", (body, param, message) => {
    expect(refusal(() => completionRequest(body as Record<string, unknown>))).toEqual({ param, message });
  });

  it.each([
    [{ model: "m" }, "messages", "'messages' must be a non-empty array"],
    [{ model: "m", messages: [] }, "messages", "'messages' must be a non-empty array"],
    [{ model: "m", messages: ["hi"] }, "messages[0]", "messages[0] must be an object"],
    [{ model: "m", messages: [{ content: "hi" }] }, "messages[0].role", "messages[0].role must be a string"],
    [
      { model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x" } }] }] },
      "messages[0].content[0]",
      "only text message is supported, but got image_url",
    ],
    [{ model: "m", messages: [{ role: "user", content: 7 }] }, "messages[0].content", "messages[0].content must be a string or an array of content parts"],
    [
      { model: "m", messages: [{ role: "user", content: "x" }], tools: [{ type: "function" }] },
      "tools",
      "'tools' is not supported: tool calling needs a tool-call parser, which Nereid does not have",
    ],
    [{ model: "m", messages: [{ role: "user", content: "x" }], logprobs: true }, "logprobs", "logprobs are not supported"],
    [{ model: "m", messages: [{ role: "user", content: "x" }], logit_bias: {} }, "logit_bias", "logit bias is not currently supported"],
  ])("refuse a chat body %j (%s)", (body, param, message) => {
    expect(refusal(() => chatRequest(body as Record<string, unknown>))).toEqual({ param, message });
  });
});

const input = (name: string, type: string, dims: number[], optional = true) => ({ name, data_type: type, dims, optional });
const output = { name: "text_output", data_type: "TYPE_STRING", dims: [-1] };

/** A model with an input per sampling field, as Triton's TensorRT-LLM format sends them. */
const separate = signatureOf({
  name: "trt",
  max_batch_size: 0,
  input: [
    input("text_input", "TYPE_STRING", [1, 1], false),
    input("stream", "TYPE_BOOL", [1, 1]),
    input("max_tokens", "TYPE_INT32", [1, 1]),
    input("temperature", "TYPE_FP32", [1, 1]),
    input("top_p", "TYPE_FP32", [1, 1]),
    input("seed", "TYPE_UINT64", [1, 1]),
    input("stop_words", "TYPE_STRING", [1, -1]),
    input("exclude_input_in_output", "TYPE_BOOL", [1, 1]),
    input("return_num_input_tokens", "TYPE_BOOL", [1, 1]),
    input("return_num_output_tokens", "TYPE_BOOL", [1, 1]),
  ],
  output: [output],
} as ModelConfig);

/** A batching model with one sampling_parameters input, as Triton's vLLM format sends it. */
const vllm = signatureOf({
  name: "vllm",
  max_batch_size: 4,
  input: [
    input("text_input", "TYPE_STRING", [1], false),
    input("stream", "TYPE_BOOL", [1]),
    input("sampling_parameters", "TYPE_STRING", [1]),
    input("exclude_input_in_output", "TYPE_BOOL", [1]),
    input("return_logprobs", "TYPE_BOOL", [1]),
  ],
  output: [output],
} as ModelConfig);

/** Each input as name → [shape, values] (BYTES as text). */
const view = (inputs: ReturnType<typeof modelInputs>["inputs"]) =>
  Object.fromEntries(
    inputs.map((t) => [
      t.name,
      [t.shape, bytesToValues(t.datatype, t.data).map((v) => (v instanceof Uint8Array ? new TextDecoder().decode(v) : typeof v === "bigint" ? Number(v) : v))],
    ]),
  );

describe("modelInputs: Triton's OpenAI frontend convention", () => {
  it("gives a model with an input per field each field the client set, max_tokens defaulting to 16", () => {
    const r = completionRequest({ model: "trt", prompt: "say hi", temperature: 0.25, top_p: 0.5, seed: 7, stop: ["a", "bc"], stream: true });
    const { inputs, maxTokens } = modelInputs(r, r.prompt!, separate);
    expect(maxTokens).toBe(DEFAULT_MAX_TOKENS);
    expect(view(inputs)).toEqual({
      text_input: [[1, 1], ["say hi"]],
      stream: [[1, 1], [true]],
      max_tokens: [[1, 1], [16]],
      temperature: [[1, 1], [0.25]],
      top_p: [[1, 1], [0.5]],
      seed: [[1, 1], [7]],
      stop_words: [
        [1, 2],
        ["a", "bc"],
      ],
      return_num_input_tokens: [[1, 1], [true]],
      return_num_output_tokens: [[1, 1], [true]],
    });
  });

  it("sends exclude_input_in_output only when echo is given (its TensorRT-LLM format)", () => {
    const r = completionRequest({ model: "trt", prompt: "p", echo: true, max_tokens: 3 });
    const v = view(modelInputs(r, "p", separate).inputs);
    expect([v.exclude_input_in_output, v.max_tokens]).toEqual([
      [[1, 1], [false]],
      [[1, 1], [3]],
    ]);
  });

  it("refuses a field the model has no input for, naming it, and echo without exclude_input_in_output", () => {
    const r = completionRequest({ model: "vllm", prompt: "p", presence_penalty: 1 });
    const plain = signatureOf({ name: "plain", max_batch_size: 0, input: [input("text_input", "TYPE_STRING", [1], false)], output: [output] } as ModelConfig);
    expect(refusal(() => modelInputs(r, "p", plain))).toEqual({
      param: "presence_penalty",
      message: "model 'vllm' does not take 'presence_penalty': it has no 'presence_penalty' input",
    });
    const echo = completionRequest({ model: "plain", prompt: "p", echo: true });
    expect(refusal(() => modelInputs(echo, "p", plain))).toEqual({
      param: "echo",
      message: "model 'plain' cannot echo the prompt: it has no 'exclude_input_in_output' input",
    });
    // The default max_tokens goes only to a model that takes it.
    expect(view(modelInputs(completionRequest({ model: "plain", prompt: "p" }), "p", plain).inputs)).toEqual({ text_input: [[1], ["p"]] });
    expect(modelInputs(completionRequest({ model: "plain", prompt: "p" }), "p", plain).maxTokens).toBeUndefined();
  });

  it("refuses a model without text_input", () => {
    const sig = signatureOf({ name: "x", max_batch_size: 0, input: [input("IN", "TYPE_INT32", [1])], output: [output] } as ModelConfig);
    expect(refusal(() => modelInputs(completionRequest({ model: "x", prompt: "p" }), "p", sig)).message).toBe(
      "model 'x' does not take OpenAI requests: it has no 'text_input' input (see docs/openai.md for the convention)",
    );
  });

  it("gives a sampling_parameters model the set fields as JSON, max_tokens always, exclude_input_in_output always (its vLLM format), a batch dim of 1", () => {
    const r = chatRequest({ model: "vllm", messages: [{ role: "user", content: "x" }], temperature: 0, stop: "end", n: 2 });
    expect(view(modelInputs(r, "<prompt>", vllm).inputs)).toEqual({
      text_input: [[1, 1], ["<prompt>"]],
      stream: [[1, 1], [false]],
      sampling_parameters: [[1, 1], [JSON.stringify({ temperature: 0, stop: ["end"], max_tokens: 16 })]],
      exclude_input_in_output: [[1, 1], [true]],
      return_logprobs: [[1, 1], [false]],
    });
  });

  it("asks a model with return_finish_reason (the vLLM backend's) for its finish_reason, and reads stop or length from it, not vLLM's None", () => {
    const sig = signatureOf({
      name: "fr",
      max_batch_size: 1,
      input: [input("text_input", "TYPE_STRING", [1], false), input("return_finish_reason", "TYPE_BOOL", [1])],
      output: [output, { name: "finish_reason", data_type: "TYPE_STRING", dims: [1] }],
    } as ModelConfig);
    const r = completionRequest({ model: "fr", prompt: "p" });
    expect(view(modelInputs(r, "p", sig).inputs)).toEqual({ text_input: [[1, 1], ["p"]], return_finish_reason: [[1, 1], [true]] });
    const response = (reason: string) => ({
      modelName: "fr",
      modelVersion: "1",
      outputs: [
        { name: "text_output", datatype: "BYTES" as const, shape: [1, 1], data: valuesToBytes("BYTES", ["x"], "test") },
        { name: "finish_reason", datatype: "BYTES" as const, shape: [1, 1], data: valuesToBytes("BYTES", [reason], "test") },
      ],
    });
    expect(["stop", "length", "None", "abort"].map((reason) => readOutputs(response(reason)).finishReason)).toEqual(["stop", "length", undefined, undefined]);
  });
});
