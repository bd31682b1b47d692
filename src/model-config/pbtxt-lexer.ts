/**
 * @module Tokens of protobuf text format with line and column, for config.pbtxt.
 */
import { invalidArg } from "../core/errors.ts";

export type TokenKind = "ident" | "number" | "string" | "symbol" | "eof";

export interface Token {
  kind: TokenKind;
  /** Identifier or symbol text, number text, or the decoded string value. */
  text: string;
  line: number;
  col: number;
}

const SYMBOLS = new Set(["{", "}", "[", "]", ":", ",", ";", "<", ">"]);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Sticky (matched at lastIndex), so that a token is read where it starts without copying the rest of the text. */
const NUMBER = /-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?|inf(?:inity)?\b|nan\b)/iy;
const IDENT = /[A-Za-z_][A-Za-z0-9_.]*/y;

const SIMPLE_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v", "\\": "\\", "'": "'", '"': '"', "?": "?" };

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** INVALID_ARG "<file>:<line>:<col>: <message>" (1-based line and column). */
export function syntaxError(file: string, line: number, col: number, message: string) {
  return invalidArg(`${file}:${line}:${col}: ${message}`);
}

export function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const col = () => i - lineStart + 1;
  const fail = (msg: string, l = line, c = col()) => syntaxError(file, l, c, msg);

  /** The string literal opened by `quote` at `i`, decoded; `i` ends past its closing quote. */
  const readString = (quote: string, startLine: number, startCol: number): string => {
    const chunks: Uint8Array[] = [];
    const bytes: number[] = [];
    /** Moves escaped bytes collected so far into `chunks`. */
    const flush = () => {
      if (bytes.length > 0) chunks.push(Uint8Array.from(bytes.splice(0)));
    };
    i++;
    for (;;) {
      // A run of plain characters is encoded at once (a long string costs one pass, not one per character).
      let j = i;
      while (j < text.length && text[j] !== quote && text[j] !== "\\" && text[j] !== "\n") j++;
      if (j > i) {
        flush();
        chunks.push(encoder.encode(text.slice(i, j)));
        i = j;
      }
      if (i >= text.length || text[i] === "\n") throw fail("unterminated string", startLine, startCol);
      if (text[i] === quote) {
        i++;
        break;
      }
      const e = text[i + 1];
      if (e === undefined) throw fail("unterminated string", startLine, startCol);
      if (e in SIMPLE_ESCAPES) {
        bytes.push(SIMPLE_ESCAPES[e]!.charCodeAt(0));
        i += 2;
      } else if (e === "x" || e === "X") {
        const m = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i + 2, i + 4));
        if (!m) throw fail("invalid \\x escape");
        bytes.push(parseInt(m[0], 16));
        i += 2 + m[0].length;
      } else if (e === "u" || e === "U") {
        const m = (e === "u" ? /^[0-9a-fA-F]{4}/ : /^[0-9a-fA-F]{8}/).exec(text.slice(i + 2, i + 10));
        const cp = m ? parseInt(m[0], 16) : NaN;
        if (!m || cp > 0x10ffff) throw fail(`invalid \\${e} escape`);
        for (const b of encoder.encode(String.fromCodePoint(cp))) bytes.push(b);
        i += 2 + m[0].length;
      } else if (/[0-7]/.test(e)) {
        const m = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4))!;
        bytes.push(parseInt(m[0], 8) & 0xff);
        i += 1 + m[0].length;
      } else {
        throw fail(`invalid escape '\\${e}'`);
      }
    }
    flush();
    return decoder.decode(chunks.length === 1 ? chunks[0] : concat(chunks));
  };

  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "\n") {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (ch === " " || ch === "\t" || ch === "\r" || ch === "\f" || ch === "\v") {
      i++;
      continue;
    }
    if (ch === "#") {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    const startLine = line;
    const startCol = col();
    if (SYMBOLS.has(ch)) {
      tokens.push({ kind: "symbol", text: ch, line: startLine, col: startCol });
      i++;
      continue;
    }
    if (ch === '"' || ch === "'") {
      tokens.push({ kind: "string", text: readString(ch, startLine, startCol), line: startLine, col: startCol });
      continue;
    }
    NUMBER.lastIndex = i;
    const num = NUMBER.exec(text);
    if (num && (/[\d.]/.test(ch) || ch === "-")) {
      tokens.push({ kind: "number", text: num[0], line: startLine, col: startCol });
      i += num[0].length;
      continue;
    }
    IDENT.lastIndex = i;
    const ident = IDENT.exec(text);
    if (ident) {
      tokens.push({ kind: "ident", text: ident[0], line: startLine, col: startCol });
      i += ident[0].length;
      continue;
    }
    throw fail(`unexpected character '${ch}'`);
  }
  tokens.push({ kind: "eof", text: "", line, col: col() });
  return tokens;
}
