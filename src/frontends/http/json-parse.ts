/**
 * @module Request JSON parsing as Triton does it (rapidjson, iterative, NaN/Inf allowed):
 * a JSON.parse fast path, and a byte-level parser that accepts NaN / Inf / Infinity, keeps
 * integers beyond 2^53 exact as bigint, and reports errors in rapidjson's words with the
 * byte offset ("failed to parse the request JSON buffer: Invalid value. at 12"). Both sit
 * behind a nesting-depth check that refuses a body of `[[[[…` before anything is built.
 */
import { invalidArg } from "../../core/errors.ts";

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [k: string]: JsonValue };

// Drops a leading BOM, as rapidjson's UTF-8 memory stream does.
const utf8 = new TextDecoder();

/**
 * Most arrays and objects open at once in a request JSON document. rapidjson's iterative
 * parser has no limit, but both JSON.parse and the byte parser below spend about 100 ns and
 * 100+ bytes per open container, so 64 MiB of `[` would cost seconds and gigabytes. Triton's
 * own limit of 100 for `data` (request-json.ts) stays the one clients meet in practice; this
 * one is far enough above it that deep values Triton ignores (unknown keys) still parse.
 * Go's encoding/json uses the same number.
 */
export const MAX_JSON_DEPTH = 10_000;

const depthMessage = (limit: number, offset: number) =>
  `failed to parse the request JSON buffer: JSON nesting depth exceeds maximum allowed limit (${limit}) at ${offset}`;

const OPENERS = [0x5b, 0x7b];

/**
 * The byte offset of the first `[` or `{` (outside strings) that opens more than `limit`
 * containers at once, or -1. Reading stops at a NUL byte, where rapidjson stops. When the
 * body holds at most `limit` opening brackets in all (found with indexOf, i.e. memchr) the
 * answer is -1 without a byte-by-byte pass; otherwise one pass of about 2 ns a byte.
 */
