/**
 * @module The body of POST /v1/completions and /v1/chat/completions, checked field by
 * field into an OpenAiRequest. What Triton's frontend refuses is refused here with its
 * message (logit_bias, logprobs, suffix, best_of > 1, a prompt that is not one non-empty
 * string, non-text message parts, tools without a tool-call parser, stream_options without
 * stream); unknown fields are ignored, as OpenAI's clients send extras.
 */
import { badField } from "./errors.ts";

/** The sampling fields a request set (unset ones are absent: the model's defaults apply). */
export interface Sampling {
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  seed?: number;
  stop?: string[];
}

/** A chat message as the chat template sees it (Triton's frontend passes the same fields). */
export interface ChatMessage {
  role: string;
  content: string | null | { type: "text"; text: string }[];
  name?: string;
  tool_call_id?: string;
}

export interface OpenAiRequest {
  kind: "completion" | "chat";
  model: string;
  /** /v1/completions: the prompt. */
  prompt?: string;
  /** /v1/chat/completions: the conversation. */
  messages?: ChatMessage[];
  stream: boolean;
  /** stream_options.include_usage: a last chunk with the usage (streaming only). */
  includeUsage: boolean;
  /** Choices: each is one inference request to the model. */
  n: number;
  /** /v1/completions `echo`, when given. */
  echo?: boolean;
  sampling: Sampling;
}

/** The most choices one request may ask for (OpenAI's own limit). */
export const MAX_CHOICES = 128;

type Doc = Record<string, unknown>;

const given = (doc: Doc, key: string) => doc[key] !== undefined && doc[key] !== null;

function number(doc: Doc, key: string, lo: number, hi: number, integer = false): number | undefined {
  if (!given(doc, key)) return undefined;
  const v = doc[key];
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < lo || v > hi) {
    throw badField(key, `'${key}' must be ${integer ? "an integer" : "a number"} from ${lo} to ${hi}`);
  }
  return v;
}

function bool(doc: Doc, key: string): boolean | undefined {
  if (!given(doc, key)) return undefined;
  if (typeof doc[key] !== "boolean") throw badField(key, `'${key}' must be true or false`);
  return doc[key] as boolean;
}

function stop(doc: Doc): string[] | undefined {
  if (!given(doc, "stop")) return undefined;
  const v = doc.stop;
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length > 4 || !list.every((s) => typeof s === "string" && s.length > 0)) {
    throw badField("stop", "'stop' must be a non-empty string or an array of at most 4 non-empty strings");
  }
  return list.length > 0 ? (list as string[]) : undefined;
}

function sampling(doc: Doc, maxTokensKey: "max_tokens" | "max_completion_tokens"): Sampling {
  const s: Sampling = {};
  const max = number(doc, maxTokensKey, 1, 2 ** 31 - 1, true) ?? (maxTokensKey === "max_tokens" ? undefined : number(doc, "max_tokens", 1, 2 ** 31 - 1, true));
  if (max !== undefined) s.max_tokens = max;
  const set = <K extends keyof Sampling>(k: K, v: Sampling[K] | undefined) => {
    if (v !== undefined) s[k] = v;
  };
  set("temperature", number(doc, "temperature", 0, 2));
  set("top_p", number(doc, "top_p", 0, 1));
  set("frequency_penalty", number(doc, "frequency_penalty", -2, 2));
  set("presence_penalty", number(doc, "presence_penalty", -2, 2));
  set("seed", number(doc, "seed", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true));
  set("stop", stop(doc));
  return s;
}

/** The fields both endpoints share. */
function common(doc: Doc, kind: OpenAiRequest["kind"]): OpenAiRequest {
  if (typeof doc.model !== "string" || doc.model === "") throw badField("model", "'model' must be the name of a model");
  if (given(doc, "logit_bias")) throw badField("logit_bias", kind === "chat" ? "logit bias is not currently supported" : "logit bias is not supported");
  const stream = bool(doc, "stream") ?? false;
  let includeUsage = false;
  if (given(doc, "stream_options")) {
    const o = doc.stream_options;
    if (typeof o !== "object" || o === null || Array.isArray(o)) throw badField("stream_options", "'stream_options' must be an object");
    if (!stream) throw badField("stream_options", "`stream_options` can only be used when `stream` is True");
    includeUsage = bool(o as Doc, "include_usage") ?? false;
  }
  const n = number(doc, "n", 1, MAX_CHOICES, true) ?? 1;
  return { kind, model: doc.model, stream, includeUsage, n, sampling: sampling(doc, kind === "chat" ? "max_completion_tokens" : "max_tokens") };
}

/** A /v1/completions body. */
export function completionRequest(doc: Doc): OpenAiRequest {
  const r = common(doc, "completion");
  if (given(doc, "suffix")) throw badField("suffix", "suffix is not currently supported");
  if (typeof doc.prompt !== "string" && given(doc, "prompt")) throw badField("prompt", "only single string input is supported");
  if (typeof doc.prompt !== "string" || doc.prompt === "") throw badField("prompt", "prompt must be non-empty");
  const bestOf = number(doc, "best_of", 1, MAX_CHOICES, true);
  if (bestOf !== undefined && bestOf > 1) throw badField("best_of", `Received best_of=${bestOf}, but only single choice (best_of=1) is currently supported`);
  if (given(doc, "logprobs") && doc.logprobs !== 0) throw badField("logprobs", "logprobs are not supported");
  r.prompt = doc.prompt;
  const echo = bool(doc, "echo");
  if (echo !== undefined) r.echo = echo;
  return r;
}

/** A /v1/chat/completions body. */
export function chatRequest(doc: Doc): OpenAiRequest {
  const r = common(doc, "chat");
  if (doc.logprobs === true || given(doc, "top_logprobs")) throw badField("logprobs", "logprobs are not supported");
  for (const key of ["tools", "tool_choice", "functions", "function_call"]) {
    if (given(doc, key)) throw badField(key, `'${key}' is not supported: tool calling needs a tool-call parser, which Nereid does not have`);
  }
  if (!Array.isArray(doc.messages) || doc.messages.length === 0) throw badField("messages", "'messages' must be a non-empty array");
  r.messages = doc.messages.map((m, i) => chatMessage(m, i));
  return r;
}

function chatMessage(m: unknown, i: number): ChatMessage {
  const param = `messages[${i}]`;
  if (typeof m !== "object" || m === null || Array.isArray(m)) throw badField(param, `${param} must be an object`);
  const doc = m as Doc;
  if (typeof doc.role !== "string" || doc.role === "") throw badField(`${param}.role`, `${param}.role must be a string`);
  const out: ChatMessage = { role: doc.role, content: messageContent(doc.content, `${param}.content`) };
  for (const key of ["name", "tool_call_id"] as const) {
    if (!given(doc, key)) continue;
    if (typeof doc[key] !== "string") throw badField(`${param}.${key}`, `${param}.${key} must be a string`);
    out[key] = doc[key] as string;
  }
  return out;
}

function messageContent(content: unknown, param: string): ChatMessage["content"] {
  if (content === undefined || content === null) return null;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw badField(param, `${param} must be a string or an array of content parts`);
  return content.map((part, j) => {
    const p = part as Doc | null;
    const type = typeof p === "object" && p !== null ? p.type : undefined;
    if (type !== "text") throw badField(`${param}[${j}]`, `only text message is supported, but got ${typeof type === "string" ? type : "no type"}`);
    if (typeof p!.text !== "string") throw badField(`${param}[${j}].text`, `${param}[${j}].text must be a string`);
    return { type: "text" as const, text: p!.text as string };
  });
}
