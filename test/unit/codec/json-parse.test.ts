/**
 * §1.2: request JSON parsed as Triton's rapidjson (kParseNanAndInfFlag | kParseIterativeFlag)
 * parses it. The error texts and offsets were checked against rapidjson built from
 * Tencent/rapidjson@24b5e7a8 with those flags.
 */
import { describe, it, expect } from "vitest";
import {
  checkJsonDepth,
  DoubleLiteral,
  MAX_JSON_DEPTH,
  nestingOverflow,
  parseJsonExact,
  parseJsonExactAsync,
  parseJsonFast,
  shapeMayHoldDouble,
} from "../../../src/frontends/http/json-parse.ts";
import { ServerError } from "../../../src/core/errors.ts";

const enc = new TextEncoder();
const exact = (s: string | Uint8Array) => parseJsonExact(typeof s === "string" ? enc.encode(s) : s);

function parseError(s: string | Uint8Array): ServerError {
  try {
    exact(s);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    expect((e as ServerError).code).toBe("INVALID_ARG");
    return e as ServerError;
  }
  throw new Error("no error");
}

describe("parseJsonExact: values", () => {
  it("parses what JSON.parse parses, to the same values", () => {
    const text = ' { "a" : [ 1 , -2.5e3 , 0.125 , true , false , null , "s" ] , "o" : { } , "e" : [ ] , "n" : -0 }\n';
    expect(exact(text)).toEqual(JSON.parse(text));
  });

  it("keeps integers beyond 2^53 exact as bigint, within int64/uint64", () => {
    expect(exact("[9007199254740991,9007199254740992,9007199254740993,-9223372036854775808,18446744073709551615]")).toEqual([
      9007199254740991,
      9007199254740992n,
      9007199254740993n,
      -(2n ** 63n),
      2n ** 64n - 1n,
    ]);
    // Out of 64-bit range, or not integer syntax: a double, as in rapidjson.
    expect(exact("[18446744073709551616,-9223372036854775809,9007199254740993.0,1e20]")).toEqual([2 ** 64, -(2 ** 63), 2 ** 53, 1e20]);
  });

  it("accepts NaN, Inf, Infinity and their negatives", () => {
    const v = exact("[NaN,Inf,-Inf,Infinity,-Infinity]") as number[];
    expect(v[0]).toBeNaN();
    expect(v.slice(1)).toEqual([Infinity, -Infinity, Infinity, -Infinity]);
  });

  it("decodes escapes, surrogate pairs and UTF-8", () => {
    expect(exact(String.raw`["\"\\\/\b\f\n\r\t","\u00e9\uD83D\uDE00","é😀",""]`)).toEqual(['"\\/\b\f\n\r\t', "é😀", "é😀", ""]);
  });

  it("skips a leading UTF-8 BOM, as rapidjson does", () => {
    expect(exact(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode("[1]")]))).toEqual([1]);
    expect(parseJsonFast(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode("[1]")]))).toEqual([1]);
  });

  it("stops at a NUL byte, as rapidjson does", () => {
    expect(exact(new Uint8Array([...enc.encode('{"a":1}'), 0, ...enc.encode("junk")]))).toEqual({ a: 1 });
  });

  it("keeps a __proto__ key as data", () => {
    const v = exact('{"__proto__":{"x":1}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(["__proto__"]);
  });

  it("handles deep nesting without recursion (with the depth limit raised)", () => {
    const depth = 100_000;
    let v: unknown = parseJsonExact(enc.encode("[".repeat(depth) + "]".repeat(depth)), depth);
    for (let i = 1; i < depth; i++) v = (v as unknown[])[0]!;
    expect(v).toEqual([]);
  });
});

