/**
 * @module A load failure's message as clients see it (the load's error, the repository
 * index's `reason`, the status page, the model table): the message without its stack
 * trace and without the server's absolute paths. The whole message goes to the log.
 */

/** A stack frame line (V8, JavaScriptCore and Bun write `    at f (file:line:col)`). */
const FRAME = /^\s+at\s.*$|^\s*[\w$.<>]*@\S+:\d+:\d+$/;

/** An absolute path (or file: URL) where a word starts: `/a/b/c`, `'/x/y.ts:3:5'`, `file:///x/y`. */
const ABSOLUTE_PATH = /(?<=^|[\s'"`(=[])(?:file:\/\/)?\/(?:[^\s'"`():/]+\/)*[^\s'"`():/]+/g;

/**
 * `message` for clients: stack frame lines dropped; the model folder `modelDir` written as
 * the model's name (`/models/m/1/model.ts` → `m/1/model.ts`); any other absolute path
 * cut to its last segment.
 */
export function clientReason(message: string, modelDir: string, name: string): string {
  const lines = message.split("\n").filter((l) => !FRAME.test(l));
  let text = lines.join("\n").trimEnd();
  if (modelDir !== "") text = text.split(`file://${modelDir}`).join(name).split(modelDir).join(name);
  return text.replace(ABSOLUTE_PATH, (p) => p.slice(p.lastIndexOf("/") + 1));
}
