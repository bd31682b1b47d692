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

const SIMPLE_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v", "\\": "\\", "'": "'", '"': '"', "?": "?" };

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
      const bytes: number[] = [];
      i++;
      for (;;) {
        if (i >= text.length || text[i] === "\n") throw fail("unterminated string", startLine, startCol);
        const c = text[i]!;
        if (c === ch) {
          i++;
          break;
        }
        if (c === "\\") {
          const e = text[i + 1];
          if (e === undefined) throw fail("unterminated string", startLine, startCol);
          if (e in SIMPLE_ESCAPES) {
            bytes.push(SIMPLE_ESCAPES[e]!.charCodeAt(0));
            i += 2;
          } else if (e === "x" || e === "X") {
            const m = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i + 2));
            if (!m) throw fail("invalid \\x escape");
            bytes.push(parseInt(m[0], 16));
            i += 2 + m[0].length;
          } else if (e === "u" || e === "U") {
            const m = (e === "u" ? /^[0-9a-fA-F]{4}/ : /^[0-9a-fA-F]{8}/).exec(text.slice(i + 2));
            const cp = m ? parseInt(m[0], 16) : NaN;
            if (!m || cp > 0x10ffff) throw fail(`invalid \\${e} escape`);
            bytes.push(...encoder.encode(String.fromCodePoint(cp)));
            i += 2 + m[0].length;
          } else if (/[0-7]/.test(e)) {
            const m = /^[0-7]{1,3}/.exec(text.slice(i + 1))!;
            bytes.push(parseInt(m[0], 8) & 0xff);
            i += 1 + m[0].length;
          } else {
            throw fail(`invalid escape '\\${e}'`);
          }
          continue;
        }
        const cp = text.codePointAt(i)!;
        const s = String.fromCodePoint(cp);
        bytes.push(...encoder.encode(s));
        i += s.length;
      }
      tokens.push({ kind: "string", text: decoder.decode(new Uint8Array(bytes)), line: startLine, col: startCol });
      continue;
    }
    const num = /^-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?|inf(?:inity)?\b|nan\b)/i.exec(text.slice(i));
    if (num && (/[\d.]/.test(ch) || ch === "-")) {
      tokens.push({ kind: "number", text: num[0], line: startLine, col: startCol });
      i += num[0].length;
      continue;
    }
    const ident = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(text.slice(i));
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
