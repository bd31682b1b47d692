/**
 * @module config.pbtxt: protobuf text format parsed into and printed from the
 * ModelConfig shape of types.ts, driven by the reflected schema so that every field of
 * model_config.proto round-trips. Unknown fields are errors, as in Triton's parser.
 */
import {
  modelConfigType,
  fieldKind,
  scalarKind,
  realOneof,
  mapKeyType,
  integerBounds,
  defaultScalar,
  typeName,
  setKey,
  fieldNamed,
  enumHasName,
  type FieldKind,
  type Field,
  type MessageType,
  type EnumType,
} from "./schema.ts";
import { tokenize, syntaxError, type Token } from "./pbtxt-lexer.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

type Obj = Record<string, unknown>;

const TRUE_WORDS = new Set(["true", "True", "t"]);
const FALSE_WORDS = new Set(["false", "False", "f"]);
const INTEGER = /^-?(0[xX][0-9a-fA-F]+|\d+)$/;

function describe(t: Token): string {
  if (t.kind === "eof") return "end of input";
  if (t.kind === "string") return `string "${t.text}"`;
  return `'${t.text}'`;
}

/** Integer literal text → number: decimal, 0x hex, or 0-prefixed octal (as protobuf reads it). */
function integerValue(text: string): number {
  const neg = text.startsWith("-");
  const body = neg ? text.slice(1) : text;
  const v = /^0[0-7]+$/.test(body) ? parseInt(body, 8) : Number(body);
  return neg && v !== 0 ? -v : v; // "-0" is 0: integers have no negative zero
}

class Parser {
  readonly #tokens: Token[];
  readonly #file: string;
  #pos = 0;

  constructor(text: string, file: string) {
    this.#file = file;
    this.#tokens = tokenize(text, file);
  }

