/**
 * @module The reflected inference.ModelConfig type (protobufjs), built once from the
 * descriptor generated from proto/model_config.proto (no file is read at run time, so this
 * works inside a `bun build --compile` binary; reflecting the descriptor takes half the
 * time of parsing the .proto text on the first config read at start). Drives the
 * config.pbtxt parser and printer and the JSON rendering, plus the small helpers they
 * share about field kinds and ranges.
 */
import protobuf from "protobufjs";
import { MODEL_CONFIG_DESCRIPTOR } from "./model-config-descriptor.generated.ts";

let root: protobuf.Root | undefined;

export function modelConfigRoot(): protobuf.Root {
  if (!root) {
    root = protobuf.Root.fromJSON(MODEL_CONFIG_DESCRIPTOR);
    root.resolveAll();
  }
  return root;
}

export function modelConfigType(): protobuf.Type {
  return modelConfigRoot().lookupType("inference.ModelConfig");
}

/** "inference.ModelInput", without protobufjs's leading dot. */
export function typeName(t: protobuf.Type | protobuf.Enum): string {
  return t.fullName.replace(/^\./, "");
}

export type FieldKind = "message" | "enum" | "bool" | "string" | "bytes" | "int" | "uint" | "float";

const INT_TYPES = new Set(["int32", "int64", "sint32", "sint64", "sfixed32", "sfixed64"]);
const UINT_TYPES = new Set(["uint32", "uint64", "fixed32", "fixed64"]);

/** What kind of value a field (or a map's value) holds. */
export function fieldKind(field: protobuf.Field): FieldKind {
  if (field.resolvedType instanceof protobuf.Type) return "message";
  if (field.resolvedType instanceof protobuf.Enum) return "enum";
  return scalarKind(field.type);
}

export function scalarKind(type: string): FieldKind {
  if (type === "bool") return "bool";
  if (type === "string") return "string";
  if (type === "bytes") return "bytes";
  if (INT_TYPES.has(type)) return "int";
  if (UINT_TYPES.has(type)) return "uint";
  if (type === "float" || type === "double") return "float";
  throw new Error(`unsupported proto type '${type}'`);
}

/**
 * The values an integer type accepts here: its own range for 32-bit types; for 64-bit
 * types the range a JS number holds exactly (the config shape keeps int64 as numbers).
 */
export function integerBounds(type: string): readonly [number, number] {
  switch (type) {
    case "int32":
    case "sint32":
    case "sfixed32":
      return [-0x80000000, 0x7fffffff];
    case "uint32":
    case "fixed32":
      return [0, 0xffffffff];
    case "uint64":
    case "fixed64":
      return [0, Number.MAX_SAFE_INTEGER];
    default:
      return [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
  }
}

/**
 * The field of `type` called `name`, or undefined: own fields only, so that a name such
 * as "constructor" or "__proto__" (an Object.prototype member) is an unknown field.
 */
export function fieldNamed(type: protobuf.Type, name: string): protobuf.Field | undefined {
  return Object.hasOwn(type.fields, name) ? type.fields[name] : undefined;
}

/** Whether enum `e` has a value called `name` (own values only, as fieldNamed). */
export function enumHasName(e: protobuf.Enum, name: string): boolean {
  return Object.hasOwn(e.values, name);
}

/** The zero value protobuf gives an unset scalar or enum field. */
export function defaultScalar(field: protobuf.Field): unknown {
  const kind = fieldKind(field);
  if (kind === "enum") return (field.resolvedType as protobuf.Enum).valuesById[0] ?? Object.keys((field.resolvedType as protobuf.Enum).values)[0];
  if (kind === "bool") return false;
  if (kind === "string" || kind === "bytes") return "";
  return 0;
}

/** The oneof a field belongs to (proto3 `oneof`, not synthetic optionals). */
export function realOneof(field: protobuf.Field): protobuf.OneOf | null {
  return field.partOf && !field.partOf.name.startsWith("_") ? field.partOf : null;
}

/** The key type of a map field ("string", "uint64", ...). */
export function mapKeyType(field: protobuf.Field): string {
  return (field as unknown as protobuf.MapField).keyType;
}

/** Sets obj[key] as an own data property, even for map keys such as "__proto__". */
export function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
