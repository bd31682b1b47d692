/**
 * @module ModelConfig ↔ JSON as Triton's model_configuration extension prints it:
 * snake_case names in schema order, every scalar printed even at its default, repeated
 * fields as [], maps as {}, unset messages and oneof members omitted, 64-bit integers as
 * numbers, non-finite floats as "NaN" / "Infinity" / "-Infinity" (protobuf's JSON mapping).
 * configFromJson() checks a JSON config (the repository load API's `config` override).
 */
import { invalidArg } from "../core/errors.ts";
import * as schema from "./schema.ts";
import type { Field, MessageType, EnumType } from "./schema.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

type Obj = Record<string, unknown>;

const NON_FINITE: Record<string, number> = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

function floatToJson(v: number): number | string {
  return Number.isFinite(v) ? v : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

function valueToJson(field: Field, v: unknown): unknown {
  const kind = schema.fieldKind(field);
  if (kind === "message") return toJson(field.resolvedType as MessageType, v as Obj);
  if (kind === "float") return floatToJson(v as number);
  return v;
}

function toJson(type: MessageType, obj: Obj): Obj {
  const out: Obj = {};
  for (const field of type.fieldsArray) {
    const v = obj[field.name];
    if (field.map) {
      const map: Obj = {};
      for (const [k, x] of Object.entries((v as Obj | undefined) ?? {})) schema.setKey(map, k, valueToJson(field, x));
      out[field.name] = map;
    } else if (field.repeated) {
      out[field.name] = ((v as unknown[] | undefined) ?? []).map((x) => valueToJson(field, x));
    } else if (v !== undefined) {
      out[field.name] = valueToJson(field, v);
    } else if (schema.fieldKind(field) !== "message" && !schema.realOneof(field)) {
      out[field.name] = schema.defaultScalar(field);
    }
  }
  return out;
}

/** The /config response body for `config` (a fresh object; nothing is shared with it). */
export function configToJson(config: ModelConfig): Obj {
  return toJson(schema.modelConfigType(), config as Obj);
}

// ------------------------------------------------------------------------- from JSON

const camelToSnake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const SHOWN_MAX = 100;

/** Text from a client as an error quotes it: at most SHOWN_MAX characters. */
const clip = (s: string) => (s.length > SHOWN_MAX ? `${s.slice(0, SHOWN_MAX)}…` : s);

/** A client's value as an error shows it: a scalar as JSON (clipped), an array or object by its kind, never whole. */
function shown(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object" && v !== null) return "an object";
  return clip(JSON.stringify(v) ?? String(v));
}

/** A JSON scalar of proto type `type` (or of enum `e`), checked as protobuf's JSON parser does. */
function checkScalar(type: string, e: EnumType | undefined, v: unknown, path: string): unknown {
  if (e) {
    if (typeof v === "string" && schema.enumHasName(e, v)) return v;
    if (typeof v === "number" && e.valuesById[v] !== undefined) return e.valuesById[v];
    throw invalidArg(`${path}: unknown value ${shown(v)} for enum ${e.name}`);
  }
  const kind = schema.scalarKind(type);
  switch (kind) {
    case "bool":
      if (typeof v !== "boolean") throw invalidArg(`${path}: expected a boolean`);
      return v;
    case "string":
    case "bytes":
      if (typeof v !== "string") throw invalidArg(`${path}: expected a string`);
      return v;
    case "int":
    case "uint": {
      const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
      if (typeof n !== "number" || !Number.isSafeInteger(n) || (kind === "uint" && n < 0)) {
        throw invalidArg(`${path}: expected ${kind === "uint" ? "a non-negative " : "an "}integer`);
      }
      const [lo, hi] = schema.integerBounds(type);
      if (n < lo || n > hi) throw invalidArg(`${path}: integer ${n} is out of range for ${type}`);
      return n;
    }
    case "float": {
      if (typeof v === "number") return v;
      if (typeof v === "string" && v in NON_FINITE) return NON_FINITE[v];
      if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
      throw invalidArg(`${path}: expected a number`);
    }
    default:
      throw invalidArg(`${path}: unsupported field`);
  }
}

function fieldValue(field: Field, v: unknown, path: string): unknown {
  const t = field.resolvedType;
  if (t?.kind === "message") return fromJson(t, v, path);
  return checkScalar(field.type, t ?? undefined, v, path);
}

function fromJson(type: MessageType, obj: unknown, path: string): Obj {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) throw invalidArg(`${path}: expected an object`);
  const out: Obj = {};
  const oneofs = new Map<string, string>();
  for (const [rawKey, v] of Object.entries(obj)) {
    const field = schema.fieldNamed(type, rawKey) ?? schema.fieldNamed(type, camelToSnake(rawKey));
    if (!field) throw invalidArg(`${path}: unknown field '${clip(rawKey)}' in ${type.name}`);
    const p = `${path}.${field.name}`;
    if (v === null) continue;
    const oneof = schema.realOneof(field);
    if (oneof) {
      const other = oneofs.get(oneof.name);
      if (other) throw invalidArg(`${p}: oneof '${oneof.name}' already set by '${other}'`);
      oneofs.set(oneof.name, field.name);
    }
    if (field.map) {
      if (typeof v !== "object" || Array.isArray(v)) throw invalidArg(`${p}: expected an object`);
      const keyType = schema.mapKeyType(field);
      const map: Obj = {};
      for (const [k, x] of Object.entries(v as Obj)) {
        // Integer keys arrive as JSON strings; keep them in their canonical decimal form.
        const at = `${p}[${clip(k)}]`;
        const key = schema.scalarKind(keyType) === "string" ? k : String(checkScalar(keyType, undefined, k, at));
        schema.setKey(map, key, fieldValue(field, x, at));
      }
      out[field.name] = map;
    } else if (field.repeated) {
      if (!Array.isArray(v)) throw invalidArg(`${p}: expected an array`);
      out[field.name] = v.map((x, i) => fieldValue(field, x, `${p}[${i}]`));
    } else {
      out[field.name] = fieldValue(field, v, p);
    }
  }
  return out;
}

/**
 * Checks a JSON model config (protobuf JSON: snake_case or camelCase names, 64-bit
 * integers as numbers or strings, enums by name or number) and returns it in the
 * ModelConfig shape. Unknown fields and wrong types throw INVALID_ARG naming the path.
 */
export function configFromJson(json: unknown): ModelConfig {
  return fromJson(schema.modelConfigType(), json, "config") as ModelConfig;
}
