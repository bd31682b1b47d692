/**
 * @module The reflected inference.ModelConfig type (protobufjs), parsed once from the
 * embedded copy of proto/model_config.proto. Drives the config.pbtxt parser and printer
 * and the JSON rendering.
 */
import protobuf from "protobufjs";
import { MODEL_CONFIG_PROTO } from "./model-config-proto.generated.ts";

let root: protobuf.Root | undefined;

export function modelConfigRoot(): protobuf.Root {
  if (!root) {
    root = protobuf.parse(MODEL_CONFIG_PROTO, { keepCase: true }).root;
    root.resolveAll();
  }
  return root;
}

export function modelConfigType(): protobuf.Type {
  return modelConfigRoot().lookupType("inference.ModelConfig");
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

/** The oneof a field belongs to (proto3 `oneof`, not synthetic optionals). */
export function realOneof(field: protobuf.Field): protobuf.OneOf | null {
  return field.partOf && !field.partOf.name.startsWith("_") ? field.partOf : null;
}

/** The key type of a map field ("string", "uint64", ...). */
export function mapKeyType(field: protobuf.Field): string {
  return (field as unknown as protobuf.MapField).keyType;
}
