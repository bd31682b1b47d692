/**
 * @module Conversions between the server's Tensor (raw little-endian bytes, BYTES
 * length-prefixed) and the TypeScript model API's tensors (typed arrays, Uint8Array[] for
 * BYTES), and the check of a model's outputs against its config.
 */
import { ServerError, internal } from "../../core/errors.ts";
import { ELEMENT_SIZE, elementCount, joinBytes, fromConfigType, type DataType, type Tensor } from "../../core/tensor.ts";
import type { ModelOutput } from "../../core/model-config-types.ts";
import type { Datatype, Tensor as ModelTensor } from "./api.ts";

type TypedCtor = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayBufferView;
  new (length: number): ArrayBufferView;
  from(a: ArrayLike<unknown>): ArrayBufferView;
};

const CTORS: Record<Exclude<DataType, "BYTES">, TypedCtor> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array as unknown as TypedCtor,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array as unknown as TypedCtor,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};

/** BYTES elements of a serialized tensor, as views into its bytes. */
export function splitBytes(data: Uint8Array): Uint8Array[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out: Uint8Array[] = [];
  let off = 0;
  while (off + 4 <= data.byteLength) {
    const n = view.getUint32(off, true);
    out.push(data.subarray(off + 4, off + 4 + n));
    off += 4 + n;
  }
  return out;
}

/** The server's tensor as the model sees it: a view when aligned, a copy otherwise. */
export function toModelTensor(t: Tensor): ModelTensor {
  if (t.datatype === "BYTES") return { name: t.name, datatype: "BYTES", shape: [...t.shape], data: splitBytes(t.data) };
  const size = ELEMENT_SIZE[t.datatype];
  const Ctor = CTORS[t.datatype];
  const n = t.data.byteLength / size;
  let data: ArrayBufferView;
  if (t.data.byteOffset % size === 0) data = new Ctor(t.data.buffer, t.data.byteOffset, n);
  // A copy of just these bytes: on a Node Buffer (gRPC raw contents) slice() is a view of
  // the whole pool, so its .buffer would start at the pool's first byte.
  else data = new Ctor(new Uint8Array(t.data).buffer, 0, n);
  return { name: t.name, datatype: t.datatype as Datatype, shape: [...t.shape], data };
}

const encoder = new TextEncoder();

/** A model's bad element as an error message quotes it: strings JSON-quoted and cut at 40 characters. */
const shown = (v: unknown): string =>
  typeof v === "string"
    ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
    : typeof v === "object" && v !== null
      ? Array.isArray(v)
        ? "an array"
        : "an object"
      : String(v);

/** A model's tensor in the server's form; throws a plain message (the caller names the model). */
export function fromModelTensor(t: ModelTensor, what: string): Tensor {
  if (!t || typeof t.name !== "string") throw new Error(`${what} is not a tensor ({ name, datatype, shape, data })`);
  const dt = t.datatype as DataType;
  if (!(dt in ELEMENT_SIZE)) throw new Error(`${what} '${t.name}' has unknown datatype '${String(t.datatype)}'`);
  if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`${what} '${t.name}' has an invalid shape`);
  const count = elementCount(t.shape);
  let bytes: Uint8Array;
  if (dt === "BYTES") {
    if (!Array.isArray(t.data)) throw new Error(`${what} '${t.name}' (BYTES) data must be an array of strings or Uint8Array`);
    const parts = (t.data as unknown[]).map((e) => (typeof e === "string" ? encoder.encode(e) : e instanceof Uint8Array ? e : encoder.encode(String(e))));
    bytes = joinBytes(parts);
    if (parts.length !== count) throw new Error(`${what} '${t.name}' has ${parts.length} elements for shape [${t.shape.join(",")}]`);
  } else {
    const size = ELEMENT_SIZE[dt];
    if (Array.isArray(t.data)) {
      const Ctor = CTORS[dt];
      const big = dt === "INT64" || dt === "UINT64";
      const arr = (t.data as unknown[]).map((v, i) => {
        // A string (or anything else) would become NaN or 0 without a word.
        const ok = typeof v === "bigint" || (typeof v === "number" && (!big || Number.isInteger(v))) || (dt === "BOOL" && typeof v === "boolean");
        if (!ok) throw new Error(`${what} '${t.name}': element ${i} of its data is ${shown(v)}, not ${big ? "an integer" : "a number"} (datatype ${dt})`);
        return big ? BigInt(v as number | bigint) : Number(v);
      });
      bytes = new Uint8Array((Ctor.from(arr) as Uint8Array).buffer);
    } else if (ArrayBuffer.isView(t.data)) {
      bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    } else {
      throw new Error(`${what} '${t.name}' data must be a typed array or an array of numbers`);
    }
    if (bytes.byteLength !== count * size) {
      throw new Error(`${what} '${t.name}' has ${bytes.byteLength / size} ${dt} elements for shape [${t.shape.join(",")}]`);
    }
  }
  return { name: t.name, datatype: dt, shape: [...t.shape], data: bytes };
}

/** Checks a model's output against its config entry (datatype, dims with -1 wildcards, batch dim). */
export function checkOutput(model: string, t: Tensor, spec: ModelOutput | undefined, batchSize: number | undefined): void {
  if (!spec) throw internal(`model '${model}' returned output '${t.name}', which is not an output in its config`);
  const want = fromConfigType(spec.data_type ?? "");
  if (want && want !== t.datatype) throw internal(`model '${model}' returned output '${t.name}' as ${t.datatype}; its config says ${want}`);
  if (spec.reshape) return;
  const dims = [...(batchSize !== undefined ? [batchSize] : []), ...(spec.dims ?? [])];
  const ok = dims.length === t.shape.length && dims.every((d, i) => d === -1 || d === t.shape[i]);
  if (!ok) {
    throw internal(`model '${model}' returned output '${t.name}' with shape [${t.shape.join(",")}]; its config expects [${dims.join(",")}]`);
  }
}

/** An error a model threw or returned, as a ServerError with its Triton code when it gave a known one. */
export function modelError(model: string, err: unknown, codes: readonly string[]): ServerError {
  if (err instanceof ServerError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : typeof err === "string" ? err : ((err as { message?: string })?.message ?? String(err));
  if (typeof code === "string" && codes.includes(code)) return new ServerError(code as ServerError["code"], message, { cause: err });
  return internal(`model '${model}': ${message}`, err);
}
