/**
 * @module Request JSON parsing as Triton does it (rapidjson, iterative, NaN/Inf allowed):
 * a JSON.parse fast path, and a byte-level parser that accepts NaN / Inf / Infinity, keeps
 * integers beyond 2^53 exact as bigint, and reports errors in rapidjson's words with the
 * byte offset ("failed to parse the request JSON buffer: Invalid value. at 12"). Both sit
 * behind a nesting-depth check that refuses a body of `[[[[…` before anything is built.
 */
import { invalidArg } from "../../core/errors.ts";

export type JsonValue = null | boolean | number | bigint | string | DoubleLiteral | JsonValue[] | { [k: string]: JsonValue };

/**
 * A number written with a fraction or an exponent (`1.0`, `1e0`) inside a `shape` array,
 * as the exact parser returns it: rapidjson stores those as doubles, so Triton's IsUint64
 * refuses them as dims even when they are whole. Only arrays under a "shape" key get these.
 */
export class DoubleLiteral {
  constructor(readonly value: number) {}
  toJSON(): number {
    return this.value;
  }
}

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
 * body is shorter than the limit, or holds at most `limit` opening brackets in all (found
 * with indexOf, i.e. memchr), the answer is -1 without a byte-by-byte pass; otherwise one
 * pass of about 2 ns a byte.
 */
