/**
 * @module Parsing of object-storage repository URLs (issue #21 item 4), as Triton core's
 * src/filesystem/ implementations read them: s3://[http(s)://]host:port/bucket/path or
 * s3://bucket/path, as://account/container/path (Azure Blob), gs://bucket/path.
 * Only parsing and key safety live here; remote-repository.ts copies the repository.
 */
import { posix } from "node:path";
import { invalidArg } from "../core/errors.ts";

export type ObjectStoreUrl =
  | { scheme: "s3"; endpoint?: string; bucket: string; prefix: string }
  | { scheme: "as"; account: string; container: string; prefix: string }
  | { scheme: "gs"; bucket: string; prefix: string };

/** True when a --model-repository value names object storage rather than a local folder. */
export function isObjectStoreUrl(path: string): boolean {
  return /^(s3|as|gs):\/\//.test(path);
}

const trimSlashes = (s: string) => s.replace(/^\/+|\/+$/g, "");

/** Parses an object-storage repository URL; throws INVALID_ARG on a malformed one. */
export function parseObjectStoreUrl(url: string): ObjectStoreUrl {
  const m = /^(s3|as|gs):\/\/(.*)$/.exec(url);
  if (!m) throw invalidArg(`not an object-storage URL: ${url}`);
  const scheme = m[1] as "s3" | "as" | "gs";
  const rest = m[2]!;
  if (scheme === "s3") {
    // Triton: s3://[http://|https://]host:port/bucket/path names a custom endpoint.
    const ep = /^((?:https?:\/\/)?)([0-9A-Za-z.-]+):([0-9]+)\/(.*)$/.exec(rest);
    if (ep) {
      const [bucket = "", ...parts] = trimSlashes(ep[4]!).split("/");
      if (!bucket) throw invalidArg(`no bucket in S3 URL: ${url}`);
      const endpoint = `${ep[1] || "http://"}${ep[2]}:${ep[3]}`;
      return { scheme, endpoint, bucket, prefix: parts.join("/") };
    }
    const [bucket = "", ...parts] = trimSlashes(rest).split("/");
    if (!bucket) throw invalidArg(`no bucket in S3 URL: ${url}`);
    return { scheme, bucket, prefix: parts.join("/") };
  }
  if (scheme === "as") {
    const [account = "", container = "", ...parts] = trimSlashes(rest).split("/");
    if (!account || !container) throw invalidArg(`Azure URL needs as://account/container[/path]: ${url}`);
    return { scheme, account, container, prefix: parts.join("/") };
  }
  const [bucket = "", ...parts] = trimSlashes(rest).split("/");
  if (!bucket) throw invalidArg(`no bucket in GCS URL: ${url}`);
  return { scheme, bucket, prefix: parts.join("/") };
}

/**
 * Maps an object key (relative to the repository prefix) to a path relative to the local
 * cache folder; refuses keys that would escape it (absolute, "..", backslashes, NUL).
 */
export function safeCachePath(relativeKey: string): string {
  if (relativeKey.includes("\0") || relativeKey.includes("\\") || relativeKey.startsWith("/"))
    throw invalidArg(`object key refused: ${JSON.stringify(relativeKey)}`);
  const norm = posix.normalize(relativeKey);
  if (norm === ".." || norm.startsWith("../") || relativeKey.split("/").includes(".."))
    throw invalidArg(`object key escapes the repository: ${JSON.stringify(relativeKey)}`);
  return norm;
}