describe("parseJsonExact: errors in rapidjson's words at the byte offset", () => {
  const cases: [string, string | Uint8Array, string][] = [
    ["empty", "", "The document is empty. at 0"],
    ["only whitespace", " \n\t", "The document is empty. at 3"],
    ["a closing bracket first", "]", "The document is empty. at 0"],
    ["an unknown word", "x", "Invalid value. at 0"],
    ["a bad literal", "nope", "Invalid value. at 1"],
    ["a bad literal in an array", "[tru]", "Invalid value. at 4"],
    ["no member name", "{ nope", "Missing a name for object member. at 2"],
    ["a trailing comma in an object", '{"a":1,}', "Missing a name for object member. at 7"],
    ["an unterminated object", '{"a":1,', "Missing a name for object member. at 7"],
    ["no colon", '{"a" 1}', "Missing a colon after a name of object member. at 5"],
    ["no value", '{"a":}', "Invalid value. at 5"],
    ["no comma between members", '{"a":1 "b":2}', "Missing a comma or '}' after an object member. at 7"],
    ["an unterminated object after a value", '{"a":1', "Missing a comma or '}' after an object member. at 6"],
    ["no comma between elements", "[1 2]", "Missing a comma or ']' after an array element. at 3"],
    ["a leading zero", "[01]", "Missing a comma or ']' after an array element. at 2"],
    ["a trailing comma in an array", "[1,]", "Invalid value. at 3"],
    ["an unterminated array", "[", "Invalid value. at 1"],
    ["a colon in an array", "[:]", "Invalid value. at 1"],
    ["a second root", "{} x", "The document root must not be followed by other values. at 3"],
    ["a lone minus", "[-]", "Invalid value. at 2"],
    ["no fraction", "[1.]", "Miss fraction part in number. at 3"],
    ["no exponent", "[1e]", "Miss exponent in number. at 3"],
    ["no exponent after a sign", "[1e+]", "Miss exponent in number. at 4"],
    ["a number too big", "[0, 1e400]", "Number too big to be stored in double. at 4"],
    ["a bad NaN", "[Nope]", "Invalid value. at 2"],
    ["a bad Infinity", "[Infinite]", "Invalid value. at 8"],
    ["an unterminated string", '["ab', "Missing a closing quotation mark in string. at 4"],
    ["a bad escape", '["a\\x"]', "Invalid escape character in string. at 3"],
    ["a bad \\u escape", '["\\u12G4"]', "Incorrect hex digit after \\u escape in string. at 2"],
    ["a lone high surrogate", '["\\ud800"]', "The surrogate pair in string is invalid. at 2"],
    ["a lone low surrogate", '["\\udc00"]', "The surrogate pair in string is invalid. at 2"],
    ["a raw control character", '["a\tb"]', "Invalid encoding in string. at 3"],
    ["offsets count a skipped BOM", new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x20, 0x7d, 0x7d]), "The document root must not be followed by other values. at 6"],
    ["offsets count bytes, not characters", '["é" x]', "Missing a comma or ']' after an array element. at 6"],
  ];

  it.each(cases)("%s", (_, text, reason) => {
    expect(parseError(text).message).toBe(`failed to parse the request JSON buffer: ${reason}`);
  });
});

describe("parseJsonFast", () => {
  it("returns JSON.parse's value, or undefined where JSON.parse refuses", () => {
    expect(parseJsonFast(enc.encode('{"a":[1]}'))).toEqual({ a: [1] });
    expect(parseJsonFast(enc.encode("[NaN]"))).toBeUndefined();
  });
});

describe("nesting depth (P-10): refused before anything deep is built", () => {
  const DEPTH = `JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_DEPTH})`;

  it("the byte parser takes MAX_JSON_DEPTH levels and refuses the next at its offset", () => {
    const ok = "[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH);
    expect(exact(ok)).toBeInstanceOf(Array);
    expect(parseError(`{"a":${"[".repeat(MAX_JSON_DEPTH)}`).message).toBe(`failed to parse the request JSON buffer: ${DEPTH} at ${5 + MAX_JSON_DEPTH - 1}`);
  });

  it("a syntax error before the limit is still rapidjson's", () => {
    expect(parseError("[1 " + "[".repeat(MAX_JSON_DEPTH + 5)).message).toBe(
      "failed to parse the request JSON buffer: Missing a comma or ']' after an array element. at 3",
    );
  });

  it("16 MiB of '[' is refused by the byte parser and by the pre-check where the limit is crossed, without reading further", () => {
    const deep = new Uint8Array(16 * 1024 * 1024).fill(0x5b);
    // The offsets say where each stopped: at the limit, not at the end of the 16 MiB.
    expect(parseError(deep).message).toBe(`failed to parse the request JSON buffer: ${DEPTH} at ${MAX_JSON_DEPTH}`);
    expect(nestingOverflow(deep)).toBe(MAX_JSON_DEPTH);
    expect(() => checkJsonDepth(deep)).toThrow(`${DEPTH} at ${MAX_JSON_DEPTH}`);
  });

  it("the pre-check counts brackets outside strings only, mixes [ and {, and stops at NUL", () => {
    const nest = (n: number) => '{"a":'.repeat(n) + "[" + "1" + "]" + "}".repeat(n);
    expect(nestingOverflow(enc.encode(nest(MAX_JSON_DEPTH - 1)))).toBe(-1);
    expect(nestingOverflow(enc.encode(nest(MAX_JSON_DEPTH)))).toBe(5 * MAX_JSON_DEPTH);
    const inString = '["' + "[".repeat(MAX_JSON_DEPTH * 2) + '\\"' + "{".repeat(10) + '"]';
    expect(nestingOverflow(enc.encode(inString))).toBe(-1);
    // Many brackets, shallow: the byte pass runs and finds nothing.
    expect(nestingOverflow(enc.encode("[" + "[1],".repeat(MAX_JSON_DEPTH * 3) + "[1]]"))).toBe(-1);
    expect(nestingOverflow(new Uint8Array([0x5b, 0x5d, 0, ...new Uint8Array(MAX_JSON_DEPTH + 1).fill(0x5b)]))).toBe(-1);
    expect(nestingOverflow(enc.encode("[[[["), 3)).toBe(3);
  });
});

