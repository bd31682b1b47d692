/**
 * Findings known to be open (a corpus case id, or the signature of random findings that are
 * the same bug): the suite skips or counts them as known instead of failing. Add an entry
 * only while a fix is on its way, naming its issue; remove it when the fix lands.
 */
import type { Finding } from "./run.ts";

export interface KnownOpen {
  /** A corpus case id (corpus.ts), or a signature's name. */
  id: string;
  /** The #14 item it belongs to and the branch area fixing it. */
  item: string;
  /** For random findings: whether `f` is this bug. */
  matches?: (f: Omit<Finding, "known">) => boolean;
}

/** Empty: every #14 finding is fixed on main, and the suite holds each one. */
export const KNOWN_OPEN: readonly KnownOpen[] = [];

export function knownOpen(f: Omit<Finding, "known">): string | undefined {
  return KNOWN_OPEN.find((k) => k.matches?.(f))?.id;
}

export const isKnownOpen = (id: string) => KNOWN_OPEN.some((k) => k.id === id);
