/**
 * @module ASCII tables for the log, in the shape Triton's TablePrinter prints them:
 * `+---+` dividers, `| cell |` rows left-aligned, each column as wide as its widest
 * cell or header. A table wider than the width (Triton uses the terminal's, or 500
 * columns when there is none; the log here is never a terminal, so 500) shares the
 * width fairly between columns and wraps cells across lines.
 */

const DEFAULT_WIDTH = 500;

/** Column widths: each column's need, or a fair share of `width` when they do not all fit. */
function shares(needs: readonly number[], width: number): number[] {
  const n = needs.length;
  const usable = width - 2 * n - (n + 1);
  const out = needs.map(() => Math.floor(usable / n));
  // Narrowest first: a column needing less than its share gives the rest to the wider ones.
  const order = needs.map((_, i) => i).sort((a, b) => needs[a]! - needs[b]! || a - b);
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    if (needs[i]! >= out[i]!) continue;
    const excess = out[i]! - needs[i]!;
    out[i] = needs[i]!;
    const rest = order.slice(k + 1);
    for (const j of rest) out[j]! += excess / rest.length;
  }
  return out.map((s) => Math.max(1, Math.floor(s)));
}

function divider(widths: readonly number[]): string {
  return "+" + widths.map((w) => "-".repeat(w + 2) + "+").join("");
}

function row(cells: readonly string[], widths: readonly number[]): string[] {
  const lines = Math.max(1, ...cells.map((c, i) => Math.ceil(c.length / widths[i]!)));
  const out: string[] = [];
  for (let j = 0; j < lines; j++) {
    out.push("|" + cells.map((c, i) => " " + c.slice(j * widths[i]!, (j + 1) * widths[i]!).padEnd(widths[i]!) + " |").join(""));
  }
  return out;
}

/**
 * The table as Triton logs it: a leading newline, divider, header row, divider, one row
 * per record, divider, and a trailing newline.
 */
export function printTable(headers: readonly string[], rows: readonly (readonly string[])[], width = DEFAULT_WIDTH): string {
  const needs = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const widths = shares(needs, width);
  const lines = [divider(widths), ...row(headers, widths), divider(widths)];
  for (const r of rows)
    lines.push(
      ...row(
        headers.map((_, i) => r[i] ?? ""),
        widths,
      ),
    );
  lines.push(divider(widths));
  return "\n" + lines.join("\n") + "\n";
}