export function nestingOverflow(bytes: Uint8Array, limit = MAX_JSON_DEPTH): number {
  const nul = bytes.indexOf(0);
  const n = nul < 0 ? bytes.length : nul;
  let openers = 0;
  for (const c of OPENERS) {
    for (let i = bytes.indexOf(c); i >= 0 && i < n && openers <= limit; i = bytes.indexOf(c, i + 1)) openers++;
  }
  if (openers <= limit) return -1;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = bytes[i]!;
    if (c === 0x22) {
      for (i++; i < n; i++) {
        const d = bytes[i]!;
        if (d === 0x22) break;
        if (d === 0x5c) i++;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return -1;
}

/** Throws INVALID_ARG when the body nests deeper than MAX_JSON_DEPTH (see nestingOverflow). */
export function checkJsonDepth(bytes: Uint8Array): void {
  const at = nestingOverflow(bytes);
  if (at >= 0) throw invalidArg(depthMessage(MAX_JSON_DEPTH, at));
}

/** JSON.parse of the bytes, or undefined when JSON.parse refuses them. */
export function parseJsonFast(bytes: Uint8Array): JsonValue | undefined {
  try {
    return JSON.parse(utf8.decode(bytes)) as JsonValue;
  } catch {
    return undefined;
  }
}

/** rapidjson's IterativeParsingState values that the parser can be in between tokens. */
const S = {
  Start: 0, Finish: 1, ObjectInitial: 2, MemberKey: 3, KeyValueDelimiter: 4, MemberValue: 5,
  MemberDelimiter: 6, ArrayInitial: 7, Element: 8, ElementDelimiter: 9,
} as const;
type S = (typeof S)[keyof typeof S];

/** rapidjson's GetParseError_En text for the state the parser failed in (HandleError). */
function stateError(s: S): string {
  switch (s) {
    case S.Start: return "The document is empty.";
    case S.Finish: return "The document root must not be followed by other values.";
    case S.ObjectInitial: case S.MemberDelimiter: return "Missing a name for object member.";
    case S.MemberKey: return "Missing a colon after a name of object member.";
    case S.MemberValue: return "Missing a comma or '}' after an object member.";
    case S.Element: return "Missing a comma or ']' after an array element.";
    default: return "Invalid value.";
  }
}

class ParseError extends Error {
  constructor(readonly reason: string, readonly offset: number) {
    super(reason);
  }
}

/** Nesting beyond MAX_JSON_DEPTH; its message is whole, not rapidjson's reason. */
class DepthError extends Error {}

const ESCAPES: Record<number, string> = { 0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t" };
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;

type Container = { array: JsonValue[] } | { object: Record<string, JsonValue>; key: string };

/**
 * Parses like rapidjson with kParseNanAndInfFlag | kParseIterativeFlag. Integer literals
 * that are not safe JS integers but fit int64/uint64 become bigint. A NUL byte ends the
 * input, as in rapidjson. Throws INVALID_ARG with Triton's message on a syntax error, and
 * on nesting beyond `maxDepth` before allocating the container past the limit.
 */
export function parseJsonExact(bytes: Uint8Array, maxDepth = MAX_JSON_DEPTH): JsonValue {
  try {
    return new Parser(bytes, maxDepth).parse();
  } catch (err) {
    if (err instanceof DepthError) throw invalidArg(err.message);
    if (!(err instanceof ParseError)) throw err;
    throw invalidArg(`failed to parse the request JSON buffer: ${err.reason} at ${err.offset}`);
  }
}

class Parser {
  #b: Uint8Array;
  #p = 0;
  #maxDepth: number;
  constructor(bytes: Uint8Array, maxDepth: number) {
    this.#b = bytes;
    this.#maxDepth = maxDepth;
    // rapidjson's EncodedInputStream<UTF8, MemoryStream> skips each BOM byte that is there;
    // error offsets still count them.
    for (const bom of [0xef, 0xbb, 0xbf]) if (this.#peek() === bom) this.#p++;
  }

  #peek(): number {
    return this.#p < this.#b.length ? this.#b[this.#p]! : 0;
  }

  #skipWhitespace(): void {
    for (let c = this.#peek(); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = this.#peek()) this.#p++;
  }

  parse(): JsonValue {
    const stack: Container[] = [];
    let state: S = S.Start;
    let root: JsonValue = null;
    /** Stores a finished value in the open container (or as the root) and moves the state on. */
    const put = (v: JsonValue): S => {
      const top = stack[stack.length - 1];
      if (!top) {
        root = v;
        return S.Finish;
      }
      if ("array" in top) {
        top.array.push(v);
        return S.Element;
      }
      if (top.key === "__proto__") Object.defineProperty(top.object, top.key, { value: v, writable: true, enumerable: true, configurable: true });
      else top.object[top.key] = v;
      return S.MemberValue;
    };
    const close = (): S => {
      const done = stack.pop()!;
      return put("array" in done ? done.array : done.object);
    };

    this.#skipWhitespace();
    for (let c = this.#peek(); c !== 0; this.#skipWhitespace(), c = this.#peek()) {
      switch (state) {
        case S.Finish:
          throw new ParseError(stateError(state), this.#p);
        case S.ObjectInitial:
        case S.MemberDelimiter:
          if (c === 0x7d && state === S.ObjectInitial) {
            this.#p++;
            state = close();
          } else if (c === 0x22) {
            (stack[stack.length - 1] as { key: string }).key = this.#string();
            state = S.MemberKey;
          } else throw new ParseError(stateError(state), this.#p);
          break;
        case S.MemberKey:
          if (c !== 0x3a) throw new ParseError(stateError(state), this.#p);
          this.#p++;
          state = S.KeyValueDelimiter;
          break;
        case S.MemberValue:
        case S.Element: {
          const closing = state === S.MemberValue ? 0x7d : 0x5d;
          if (c === 0x2c) state = state === S.MemberValue ? S.MemberDelimiter : S.ElementDelimiter;
          else if (c !== closing) throw new ParseError(stateError(state), this.#p);
          this.#p++;
          if (c === closing) state = close();
          break;
        }
        default: {
          // A value position: Start, KeyValueDelimiter, ArrayInitial, ElementDelimiter.
          if (c === 0x5d && state === S.ArrayInitial) {
            this.#p++;
            state = close();
          } else if (c === 0x7b || c === 0x5b) {
            if (stack.length >= this.#maxDepth) throw new DepthError(depthMessage(this.#maxDepth, this.#p));
            this.#p++;
            stack.push(c === 0x7b ? { object: {}, key: "" } : { array: [] });
            state = c === 0x7b ? S.ObjectInitial : S.ArrayInitial;
          } else if (c === 0x5d || c === 0x7d || c === 0x2c || c === 0x3a) {
            throw new ParseError(stateError(state), this.#p);
          } else {
            state = put(this.#scalar(c));
          }
        }
      }
    }
    if (state !== S.Finish) throw new ParseError(stateError(state), this.#p);
    return root;
  }

  #scalar(c: number): JsonValue {
    if (c === 0x22) return this.#string();
    if (c === 0x74) return this.#literal("true", true);
    if (c === 0x66) return this.#literal("false", false);
    if (c === 0x6e) return this.#literal("null", null);
    return this.#number();
  }

  /** Consumes `word` (its first byte already matched); the error offset is the first mismatch. */
  #literal(word: string, value: JsonValue): JsonValue {
    this.#p++;
    for (let i = 1; i < word.length; i++) {
      if (this.#peek() !== word.charCodeAt(i)) throw new ParseError("Invalid value.", this.#p);
      this.#p++;
    }
    return value;
  }

  #digits(): number {
    const from = this.#p;
    while (this.#peek() >= 0x30 && this.#peek() <= 0x39) this.#p++;
    return this.#p - from;
  }

  #number(): JsonValue {
    const start = this.#p;
    const minus = this.#peek() === 0x2d;
    if (minus) this.#p++;
    const c = this.#peek();
    if (c === 0x30) this.#p++;
    else if (c >= 0x31 && c <= 0x39) this.#digits();
    else if (c === 0x4e || c === 0x49) return this.#nanOrInf(minus);
    else throw new ParseError("Invalid value.", this.#p);
    let integer = true;
    if (this.#peek() === 0x2e) {
      this.#p++;
      if (this.#digits() === 0) throw new ParseError("Miss fraction part in number.", this.#p);
      integer = false;
    }
    if (this.#peek() === 0x65 || this.#peek() === 0x45) {
      this.#p++;
      if (this.#peek() === 0x2b || this.#peek() === 0x2d) this.#p++;
      if (this.#digits() === 0) throw new ParseError("Miss exponent in number.", this.#p);
      integer = false;
    }
    let text = "";
    for (let i = start; i < this.#p; i++) text += String.fromCharCode(this.#b[i]!);
    const v = Number(text);
    if (!Number.isFinite(v)) throw new ParseError("Number too big to be stored in double.", start);
    if (integer && !Number.isSafeInteger(v)) {
      const big = BigInt(text);
      if (big >= INT64_MIN && big <= UINT64_MAX) return big;
    }
    return v;
  }

  /** NaN, Inf, Infinity (the sign applies to the infinities), as kParseNanAndInfFlag allows. */
  #nanOrInf(minus: boolean): number {
    const word = this.#peek() === 0x4e ? "NaN" : "Inf";
    this.#literal(word, null);
    if (word === "Inf" && this.#peek() === 0x69) this.#literal("inity", null);
    return word === "NaN" ? NaN : minus ? -Infinity : Infinity;
  }

  #hex4(escapeOffset: number): number {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.#peek();
      const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
      if (d < 0) throw new ParseError("Incorrect hex digit after \\u escape in string.", escapeOffset);
      v = v * 16 + d;
      this.#p++;
    }
    return v;
  }

  #string(): string {
    const b = this.#b;
    this.#p++; // opening quote
    let out = "";
    let run = this.#p;
    for (;;) {
      const c = this.#peek();
      if (c === 0x22 || c === 0x5c || c < 0x20) {
        if (run < this.#p) out += utf8.decode(b.subarray(run, this.#p));
        if (c === 0x22) {
          this.#p++;
          return out;
        }
        if (c === 0) throw new ParseError("Missing a closing quotation mark in string.", this.#p);
        if (c < 0x20) throw new ParseError("Invalid encoding in string.", this.#p);
        out += this.#escape();
        run = this.#p;
      } else {
        this.#p++;
      }
    }
  }

  #escape(): string {
    const escapeOffset = this.#p++;
    const e = this.#peek();
    const simple = ESCAPES[e];
    if (simple !== undefined) {
      this.#p++;
      return simple;
    }
    if (e !== 0x75) throw new ParseError("Invalid escape character in string.", escapeOffset);
    this.#p++;
    let cp = this.#hex4(escapeOffset);
    if (cp >= 0xd800 && cp <= 0xdfff) {
      const surrogate = "The surrogate pair in string is invalid.";
      if (cp > 0xdbff || this.#peek() !== 0x5c || this.#b[this.#p + 1] !== 0x75) throw new ParseError(surrogate, escapeOffset);
      this.#p += 2;
      const low = this.#hex4(escapeOffset);
      if (low < 0xdc00 || low > 0xdfff) throw new ParseError(surrogate, escapeOffset);
      cp = ((cp - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
    }
    return String.fromCodePoint(cp);
  }
}