export function nestingOverflow(bytes: Uint8Array, limit = MAX_JSON_DEPTH): number {
  if (bytes.length <= limit) return -1; // too short to hold limit + 1 brackets
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

/** The bytes as text for JSON.parse (a leading BOM dropped, as rapidjson skips it). */
export function jsonText(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/** JSON.parse of the bytes (or of their jsonText), or undefined when JSON.parse refuses them. */
export function parseJsonFast(input: Uint8Array | string): JsonValue | undefined {
  try {
    return JSON.parse(typeof input === "string" ? input : utf8.decode(input)) as JsonValue;
  } catch {
    return undefined;
  }
}

/**
 * Whether some `"shape": [ … ]` in the text holds a '.', 'e' or 'E', i.e. might hold a
 * number JSON.parse turned into an integer from `1.0` or `1e0`, which Triton refuses as a
 * dim. String search of the text JSON.parse already needed: about 0.2 ns a byte, 60 ns for a
 * small request. A key spelled with escapes (`"sh\u0061pe"`) is not seen.
 */
export function shapeMayHoldDouble(text: string): boolean {
  for (let i = text.indexOf('"shape"'); i >= 0; i = text.indexOf('"shape"', i + 7)) {
    let j = i + 7;
    while (isSpace(text.charCodeAt(j))) j++;
    if (text.charCodeAt(j++) !== 0x3a) continue;
    while (isSpace(text.charCodeAt(j))) j++;
    if (text.charCodeAt(j) !== 0x5b) continue;
    for (let c = text.charCodeAt(++j); !Number.isNaN(c) && c !== 0x5d; c = text.charCodeAt(++j)) {
      if (c === 0x2e || c === 0x65 || c === 0x45) return true;
    }
  }
  return false;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** rapidjson's IterativeParsingState values that the parser can be in between tokens. */
const S = {
  Start: 0,
  Finish: 1,
  ObjectInitial: 2,
  MemberKey: 3,
  KeyValueDelimiter: 4,
  MemberValue: 5,
  MemberDelimiter: 6,
  ArrayInitial: 7,
  Element: 8,
  ElementDelimiter: 9,
} as const;
type S = (typeof S)[keyof typeof S];

/** rapidjson's GetParseError_En text for the state the parser failed in (HandleError). */
function stateError(s: S): string {
  switch (s) {
    case S.Start:
      return "The document is empty.";
    case S.Finish:
      return "The document root must not be followed by other values.";
    case S.ObjectInitial:
    case S.MemberDelimiter:
      return "Missing a name for object member.";
    case S.MemberKey:
      return "Missing a colon after a name of object member.";
    case S.MemberValue:
      return "Missing a comma or '}' after an object member.";
    case S.Element:
      return "Missing a comma or ']' after an array element.";
    default:
      return "Invalid value.";
  }
}

class ParseError extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {
    super(reason);
  }
}

/** Nesting beyond MAX_JSON_DEPTH; its message is whole, not rapidjson's reason. */
class DepthError extends Error {}

/** Strings up to this many bytes of printable ASCII are built by #string's fast path. */
const SHORT_ASCII = 16;

const ESCAPES: Record<number, string> = { 0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t" };
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;

/** An open array (`dims`: it is the value of a "shape" member) or object. */
type Container = { array: JsonValue[]; dims: boolean } | { object: Record<string, JsonValue>; key: string };

/** Bytes the async parse reads between turns of the event loop (about 30 ms of parsing). */
const SLICE_BYTES = 1024 * 1024;

/**
 * Parses like rapidjson with kParseNanAndInfFlag | kParseIterativeFlag. Integer literals
 * that are not safe JS integers but fit int64/uint64 become bigint. A NUL byte ends the
 * input, as in rapidjson. Throws INVALID_ARG with Triton's message on a syntax error, and
 * on nesting beyond `maxDepth` before allocating the container past the limit.
 */
export function parseJsonExact(bytes: Uint8Array, maxDepth = MAX_JSON_DEPTH): JsonValue {
  try {
    const parser = new Parser(bytes, maxDepth);
    parser.run(Infinity);
    return parser.result();
  } catch (err) {
    throw parseFailure(err);
  }
}

/**
 * parseJsonExact in slices of about 1 MiB with a turn of the event loop between them: the
 * byte parser takes about 30 ns a byte, so a 64 MiB body would otherwise hold every other
 * client for two seconds.
 */
export async function parseJsonExactAsync(bytes: Uint8Array, maxDepth = MAX_JSON_DEPTH): Promise<JsonValue> {
  try {
    const parser = new Parser(bytes, maxDepth);
    while (!parser.run(SLICE_BYTES)) await new Promise((resolve) => setImmediate(resolve));
    return parser.result();
  } catch (err) {
    throw parseFailure(err);
  }
}

function parseFailure(err: unknown): unknown {
  if (err instanceof DepthError) return invalidArg(err.message);
  if (!(err instanceof ParseError)) return err;
  return invalidArg(`failed to parse the request JSON buffer: ${err.reason} at ${err.offset}`);
}

class Parser {
  #b: Uint8Array;
  #p = 0;
  #maxDepth: number;
  #stack: Container[] = [];
  #state: S = S.Start;
  #root: JsonValue = null;
  /** Whether the last number read had a fraction or an exponent (or was NaN/Inf). */
  #double = false;
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

  /**
   * Parses on from where the last call stopped, until the document ends or about `budget`
   * more bytes are read; true when done (then result() has the value). Throws ParseError
   * or DepthError.
   */
  run(budget: number): boolean {
    const stack = this.#stack;
    let state = this.#state;
    const stop = this.#p + budget;
    /** Stores a finished value in the open container (or as the root) and moves the state on. */
    const put = (v: JsonValue): S => {
      const top = stack[stack.length - 1];
      if (!top) {
        this.#root = v;
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
      if (this.#p >= stop) {
        this.#state = state;
        return false;
      }
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
            const top = stack[stack.length - 1];
            stack.push(c === 0x7b ? { object: {}, key: "" } : { array: [], dims: state === S.KeyValueDelimiter && (top as { key: string }).key === "shape" });
            state = c === 0x7b ? S.ObjectInitial : S.ArrayInitial;
          } else if (c === 0x5d || c === 0x7d || c === 0x2c || c === 0x3a) {
            throw new ParseError(stateError(state), this.#p);
          } else {
            const v = this.#scalar(c);
            const top = stack[stack.length - 1];
            state = put(this.#double && top !== undefined && "dims" in top && top.dims ? new DoubleLiteral(v as number) : v);
          }
        }
      }
    }
    if (state !== S.Finish) throw new ParseError(stateError(state), this.#p);
    this.#state = state;
    return true;
  }

  result(): JsonValue {
    return this.#root;
  }

  #scalar(c: number): JsonValue {
    this.#double = false;
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
    this.#double = true;
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
    this.#double = !integer;
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
    // Short printable ASCII up to the closing quote (most keys and BYTES elements): built
    // from char codes, without a TextDecoder call and a view per string.
    const start = this.#p;
    let q = start;
    for (let c = b[q]; q - start < SHORT_ASCII && c !== undefined && c >= 0x20 && c < 0x80 && c !== 0x22 && c !== 0x5c; c = b[++q]);
    if (b[q] === 0x22) {
      let s = "";
      for (let i = start; i < q; i++) s += String.fromCharCode(b[i]!);
      this.#p = q + 1;
      return s;
    }
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
