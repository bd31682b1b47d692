/**
 * @module ModelConfig ↔ JSON as Triton's model_configuration extension prints it:
 * snake_case names, every scalar printed even at its default, repeated fields as [],
 * maps as {}, unset messages and oneof members omitted, 64-bit integers as numbers.
 * configFromJson() checks a JSON config (the repository load API's `config`).
 */
import protobuf from "protobufjs";
import { invalidArg } from "../core/errors.ts";
import { modelConfigType, fieldKind, scalarKind, realOneof, mapKeyType, type FieldKind } from "./schema.ts";
import type { ModelConfig } from "./types.ts";

type Obj = Record<string, unknown>;

function defaultOf(kind: FieldKind, field: protobuf.Field): unknown {
  if (kind === "enum") return (field.resolvedType as protobuf.Enum).valuesById[0] ?? Object.keys((field.resolvedType as protobuf.Enum).values)[0];
  if (kind === "bool") return false;
  if (kind === "string" || kind === "bytes") return "";
  return 0;
}

function toJson(type: protobuf.Type, obj: Obj): Obj {
  const out: Obj = {};
  for (const field of type.fieldsArray) {
    const v = obj[field.name];
    const kind = fieldKind(field);
    if (field.map) {
      const entries = Object.entries((v as Obj | undefined) ?? {});
      out[field.name] = Object.fromEntries(entries.map(([k, x]) => [k, kind === "message" ? toJson(field.resolvedType as protobuf.Type, x as Obj) : x]));
    } else if (field.repeated) {
      const arr = (v as unknown[] | undefined) ?? [];
      out[field.name] = kind === "message" ? arr.map((x) => toJson(field.resolvedType as protobuf.Type, x as Obj)) : [...arr];
    } else if (v !== undefined) {
      out[field.name] = kind === "message" ? toJson(field.resolvedType as protobuf.Type, v as Obj) : v;
    } else if (kind !== "message" && !realOneof(field)) {
      out[field.name] = defaultOf(kind, field);
    }
  }
  return out;
}

/** The /config response body. */
export function configToJson(config: ModelConfig): Obj {
  return toJson(modelConfigType(), config as Obj);
}

const camelToSnake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function checkScalar(kind: FieldKind, v: unknown, path: string, field?: protobuf.Field): unknown {
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
      return n;
    }
    case "float": {
      const n = typeof v === "string" && ["NaN", "Infinity", "-Infinity"].includes(v) ? Number(v) : v;
      if (typeof n !== "number") throw invalidArg(`${path}: expected a number`);
      return n;
    }
    case "enum": {
      const e = field!.resolvedType as protobuf.Enum;
      if (typeof v === "string" && v in e.values) return v;
      if (typeof v === "number" && e.valuesById[v] !== undefined) return e.valuesById[v];
      throw invalidArg(`${path}: unknown value ${JSON.stringify(v)} for enum ${e.name}`);
    }
    default:
      throw invalidArg(`${path}: unsupported field`);
  }
}

function fromJson(type: protobuf.Type, obj: unknown, path: string): Obj {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) throw invalidArg(`${path}: expected an object`);
  const out: Obj = {};
  const oneofs = new Map<string, string>();
  for (const [rawKey, v] of Object.entries(obj)) {
    const field = type.fields[rawKey] ?? type.fields[camelToSnake(rawKey)];
    if (!field) throw invalidArg(`${path}: unknown field '${rawKey}' in ${type.name}`);
    const p = `${path}.${field.name}`;
    if (v === null) continue;
    const oneof = realOneof(field);
    if (oneof) {
      const other = oneofs.get(oneof.name);
      if (other) throw invalidArg(`${p}: oneof '${oneof.name}' already set by '${other}'`);
      oneofs.set(oneof.name, field.name);
    }
    const kind = fieldKind(field);
    const one = (x: unknown, q: string) => (kind === "message" ? fromJson(field.resolvedType as protobuf.Type, x, q) : checkScalar(kind, x, q, field));
    if (field.map) {
      if (typeof v !== "object" || Array.isArray(v)) throw invalidArg(`${p}: expected an object`);
      const keyKind = scalarKind(mapKeyType(field));
      out[field.name] = Object.fromEntries(
        Object.entries(v as Obj).map(([k, x]) => {
          if (keyKind !== "string") checkScalar(keyKind, k, `${p}[${k}]`);
          return [k, one(x, `${p}[${k}]`)];
        }),
      );
    } else if (field.repeated) {
      if (!Array.isArray(v)) throw invalidArg(`${p}: expected an array`);
      out[field.name] = v.map((x, i) => one(x, `${p}[${i}]`));
    } else {
      out[field.name] = one(v, p);
    }
  }
  return out;
}

/** Checks and converts a JSON model config (snake_case or camelCase names). */
export function configFromJson(json: unknown): ModelConfig {
  return fromJson(modelConfigType(), json, "config") as ModelConfig;
}
