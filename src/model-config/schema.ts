/**
 * @module inference.ModelConfig's schema, read once from the descriptor generated from
 * proto/model_config.proto (no file is read at run time, so this works inside a
 * `bun build --compile` binary). A small reflection of our own: messages, fields, enums
 * and oneofs with their types resolved as protobuf resolves them. It replaced
 * protobufjs's Root.fromJSON here, which took 15–20 ms of the main thread on the first
 * config read at start (#30); the gRPC frontend still reflects the same descriptor with
 * protobufjs for its wire format. Drives the config.pbtxt parser and printer and the JSON
 * rendering, plus the small helpers they share about field kinds and ranges.
 */
import { MODEL_CONFIG_DESCRIPTOR } from "./model-config-descriptor.generated.ts";

export interface EnumType {
  readonly kind: "enum";
  readonly name: string;
  /** "inference.ModelInput.Format" */
  readonly fullName: string;
  readonly values: Readonly<Record<string, number>>;
  readonly valuesById: Readonly<Record<number, string>>;
}

export interface OneOf {
  readonly name: string;
  /** Member field names, in declaration order. */
  readonly oneof: readonly string[];
}

export interface Field {
  readonly name: string;
  readonly id: number;
  /** A scalar type name, or the message's or enum's name as written in the .proto; a map's value type. */
  readonly type: string;
  readonly repeated: boolean;
  readonly map: boolean;
  /** A map's key type ("string", "uint64", ...). */
  readonly keyType: string | undefined;
  /** The message or enum `type` names; null for a scalar. */
  readonly resolvedType: MessageType | EnumType | null;
  /** The oneof the field belongs to. */
  readonly partOf: OneOf | null;
}

export interface MessageType {
  readonly kind: "message";
  readonly name: string;
  /** "inference.ModelInput" */
  readonly fullName: string;
  /** By name, own properties only (see fieldNamed). */
  readonly fields: Readonly<Record<string, Field>>;
  /** In declaration order. */
  readonly fieldsArray: readonly Field[];
  readonly oneofsArray: readonly OneOf[];
  /** The messages and enums declared inside, in declaration order. */
  readonly nested: readonly (MessageType | EnumType)[];
}

interface DescriptorNode {
  nested?: Record<string, DescriptorNode>;
  fields?: Record<string, { type: string; id: number; rule?: string; keyType?: string }>;
  values?: Record<string, number>;
  oneofs?: Record<string, { oneof: string[] }>;
}

interface Schema {
  /** The top-level messages and enums of every package, in declaration order. */
  readonly top: readonly (MessageType | EnumType)[];
  readonly byName: ReadonlyMap<string, MessageType | EnumType>;
}

let schema: Schema | undefined;

/** Every message and enum of model_config.proto, built on first use. */
export function modelConfigSchema(): Schema {
  return (schema ??= buildSchema(MODEL_CONFIG_DESCRIPTOR as DescriptorNode));
}

export function modelConfigType(): MessageType {
  return modelConfigSchema().byName.get("inference.ModelConfig") as MessageType;
}

/** "inference.ModelInput". */
export function typeName(t: MessageType | EnumType): string {
  return t.fullName;
}

