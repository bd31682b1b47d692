/**
 * @module OpenVINO C API 2.0 values and layouts, from the published headers
 * (src/bindings/c/include/openvino/c/): ov_status_e, the ov_element_type_e table of each
 * range of releases, and the structs passed by pointer or by value (ov_version_t,
 * ov_dimension_t / ov_rank_t, ov_partial_shape_t, ov_shape_t).
 *
 * ov_element_type_e is not stable across releases, and values cross the C boundary as
 * plain integers, so a binding built against one table silently mislabels tensors of
 * another. The tables (ov_common.h, confirmed against the bindgen output of
 * intel/openvino-rs and the generated enums of sdcb/OpenVINO.NET at each release):
 *
 * - 2023.0 - 2024.1: UNDEFINED 0, DYNAMIC 1, BOOLEAN 2, ... U1 12, U4 13, U8 14 ... U64 17,
 *   then NF4, F8E4M3, F8E5M3 appended in later releases of the range;
 * - 2024.2 - 2025.0: U2, U3 inserted before U4 and U6 before U8 (openvino PR #24608,
 *   merged for 2024.2), so U8 is 17 ... U64 20; STRING, F4E2M1, F8E8M0 appended;
 * - 2025.1 on: DYNAMIC folded into UNDEFINED (both 0; 2026.x names it DYNAMIC), so every
 *   later value drops by one: BOOLEAN 1, F32 4, U8 16.
 */
import { getKoffi, LibraryLoadError, type KoffiType } from "../load.ts";
import type { DataType } from "../../src/core/tensor.ts";

/** ov_status_e (ov_common.h), by value. Unchanged from 2022.1 to 2026.x. */
export const OV_STATUS = {
  OK: 0,
  GENERAL_ERROR: -1,
  NOT_IMPLEMENTED: -2,
  NETWORK_NOT_LOADED: -3,
  PARAMETER_MISMATCH: -4,
  NOT_FOUND: -5,
  OUT_OF_BOUNDS: -6,
  UNEXPECTED: -7,
  REQUEST_BUSY: -8,
  RESULT_NOT_READY: -9,
  NOT_ALLOCATED: -10,
  INFER_NOT_STARTED: -11,
  NETWORK_NOT_READ: -12,
  INFER_CANCELLED: -13,
  INVALID_C_PARAM: -14,
  UNKNOWN_C_ERROR: -15,
  NOT_IMPLEMENT_C_METHOD: -16,
  UNKNOW_EXCEPTION: -17,
} as const;

export function statusName(status: number): string {
  return Object.entries(OV_STATUS).find(([, v]) => v === status)?.[0] ?? `ov_status_e(${status})`;
}

/** One ov_element_type_e table: names in declaration order (index = value), for releases from `since`. */
export interface ElementTypeTable {
  /** First release [year, minor] with this table. */
  since: readonly [number, number];
  /** "2024.2 - 2025.0" */
  label: string;
  names: readonly string[];
}

const COMMON_HEAD = ["BF16", "F16", "F32", "F64", "I4", "I8", "I16", "I32", "I64", "U1"] as const;

export const ELEMENT_TYPE_TABLES: readonly ElementTypeTable[] = [
  {
    since: [2025, 1],
    label: "2025.1 and later",
    names: ["UNDEFINED", "BOOLEAN", ...COMMON_HEAD, "U2", "U3", "U4", "U6", "U8", "U16", "U32", "U64", "NF4", "F8E4M3", "F8E5M3", "STRING", "F4E2M1", "F8E8M0"],
  },
  {
    since: [2024, 2],
    label: "2024.2 - 2025.0",
    names: [
      "UNDEFINED",
      "DYNAMIC",
      "BOOLEAN",
      ...COMMON_HEAD,
      "U2",
      "U3",
      "U4",
      "U6",
      "U8",
      "U16",
      "U32",
      "U64",
      "NF4",
      "F8E4M3",
      "F8E5M3",
      "STRING",
      "F4E2M1",
      "F8E8M0",
    ],
  },
  {
    since: [2023, 0],
    label: "2023.0 - 2024.1",
    names: ["UNDEFINED", "DYNAMIC", "BOOLEAN", ...COMMON_HEAD, "U4", "U8", "U16", "U32", "U64", "NF4", "F8E4M3", "F8E5M3"],
  },
];

/** The oldest release whose C API this binding knows (ov_core_compile_model variadic, the tables above). */
export const OLDEST_SUPPORTED = ELEMENT_TYPE_TABLES[ELEMENT_TYPE_TABLES.length - 1]!.since;

