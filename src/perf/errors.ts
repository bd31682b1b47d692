/**
 * @module The failed requests of a `nereid perf` run: every one counted, and the first
 * few distinct errors kept as the server answered them (its `{"error": ...}` text over
 * HTTP, the status details over gRPC), escaped for the terminal. perf_analyzer stops at
 * the first failed request and exits non-zero; perf does too, after the window it
 * happened in, and says what the server answered.
 */
import { escapeLogText } from "../core/logger.ts";

/** How many distinct error texts are kept (the rest are counted only). */
export const MAX_DISTINCT_ERRORS = 3;
/** A kept error text is cut to this many characters. */
const MAX_ERROR_CHARS = 500;

export class FailureLog {
  #total = 0;
  readonly #distinct = new Map<string, number>();

  add(message: string): void {
    this.#total++;
    const text = escapeLogText(message.length > MAX_ERROR_CHARS ? `${message.slice(0, MAX_ERROR_CHARS)}...` : message);
    const n = this.#distinct.get(text);
    if (n !== undefined) this.#distinct.set(text, n + 1);
    else if (this.#distinct.size < MAX_DISTINCT_ERRORS) this.#distinct.set(text, 1);
  }

  get total(): number {
    return this.#total;
  }

  /** The report on stderr: how many failed, then each kept error with its count. */
  text(sent: number): string {
    const lines = [`Failed to retrieve results from inference request: ${this.#total} of ${sent} requests failed. The server answered:`];
    for (const [text, n] of this.#distinct) lines.push(`  ${n}x ${text}`);
    return lines.join("\n") + "\n";
  }
}

/** The error text of a failed HTTP answer: Triton's `{"error": "..."}`, or the status and the body as it came. */
export function httpErrorText(status: number, body: Uint8Array): string {
  const raw = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  return errorOf(raw) ?? `HTTP ${status}${raw ? `: ${raw}` : ""}`;
}

/** The `error` string of a Triton error body, or undefined when `text` is not one. */
export function errorOf(text: string): string | undefined {
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error;
    return typeof e === "string" ? e : undefined;
  } catch {
    return undefined;
  }
}
