/**
 * @module Reading the repository's Markdown docs as GitHub renders them: which files are
 * docs, which lines are prose (outside fenced code), the links they hold and the anchors
 * their headings get.
 */
import { readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");

/** README.md, ARCHITECTURE.md, SECURITY.md and docs/**\/*.md, relative to the root. */
export function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".md") ? [join(dir, e.name)] : []));
  return ["README.md", "ARCHITECTURE.md", "SECURITY.md", ...walk(join(ROOT, "docs")).map((p) => relative(ROOT, p))];
}

/** The lines outside fenced code blocks, with their 1-based numbers. */
export function proseLines(text: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, i) => {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (m) {
      if (fence === undefined) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ line, n: i + 1 });
  });
  return out;
}

/** Inline code spans removed, so a `[x](y)` inside backticks is not a link. */
const withoutCode = (line: string) => line.replace(/`+[^`]*`+/g, "");

/** Every inline link and image target in the prose: `[text](target)`, `![alt](target)`. */
export function links(text: string): { target: string; n: number }[] {
  return proseLines(text).flatMap(({ line, n }) =>
    [...withoutCode(line).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({ target: m[1]!, n })),
  );
}

/** A heading's anchor as GitHub makes it: links' text kept, code and emphasis marks dropped, lower case, punctuation removed, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a document's headings, duplicates numbered as GitHub numbers them (-1, -2, ...). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { line } of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const k = seen.get(base) ?? 0;
    out.add(k === 0 ? base : `${base}-${k}`);
    seen.set(base, k + 1);
  }
  return out;
}