function buildSchema(root: DescriptorNode): Schema {
  const byName = new Map<string, MessageType | EnumType>();
  const pending: { field: { resolvedType: MessageType | EnumType | null }; type: string; scope: string }[] = [];
  const walk = (node: DescriptorNode, prefix: string): (MessageType | EnumType)[] => {
    const out: (MessageType | EnumType)[] = [];
    for (const [name, child] of Object.entries(node.nested ?? {})) {
      const fullName = prefix ? `${prefix}.${name}` : name;
      if (child.values) {
        const valuesById: Record<number, string> = {};
        for (const [k, v] of Object.entries(child.values)) valuesById[v] = k; // the last name of a value, as protobufjs
        const e: EnumType = { kind: "enum", name, fullName, values: { ...child.values }, valuesById };
        byName.set(fullName, e);
        out.push(e);
      } else if (child.fields) {
        const oneofsArray: OneOf[] = Object.entries(child.oneofs ?? {}).map(([n, o]) => ({ name: n, oneof: [...o.oneof] }));
        const fields: Record<string, Field> = {};
        const fieldsArray: Field[] = [];
        for (const [n, f] of Object.entries(child.fields)) {
          const field = {
            name: n,
            id: f.id,
            type: f.type,
            repeated: f.rule === "repeated",
            map: f.keyType !== undefined,
            keyType: f.keyType,
            resolvedType: null,
            partOf: oneofsArray.find((o) => o.oneof.includes(n)) ?? null,
          };
          if (!SCALARS.has(f.type)) pending.push({ field, type: f.type, scope: fullName });
          fields[n] = field;
          fieldsArray.push(field);
        }
        const m: MessageType = { kind: "message", name, fullName, fields, fieldsArray, oneofsArray, nested: walk(child, fullName) };
        byName.set(fullName, m);
        out.push(m);
      } else {
        out.push(...walk(child, fullName)); // a package
      }
    }
    return out;
  };
  const top = walk(root, "");
  // As protobuf resolves a type name: in the field's message, then each enclosing scope outwards.
  const resolve = (type: string, scope: string): MessageType | EnumType | undefined => {
    for (let s = scope; ; ) {
      const hit = byName.get(s ? `${s}.${type}` : type);
      if (hit || !s) return hit;
      s = s.slice(0, Math.max(0, s.lastIndexOf(".")));
    }
  };
  for (const { field, type, scope } of pending) {
    const found = resolve(type, scope);
    if (!found) throw new Error(`model_config.proto: type '${type}' used in ${scope} is not defined`);
    field.resolvedType = found;
  }
  return { top, byName };
}

const SCALARS = new Set([
  "double",
  "float",
  "int32",
  "int64",
  "uint32",
  "uint64",
  "sint32",
  "sint64",
  "fixed32",
  "fixed64",
  "sfixed32",
  "sfixed64",
  "bool",
  "string",
  "bytes",
]);

export type FieldKind = "message" | "enum" | "bool" | "string" | "bytes" | "int" | "uint" | "float";

const INT_TYPES = new Set(["int32", "int64", "sint32", "sint64", "sfixed32", "sfixed64"]);
const UINT_TYPES = new Set(["uint32", "uint64", "fixed32", "fixed64"]);

/** What kind of value a field (or a map's value) holds. */
export function fieldKind(field: Field): FieldKind {
  return field.resolvedType ? field.resolvedType.kind : scalarKind(field.type);
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
export function fieldNamed(type: MessageType, name: string): Field | undefined {
  return Object.hasOwn(type.fields, name) ? type.fields[name] : undefined;
}

/** Whether enum `e` has a value called `name` (own values only, as fieldNamed). */
export function enumHasName(e: EnumType, name: string): boolean {
  return Object.hasOwn(e.values, name);
}

/** The zero value protobuf gives an unset scalar or enum field. */
export function defaultScalar(field: Field): unknown {
  const t = field.resolvedType;
  if (t?.kind === "enum") return t.valuesById[0] ?? Object.keys(t.values)[0];
  const kind = fieldKind(field);
  if (kind === "bool") return false;
  if (kind === "string" || kind === "bytes") return "";
  return 0;
}

/** The oneof a field belongs to (proto3 `oneof`, not synthetic optionals). */
export function realOneof(field: Field): OneOf | null {
  return field.partOf && !field.partOf.name.startsWith("_") ? field.partOf : null;
}

/** The key type of a map field ("string", "uint64", ...). */
export function mapKeyType(field: Field): string {
  return field.keyType as string;
}

/** Sets obj[key] as an own data property, even for map keys such as "__proto__". */
export function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