/** OpenVINO element type name → Triton datatype; the rest (i4, u1, nf4, f8, string...) are not served. */
const TO_TRITON: Readonly<Record<string, DataType>> = {
  BOOLEAN: "BOOL",
  BF16: "BF16",
  F16: "FP16",
  F32: "FP32",
  F64: "FP64",
  I8: "INT8",
  I16: "INT16",
  I32: "INT32",
  I64: "INT64",
  U8: "UINT8",
  U16: "UINT16",
  U32: "UINT32",
  U64: "UINT64",
};

/** "2024.4.0-16579-c3152d32c9c-releases/2024/4" → [2024, 4]; undefined when it does not start so. */
export function parseRelease(buildNumber: string): [number, number] | undefined {
  const m = /^(\d{4})\.(\d+)/.exec(buildNumber.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * The table for a library's ov_get_openvino_version() buildNumber. Throws for a version
 * older than the oldest table or one that does not start with "<year>.<minor>".
 */
export function elementTypeTableFor(buildNumber: string): ElementTypeTable {
  const release = parseRelease(buildNumber);
  if (!release) {
    throw new LibraryLoadError(`cannot tell the OpenVINO release from its version string '${buildNumber}', so not which ov_element_type_e values it uses`, {
      library: "OpenVINO",
      call: "ov_get_openvino_version",
    });
  }
  const [year, minor] = release;
  const table = ELEMENT_TYPE_TABLES.find((t) => year > t.since[0] || (year === t.since[0] && minor >= t.since[1]));
  if (!table) {
    throw new LibraryLoadError(`OpenVINO ${buildNumber} is older than ${OLDEST_SUPPORTED.join(".")}, the oldest release whose C API this server knows`, {
      library: "OpenVINO",
      call: "ov_get_openvino_version",
    });
  }
  return table;
}

/** ov_element_type_e values of one library, and their Triton datatypes. */
export class ElementTypes {
  readonly table: ElementTypeTable;
  readonly #byName: ReadonlyMap<string, number>;

  constructor(table: ElementTypeTable) {
    this.table = table;
    this.#byName = new Map(table.names.map((n, i) => [n, i]));
  }

  /** The name of a value ("F32"), or "ov_element_type_e(<n>)" when the table has none. */
  name(value: number): string {
    return this.table.names[value] ?? `ov_element_type_e(${value})`;
  }

  value(name: string): number | undefined {
    return this.#byName.get(name);
  }

  /** The Triton datatype of an OpenVINO element type value, if Triton has one. */
  toTriton(value: number): DataType | undefined {
    const name = this.table.names[value];
    return name === undefined ? undefined : TO_TRITON[name];
  }

  /** The ov_element_type_e value for a Triton datatype; undefined for BYTES. */
  fromTriton(datatype: DataType): number | undefined {
    const name = Object.entries(TO_TRITON).find(([, d]) => d === datatype)?.[0];
    return name === undefined ? undefined : this.#byName.get(name);
  }
}

export interface OvStructTypes {
  version: KoffiType;
  dimension: KoffiType;
  partialShape: KoffiType;
  shape: KoffiType;
}

let structs: OvStructTypes | undefined;

/**
 * koffi declarations of the structs (koffi type names are process-wide: declared once).
 * Pointer fields are `void *` so that the addresses stay available for the free calls.
 *
 *   typedef struct { const char* buildNumber; const char* description; } ov_version_t;   // ov_core.h
 *   typedef struct ov_dimension { int64_t min; int64_t max; } ov_dimension_t;              // ov_dimension.h
 *   typedef ov_dimension_t ov_rank_t;                                                     // ov_rank.h
 *   typedef struct ov_partial_shape { ov_rank_t rank; ov_dimension_t* dims; } ov_partial_shape_t; // ov_partial_shape.h
 *   typedef struct { int64_t rank; int64_t* dims; } ov_shape_t;                            // ov_shape.h
 */
export function ovStructTypes(): OvStructTypes {
  if (structs) return structs;
  const k = getKoffi();
  const dimension = k.struct("ov_dimension_t", { min: "int64_t", max: "int64_t" });
  structs = {
    version: k.struct("ov_version_t", { buildNumber: "void *", description: "void *" }),
    dimension,
    partialShape: k.struct("ov_partial_shape_t", { rank: dimension, dims: "void *" }),
    shape: k.struct("ov_shape_t", { rank: "int64_t", dims: "void *" }),
  };
  return structs;
}