  #peek(): Token {
    return this.#tokens[this.#pos]!;
  }

  #next(): Token {
    return this.#tokens[this.#pos++]!;
  }

  #fail(tok: Token, message: string): never {
    throw syntaxError(this.#file, tok.line, tok.col, message);
  }

  #isSymbol(text: string): boolean {
    const t = this.#peek();
    return t.kind === "symbol" && t.text === text;
  }

  #expectSymbol(text: string): Token {
    const t = this.#next();
    if (t.kind !== "symbol" || t.text !== text) this.#fail(t, `expected '${text}', found ${describe(t)}`);
    return t;
  }

  /** Fields of `type` until `close` ("}" or ">"), or until end of input when undefined. */
  parseFields(type: MessageType, close: string | undefined): Obj {
    const obj: Obj = {};
    const seenOneof = new Map<string, string>();
    for (;;) {
      const t = this.#peek();
      if (close === undefined && t.kind === "eof") return obj;
      if (close !== undefined && t.kind === "symbol" && t.text === close) {
        this.#next();
        return obj;
      }
      if (t.kind === "eof") this.#fail(t, `expected '${close}' before end of input`);
      if (t.kind !== "ident") this.#fail(t, `expected a field name, found ${describe(t)}`);
      this.#next();
      const field = fieldNamed(type, t.text);
      if (!field) this.#fail(t, `unknown field '${t.text}' in ${typeName(type)}`);
      const oneof = realOneof(field);
      if (oneof) {
        const other = seenOneof.get(oneof.name);
        if (other && other !== field.name) this.#fail(t, `field '${field.name}' is in oneof '${oneof.name}' with '${other}', which is already set`);
        seenOneof.set(oneof.name, field.name);
      }
      this.#parseField(obj, field, t);
      if (this.#isSymbol(",") || this.#isSymbol(";")) this.#next();
    }
  }

  /** `name: value`, `name { ... }`, `name: { ... }` or `name [ v, ... ]` (name already read). */
  #parseField(obj: Obj, field: Field, nameTok: Token): void {
    const kind = field.map ? "message" : fieldKind(field);
    if (this.#isSymbol(":")) this.#next();
    else if (kind !== "message") this.#fail(this.#peek(), `expected ':' after '${field.name}'`);

    const values: unknown[] = [];
    if (this.#isSymbol("[")) {
      if (!field.repeated && !field.map) this.#fail(this.#peek(), `field '${field.name}' is not repeated and cannot take a list`);
      this.#next();
      if (!this.#isSymbol("]")) {
        for (;;) {
          values.push(this.#parseValue(field, kind));
          if (!this.#isSymbol(",")) break;
          this.#next();
        }
      }
      this.#expectSymbol("]");
    } else {
      values.push(this.#parseValue(field, kind));
    }

    if (field.map) {
      const map = (obj[field.name] ??= {}) as Obj;
      for (const entry of values as { key: string; value: unknown }[]) setKey(map, entry.key, entry.value);
    } else if (field.repeated) {
      const list = (obj[field.name] ??= []) as unknown[];
      for (const v of values) list.push(v); // not push(...values): a list of a million dims overflows the stack
    } else {
      if (field.name in obj) this.#fail(nameTok, `non-repeated field '${field.name}' is specified more than once`);
      obj[field.name] = values[0];
    }
  }

  #parseValue(field: Field, kind: FieldKind): unknown {
    if (field.map) return this.#parseMapEntry(field);
    if (kind === "message") return this.#parseMessage(field.resolvedType as MessageType);
    if (kind === "enum") return this.#parseEnum(field.resolvedType as EnumType);
    return this.#parseScalar(field.type, field.name);
  }

  #open(): { open: Token; close: string } {
    const open = this.#next();
    if (open.kind !== "symbol" || (open.text !== "{" && open.text !== "<")) this.#fail(open, `expected '{', found ${describe(open)}`);
    return { open, close: open.text === "{" ? "}" : ">" };
  }

  #parseMessage(type: MessageType): Obj {
    return this.parseFields(type, this.#open().close);
  }

  /** `{ key: k value: v }` or `{ key: k value { ... } }`; a missing value is the default. */
  #parseMapEntry(field: Field): { key: string; value: unknown } {
    const { open, close } = this.#open();
    const valueKind = fieldKind(field);
    let key: unknown;
    let value: unknown;
    while (!this.#isSymbol(close)) {
      const t = this.#next();
      if (t.kind !== "ident" || (t.text !== "key" && t.text !== "value"))
        this.#fail(t, `expected 'key' or 'value' in map '${field.name}', found ${describe(t)}`);
      const isKey = t.text === "key";
      if (this.#isSymbol(":")) this.#next();
      else if (isKey || valueKind !== "message") this.#fail(this.#peek(), `expected ':' after '${t.text}'`);
      if (isKey) key = this.#parseScalar(mapKeyType(field), `${field.name}.key`);
      else if (valueKind === "message") value = this.#parseMessage(field.resolvedType as MessageType);
      else if (valueKind === "enum") value = this.#parseEnum(field.resolvedType as EnumType);
      else value = this.#parseScalar(field.type, `${field.name}.value`);
      if (this.#isSymbol(",") || this.#isSymbol(";")) this.#next();
    }
    this.#next();
    if (key === undefined) this.#fail(open, `map entry of '${field.name}' has no key`);
    if (value === undefined) value = valueKind === "message" ? {} : defaultScalar(field);
    return { key: String(key), value };
  }

  /** An enum value by name or by number. */
  #parseEnum(e: EnumType): string {
    const t = this.#next();
    if (t.kind === "ident") {
      if (!enumHasName(e, t.text)) this.#fail(t, `unknown value '${t.text}' for enum ${typeName(e)}`);
      return t.text;
    }
    if (t.kind === "number" && /^-?\d+$/.test(t.text)) {
      const name = e.valuesById[Number(t.text)];
      if (name === undefined) this.#fail(t, `unknown value ${t.text} for enum ${typeName(e)}`);
      return name;
    }
    this.#fail(t, `expected an enum value, found ${describe(t)}`);
  }

  /** A scalar of proto type `type` ("int32", "string", ...); `name` is for messages. */
  #parseScalar(type: string, name: string): unknown {
    const kind = scalarKind(type);
    const t = this.#next();
    switch (kind) {
      case "string":
      case "bytes": {
        if (t.kind !== "string") this.#fail(t, `expected a string for '${name}', found ${describe(t)}`);
        let s = t.text;
        while (this.#peek().kind === "string") s += this.#next().text;
        return s;
      }
      case "bool":
        if (t.kind === "ident" && TRUE_WORDS.has(t.text)) return true;
        if (t.kind === "ident" && FALSE_WORDS.has(t.text)) return false;
        if (t.kind === "number" && (t.text === "1" || t.text === "0")) return t.text === "1";
        return this.#fail(t, `expected true or false for '${name}', found ${describe(t)}`);
      case "int":
      case "uint": {
        if (t.kind !== "number" || !INTEGER.test(t.text)) this.#fail(t, `expected an integer for '${name}', found ${describe(t)}`);
        const v = integerValue(t.text);
        if (kind === "uint" && v < 0) this.#fail(t, `expected a non-negative integer for '${name}', found ${t.text}`);
        const [lo, hi] = integerBounds(type);
        if (!Number.isSafeInteger(v) || v < lo || v > hi) this.#fail(t, `integer ${t.text} for '${name}' is out of range`);
        return v;
      }
      case "float": {
        if (t.kind === "number") {
          const s = t.text.replace(/(?<=[\d.])[fF]$/, "").toLowerCase(); // 1.5f, but not -inf
          if (s.endsWith("inf") || s.endsWith("infinity")) return s.startsWith("-") ? -Infinity : Infinity;
          if (s.endsWith("nan")) return NaN;
          return Number(s);
        }
        if (t.kind === "ident" && /^(inf|infinity|nan)$/i.test(t.text)) return /nan/i.test(t.text) ? NaN : Infinity;
        return this.#fail(t, `expected a number for '${name}', found ${describe(t)}`);
      }
      default:
        return this.#fail(t, `unsupported field kind for '${name}'`);
    }
  }
}

/**
 * Parses config.pbtxt text into the ModelConfig shape of types.ts. Throws INVALID_ARG
 * "<file>:<line>:<col>: <what>" on any syntax error, unknown field or bad value.
 */
export function parsePbtxt(text: string, file = "config.pbtxt"): ModelConfig {
  return new Parser(text, file).parseFields(modelConfigType(), undefined) as ModelConfig;
}

// ---------------------------------------------------------------------------- printer

function quote(s: string): string {
  let out = '"';
  for (const b of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(b);
    if (c === '"') out += '\\"';
    else if (c === "\\") out += "\\\\";
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (b < 0x20 || b >= 0x7f) out += "\\" + b.toString(8).padStart(3, "0");
    else out += c;
  }
  return out + '"';
}

function scalarText(kind: FieldKind, v: unknown): string {
  if (kind === "string" || kind === "bytes") return quote(String(v));
  if (kind === "float") {
    const n = Number(v);
    if (Object.is(n, -0)) return "-0"; // String(-0) is "0"
    return Number.isNaN(n) ? "nan" : n === Infinity ? "inf" : n === -Infinity ? "-inf" : String(n);
  }
  return String(v);
}

function printMessage(type: MessageType, obj: Obj, indent: string, out: string[]): void {
  for (const field of type.fieldsArray) {
    const v = obj[field.name];
    if (v === undefined) continue;
    const kind = fieldKind(field);
    if (field.map) {
      const entries = Object.entries(v as Obj);
      // An empty map prints as an empty list so that it reads back as {}.
      if (entries.length === 0) out.push(`${indent}${field.name}: []`);
      const keyText = (k: string) => (scalarKind(mapKeyType(field)) === "string" ? quote(k) : k);
      for (const [k, val] of entries) {
        out.push(`${indent}${field.name} {`, `${indent}  key: ${keyText(k)}`);
        if (kind === "message") {
          out.push(`${indent}  value {`);
          printMessage(field.resolvedType as MessageType, val as Obj, indent + "    ", out);
          out.push(`${indent}  }`);
        } else {
          out.push(`${indent}  value: ${scalarText(kind, val)}`);
        }
        out.push(`${indent}}`);
      }
    } else if (field.repeated && (v as unknown[]).length === 0) {
      out.push(`${indent}${field.name}: []`);
    } else if (kind === "message") {
      for (const item of field.repeated ? (v as Obj[]) : [v as Obj]) {
        out.push(`${indent}${field.name} {`);
        printMessage(field.resolvedType as MessageType, item, indent + "  ", out);
        out.push(`${indent}}`);
      }
    } else if (field.repeated) {
      out.push(`${indent}${field.name}: [ ${(v as unknown[]).map((x) => scalarText(kind, x)).join(", ")} ]`);
    } else {
      out.push(`${indent}${field.name}: ${scalarText(kind, v)}`);
    }
  }
}

/**
 * Prints a ModelConfig as config.pbtxt text: fields in schema order, 2-space indent,
 * repeated scalars as `[ a, b ]`, messages and map entries as blocks. Parsing the text
 * gives back an equal config.
 */
export function printPbtxt(config: ModelConfig): string {
  const out: string[] = [];
  printMessage(modelConfigType(), config as Obj, "", out);
  return out.join("\n") + "\n";
}
