/**
 * Issue #14 findings that other branches are fixing and this one is not: the corpus cases
 * the suite skips, and the signatures of random findings that are the same bugs (counted
 * as known, not failed). Remove an entry once its fix is merged; the suite then holds it.
 */
import type { Finding } from "./run.ts";
import { messageType } from "../../src/frontends/grpc/protos.ts";

export interface KnownOpen {
  /** A corpus case id (corpus.ts), or a signature's name. */
  id: string;
  /** The #14 item it belongs to and the branch area fixing it. */
  item: string;
  /** For random findings: whether `f` is this bug. */
  matches?: (f: Omit<Finding, "known">) => boolean;
}

const GRPC_64 = "#14 gRPC 64-bit integers (src/frontends/grpc/*)";
const GRPC_SIGN = "#14 gRPC priority/timeout (src/frontends/grpc/*)";
const HTTP_JSON = "#14 HTTP JSON integers and shape literals (src/frontends/http/request-json.ts)";
const HTTP_ERRTEXT = "#14 HTTP error-text caps";
const HTTP_PCT = "#14 HTTP % escapes in paths (src/frontends/http/routes.ts)";
const SHM = "#14 shared memory (src/core/shared-memory.ts, ffi/libc/shm.ts)";

export const KNOWN_OPEN: readonly KnownOpen[] = [
  // Corpus cases (corpus.ts ids).
  { id: "sequence-id-64bit-grpc", item: GRPC_64 },
  { id: "int64-exact-grpc", item: GRPC_64 },
  { id: "grpc-priority-negative", item: GRPC_SIGN },
  { id: "grpc-timeout-negative", item: GRPC_SIGN },
  { id: "sequence-id-above-u64-http", item: HTTP_JSON },
  { id: "shape-float-literal-1e0", item: HTTP_JSON },
  { id: "shape-float-literal-1.0", item: HTTP_JSON },
  { id: "shape-20k-dims", item: HTTP_ERRTEXT },
  { id: "pct-escape-shm-status", item: HTTP_PCT },
  { id: "pct-escape-load", item: HTTP_PCT },
  { id: "shm-ftruncate", item: SHM },
  // The same bugs as random findings.
  { id: "pct-escape", item: HTTP_PCT, matches: (f) => f.problem.startsWith("HTTP 500") && /URI error/.test(f.problem) && f.request.includes("%") },
  { id: "error-text-cap", item: HTTP_ERRTEXT, matches: (f) => /(message|details|error_message) of \d+ characters/.test(f.problem) },
  // A shape of tens of thousands of dims echoed in the status details overflows the
  // HTTP/2 trailer: the call ends in RST_STREAM without a status and the connection drops.
  { id: "error-text-cap-grpc-trailer", item: HTTP_ERRTEXT, matches: (f) => f.target === "grpc" && /RST_STREAM|connection dropped/i.test(f.problem) && longestShape(f.input) > 10_000 },
];

/** The most dims any input of a ModelInferRequest has (0 when the bytes are not one). */
function longestShape(bytes: Uint8Array): number {
  try {
    const t = messageType("inference.ModelInferRequest");
    const m = t.toObject(t.decode(bytes), { longs: String }) as { inputs?: { shape?: unknown[] }[] };
    return Math.max(0, ...(m.inputs ?? []).map((i) => i.shape?.length ?? 0));
  } catch {
    return 0;
  }
}

export function knownOpen(f: Omit<Finding, "known">): string | undefined {
  return KNOWN_OPEN.find((k) => k.matches?.(f))?.id;
}

export const isKnownOpen = (id: string) => KNOWN_OPEN.some((k) => k.id === id);