describe("shape dims written as doubles (rapidjson IsUint64 refuses 1.0 and 1e0)", () => {
  it('the exact parser returns numbers with a fraction or exponent in arrays under a "shape" key as DoubleLiteral, elsewhere as numbers', () => {
    const v = exact('{"shape":[1,1.0,1e0,2E+1,9007199254740993],"data":[1.0],"o":{"shape":{"a":1.0}},"s":[[1.0]]}') as Record<string, unknown>;
    expect(v.shape).toEqual([1, new DoubleLiteral(1), new DoubleLiteral(1), new DoubleLiteral(20), 9007199254740993n]);
    expect(v.data).toEqual([1]);
    expect(v.o).toEqual({ shape: { a: 1 } });
    expect(v.s).toEqual([[1]]);
    expect(JSON.stringify([new DoubleLiteral(1), new DoubleLiteral(2.5)])).toBe("[1,2.5]");
  });

  it('shapeMayHoldDouble looks only inside arrays that follow a "shape" key', () => {
    expect(shapeMayHoldDouble('{"shape":[1,16],"data":[1.5e3],"name":"e"}')).toBe(false);
    expect(shapeMayHoldDouble('{"shape" :\n[ 1, 1.0 ]}')).toBe(true);
    expect(shapeMayHoldDouble('{"shape":[1e0]}')).toBe(true);
    expect(shapeMayHoldDouble('{"shape":[2E1]}')).toBe(true);
    expect(shapeMayHoldDouble('{"data":["shape", 1.0],"x":"shape"}')).toBe(false);
    expect(shapeMayHoldDouble('{"shape":"1.0"}')).toBe(false);
    expect(shapeMayHoldDouble('{"shape":[1')).toBe(false);
  });
});

describe("parseJsonExactAsync", () => {
  it("gives parseJsonExact's value and errors, letting the event loop run between 1 MiB slices", async () => {
    const text = '{"a":[' + Array.from({ length: 400_000 }, (_, i) => `${i},NaN,"s${i}"`).join(",") + '],"b":{"c":9007199254740993}}';
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const v = await parseJsonExactAsync(enc.encode(text));
    clearInterval(ticker);
    expect(v).toEqual(exact(text));
    expect(turns).toBeGreaterThan(0);
    await expect(parseJsonExactAsync(enc.encode(text + "x"))).rejects.toThrow(
      `failed to parse the request JSON buffer: The document root must not be followed by other values. at ${text.length}`,
    );
    await expect(parseJsonExactAsync(new Uint8Array(3 << 20).fill(0x5b))).rejects.toThrow("JSON nesting depth exceeds maximum allowed limit (10000) at 10000");
  });
});

describe("parseJsonExact: strings of every length around the short-ASCII path (#29)", () => {
  it("gives JSON.parse's strings for printable ASCII (DEL included), escapes and UTF-8 at lengths 0 to 40", () => {
    const values: string[] = [];
    for (let n = 0; n <= 40; n++) {
      values.push("a".repeat(n), "\u007f".repeat(n), `${"b".repeat(n)}"`, `${"c".repeat(n)}é`, `${"d".repeat(n)}\\`, `${"e".repeat(n)}\t`);
    }
    const text = JSON.stringify({ keys: values, [`k${"x".repeat(20)}`]: 1 });
    expect(parseJsonExact(new TextEncoder().encode(text))).toEqual(JSON.parse(text));
  });

  it("an unterminated short string is still rapidjson's error", () => {
    expect(() => parseJsonExact(new TextEncoder().encode('["abc'))).toThrow("Missing a closing quotation mark in string. at 5");
  });
});
