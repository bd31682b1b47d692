/**
 * @module Request bodies: the size limit (--http-max-input-size) and gzip/deflate
 * Content-Encoding, with the limit applied to the decompressed size. Decompression runs on
 * zlib's thread pool: a 64 KB body can inflate to the whole 64 MiB limit, which takes
 * 75–200 ms that other clients would otherwise wait through.
 */
import type { ZlibOptions } from "node:zlib";
import { ServerError, invalidArg } from "../../core/errors.ts";
import { lazyBuiltin } from "../../core/lazy-builtin.ts";
import type { HttpRequest } from "./types.ts";

/** node:zlib, loaded at the first compressed body (see lazyBuiltin). */
const zlib = lazyBuiltin<typeof import("node:zlib")>("node:zlib");

/** gunzip or inflate on zlib's thread pool. */
function decompress(method: "gunzip" | "inflate", raw: Uint8Array, options: ZlibOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => zlib()[method](raw, options, (err, out) => (err ? reject(err) : resolve(out))));
}

export function tooLarge(size: number | string, limit: number): ServerError {
  return invalidArg(`Request JSON size of ${size} exceeds the maximum allowed value of ${limit}. Use --http-max-input-size to increase the limit.`);
}

export async function readBody(req: HttpRequest, limit: number): Promise<Uint8Array> {
  // Every HttpRequest's body() refuses a body past the limit, a declared one before reading it.
  const raw = await req.body(limit);
  const decoded = decodedBody(raw, req.header("content-encoding"), limit);
  return decoded instanceof Uint8Array ? decoded : await decoded;
}

/** `raw` decompressed as its Content-Encoding says, within `limit`: itself, without a promise, when it is not compressed. */
export function decodedBody(raw: Uint8Array, contentEncoding: string | undefined, limit: number): Uint8Array | Promise<Uint8Array> {
  if (contentEncoding === undefined) return raw;
  const encoding = contentEncoding.trim().toLowerCase();
  if (encoding === "identity" || encoding === "") return raw;
  return inflated(raw, encoding, limit);
}

async function inflated(raw: Uint8Array, encoding: string, limit: number): Promise<Uint8Array> {
  try {
    if (encoding === "gzip") return await decompress("gunzip", raw, { maxOutputLength: limit });
    if (encoding === "deflate") return await decompress("inflate", raw, { maxOutputLength: limit });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(`more than ${limit}`, limit);
    throw invalidArg(`failed to decompress the ${encoding} request body: ${(err as Error).message}`, err);
  }
  throw new ServerError("UNSUPPORTED", `Unsupported Content-Encoding '${encoding}'; supported: gzip, deflate`);
}

/** Compresses a response body when the client accepts gzip or deflate. */
export function compressFor(acceptEncoding: string | undefined, body: Uint8Array | string): { body: Uint8Array | string; encoding?: string } {
  if (!acceptEncoding) return { body };
  const accepts = acceptEncoding.toLowerCase();
  if (/\bgzip\b/.test(accepts)) return { body: zlib().gzipSync(body), encoding: "gzip" };
  if (/\bdeflate\b/.test(accepts)) return { body: zlib().deflateSync(body), encoding: "deflate" };
  return { body };
}
