/**
 * @module Reading a text file of a model repository that the server parses (config.pbtxt,
 * a label file) with a bound on its size (issue #29 item 9): a repository is often written
 * by someone else (a shared folder, a bucket), so a file larger than its bound is refused
 * before it is read, and never more than the bound is read even when the file grows in the
 * meantime. Only regular files are read (a FIFO would block the server).
 *
 * Triton's configs are a few kilobytes. MAX_CONFIG_BYTES (1 MiB) keeps the synchronous
 * parse of the worst config that fits (a million one-digit dims) under a second;
 * label files are split into lines only, and may be as long as a large vocabulary.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { invalidArg, ServerError } from "../core/errors.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

/** The largest config.pbtxt read (1 MiB). */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/** The largest label file read (16 MiB). */
export const MAX_LABEL_FILE_BYTES = 16 * 1024 * 1024;

/** `what` names the file in errors (e.g. "config.pbtxt of model 'x'"), never by its local path. */
export function readRepositoryText(path: string, what: string, max: number): string {
  let fd: number;
  try {
    if (!statSync(path).isFile()) throw invalidArg(`${what} is not a regular file`);
    fd = openSync(path, "r");
  } catch (err) {
    if (err instanceof ServerError) throw err;
    // Node's message holds the local path: the error's code alone goes on.
    throw invalidArg(`unable to read ${what}: ${(err as { code?: string }).code ?? "error"}`);
  }
  try {
    const size = fstatSync(fd).size;
    if (size > max) throw invalidArg(`${what} is ${size} bytes, more than the limit of ${max} bytes`);
    // One byte more than allowed tells a file that grew past the limit since fstat.
    const buf = Buffer.allocUnsafe(Math.min(size, max) + 1);
    let got = 0;
    for (let n: number; got < buf.byteLength && (n = readSync(fd, buf, got, buf.byteLength - got, null)) > 0; ) got += n;
    if (got > max) throw invalidArg(`${what} grew past the limit of ${max} bytes while it was read`);
    return buf.toString("utf8", 0, got);
  } finally {
    closeSync(fd);
  }
}

/**
 * The lines of each output's `label_filename` (the classification extension's labels), read
 * when the version loads, as Triton's model does: a file that cannot be read fails the load.
 */
export function readLabelFiles(modelDir: string, config: ModelConfig): Map<string, string[]> {
  const labels = new Map<string, string[]>();
  for (const output of config.output ?? []) {
    const file = output.label_filename;
    if (!file) continue;
    const text = readRepositoryText(join(modelDir, file), `label file '${file}' of model '${config.name}'`, MAX_LABEL_FILE_BYTES);
    labels.set(output.name ?? "", text.split(/\r?\n/));
  }
  return labels;
}

/** The label files `config` names, relative to the model's folder. */
export function labelFiles(config: ModelConfig): string[] {
  return (config.output ?? []).flatMap((o) => (o.label_filename ? [o.label_filename] : []));
}
