/**
 * @module The files beside a model that the OpenAI-compatible frontend uses: its chat
 * template and its tokenizer. Each is looked for in the version folder (`<model>/<version>/`) first,
 * then in the model folder (`<model>/`):
 *
 * - the chat template: `chat_template.jinja`, else the `chat_template` of
 *   `tokenizer_config.json` (a string, or a list of `{name, template}` of which the one
 *   named "default" is used), as Hugging Face's tokenizers keep it; rendered with
 *   @huggingface/jinja with `messages`, `add_generation_prompt: true` and the special
 *   tokens of `tokenizer_config.json` (`bos_token`, `eos_token`, ...), as
 *   `apply_chat_template` renders it;
 * - the tokenizer: `tokenizer.json` (with `tokenizer_config.json`), read by
 *   @huggingface/tokenizers, used only to count tokens for `usage` when the model does
 *   not report its own counts.
 *
 * The files are read once per loaded model version (a reload reads them again). Only the
 * model's own folder is read, found from the model's name; a client never names a path.
 * Messages name files relative to the repository, never by their full path.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { internal, invalidArg } from "../core/errors.ts";
import type { ModelVersion } from "../repository/model-version.ts";
import type { InferenceServer, ResolvedModel } from "./server.ts";

export interface ModelFiles {
  /** The chat template, parsed, and the file it came from (relative to the repository). */
  template?: { parsed: Template; source: string };
  /** The special tokens the template may use (bos_token, eos_token, ...). */
  specialTokens: Record<string, string>;
  tokenizer?: Tokenizer;
}

const cache = new WeakMap<ModelVersion, ModelFiles>();

/** The chat template and tokenizer of model `name` as `server.resolve` found it, read on the version's first use. */
export function modelFiles(server: InferenceServer, name: string, resolved: ResolvedModel): ModelFiles {
  const mv = server.modelForInference(name, undefined, false, resolved.version);
  let files = cache.get(mv);
  if (!files) {
    files = readModelFiles(mv);
    cache.set(mv, files);
  }
  return files;
}

function readModelFiles(mv: ModelVersion): ModelFiles {
  const folders = [
    { dir: join(mv.modelDir, String(mv.version)), shown: `${mv.name}/${mv.version}` },
    { dir: mv.modelDir, shown: mv.name },
  ];
  const find = (file: string) => {
    for (const f of folders) {
      const path = join(f.dir, file);
      if (existsSync(path)) return { text: readFileSync(path, "utf8"), shown: `${f.shown}/${file}` };
    }
    return undefined;
  };
  const json = (file: string): { value: Record<string, unknown>; shown: string } | undefined => {
    const found = find(file);
    if (!found) return undefined;
    try {
      const value = JSON.parse(found.text) as unknown;
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not a JSON object");
      return { value: value as Record<string, unknown>, shown: found.shown };
    } catch (err) {
      throw internal(`model '${mv.name}': cannot read ${found.shown}: ${(err as Error).message}`);
    }
  };
  const config = json("tokenizer_config.json");
  const files: ModelFiles = { specialTokens: specialTokens(config?.value ?? {}) };
  const jinja = find("chat_template.jinja");
  const text = jinja ? { template: jinja.text, shown: jinja.shown } : config && configTemplate(config.value, config.shown);
  if (text) {
    try {
      files.template = { parsed: new Template(text.template), source: text.shown };
    } catch (err) {
      throw internal(`model '${mv.name}': the chat template in ${text.shown} does not parse: ${(err as Error).message}`);
    }
  }
  const tokenizer = json("tokenizer.json");
  if (tokenizer) {
    try {
      files.tokenizer = new Tokenizer(tokenizer.value, config?.value ?? {});
    } catch (err) {
      throw internal(`model '${mv.name}': cannot load the tokenizer in ${tokenizer.shown}: ${(err as Error).message}`);
    }
  }
  return files;
}

/** tokenizer_config.json's chat_template: a string, or the "default" of a list of named templates. */
function configTemplate(config: Record<string, unknown>, shown: string): { template: string; shown: string } | undefined {
  const t = config.chat_template;
  if (typeof t === "string") return { template: t, shown };
  if (Array.isArray(t)) {
    const named = t.find((e) => typeof e === "object" && e !== null && (e as { name?: unknown }).name === "default") as { template?: unknown } | undefined;
    if (typeof named?.template === "string") return { template: named.template, shown };
  }
  return undefined;
}

/** The *_token entries of tokenizer_config.json as strings (an AddedToken object gives its content). */
function specialTokens(config: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.endsWith("_token")) continue;
    if (typeof value === "string") out[key] = value;
    else if (typeof value === "object" && value !== null && typeof (value as { content?: unknown }).content === "string") {
      out[key] = (value as { content: string }).content;
    }
  }
  return out;
}

/** The chat prompt for `messages`: the model's chat template rendered, ending with the assistant's turn. */
export function renderChat(files: ModelFiles, model: string, messages: readonly object[]): string {
  if (!files.template) {
    throw invalidArg(
      `model '${model}' has no chat template: chat needs chat_template.jinja, or tokenizer_config.json with a chat_template, in the model's folder (see docs/openai.md); /v1/completions takes a plain prompt`,
    );
  }
  try {
    return files.template.parsed.render({ ...files.specialTokens, messages, add_generation_prompt: true });
  } catch (err) {
    throw invalidArg(`the chat template of model '${model}' (${files.template.source}) refused the messages: ${(err as Error).message}`);
  }
}

/** Tokens in `text` by the model's tokenizer, or undefined without one. */
export function countTokens(files: ModelFiles, text: string, addSpecialTokens: boolean): number | undefined {
  return files.tokenizer?.encode(text, { add_special_tokens: addSpecialTokens }).ids.length;
}
