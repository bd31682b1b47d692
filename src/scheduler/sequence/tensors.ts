/**
 * @module Tensors the sequence batcher adds to a batch: control inputs (START, END,
 * READY, CORRID per row) and implicit state (each row's stored state, or the initial
 * state at START). A row is undefined where a direct-strategy slot has no request.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { invalidArg } from "../../core/errors.ts";
import { elementCount, ELEMENT_SIZE, joinBytes, type Tensor } from "../../core/tensor.ts";
import type { CorrelationId } from "../../core/request.ts";
import type { ControlInput, StateSpec } from "./config.ts";

export interface RowFlags {
  start: boolean;
  end: boolean;
  corrId: CorrelationId;
}

export function controlTensor(c: ControlInput, rows: readonly (RowFlags | undefined)[], batched: boolean): Tensor {
  const shape = batched ? [rows.length, 1] : [1];
  if (c.kind === "CONTROL_SEQUENCE_CORRID") return corridTensor(c, rows, shape);
  const on = (r: RowFlags | undefined) =>
    c.kind === "CONTROL_SEQUENCE_READY" ? r !== undefined : c.kind === "CONTROL_SEQUENCE_START" ? r?.start === true : r?.end === true;
  const values = rows.map((r) => c.falseTrue[on(r) ? 1 : 0]);
  let data: Uint8Array;
  if (c.datatype === "INT32") data = new Uint8Array(Int32Array.from(values as number[]).buffer);
  else if (c.datatype === "FP32") data = new Uint8Array(Float32Array.from(values as number[]).buffer);
  else data = Uint8Array.from(values.map((v) => (v ? 1 : 0)));
  return { name: c.name, datatype: c.datatype, shape, data };
}

function corridTensor(c: ControlInput, rows: readonly (RowFlags | undefined)[], shape: number[]): Tensor {
  if (c.datatype === "BYTES") {
    const enc = new TextEncoder();
    return { name: c.name, datatype: "BYTES", shape, data: joinBytes(rows.map((r) => enc.encode(r ? String(r.corrId) : ""))) };
  }
  const ids = rows.map((r) => (r ? r.corrId : 0));
  let data: Uint8Array;
  if (c.datatype === "UINT64" || c.datatype === "INT64") {
    data = new Uint8Array(BigInt64Array.from(ids.map((id) => BigInt.asIntN(64, BigInt(id)))).buffer);
  } else {
    data = new Uint8Array(Int32Array.from(ids.map((id) => Number(BigInt.asIntN(32, BigInt(id))))).buffer);
  }
  return { name: c.name, datatype: c.datatype, shape, data };
}

/** Checks that `id` fits the model's CORRID control, if it has one (string ids need TYPE_STRING). */
export function checkCorrelationId(controls: readonly ControlInput[], id: CorrelationId, model: string): void {
  const c = controls.find((x) => x.kind === "CONTROL_SEQUENCE_CORRID");
  if (c && typeof id === "string" && c.datatype !== "BYTES") {
    throw invalidArg(`sequence batcher of model '${model}' requires a numeric correlation ID for its CORRID control of type ${c.datatype}, got string '${id}'`);
  }
}

/** One batch item of a state's initial value: the initial_state data file, or zeros. */
export function initialState(spec: StateSpec, modelDir: string): Uint8Array {
  const bytes = elementCount(spec.dims) * ELEMENT_SIZE[spec.datatype];
  if (!spec.initialFile) return new Uint8Array(bytes);
  const file = new Uint8Array(readFileSync(join(modelDir, "initial_state", spec.initialFile)));
  if (file.byteLength !== bytes) {
    throw invalidArg(`initial state file '${spec.initialFile}' for '${spec.inputName}' holds ${file.byteLength} bytes, expected ${bytes}`);
  }
  return file;
}

/** A state input for the batch from each row's bytes (one item each). */
export function stateTensor(spec: StateSpec, items: readonly Uint8Array[], batched: boolean): Tensor {
  const size = items.reduce((n, b) => n + b.byteLength, 0);
  const data = new Uint8Array(size);
  let off = 0;
  for (const b of items) {
    data.set(b, off);
    off += b.byteLength;
  }
  return { name: spec.inputName, datatype: spec.datatype, shape: batched ? [items.length, ...spec.dims] : [...spec.dims], data };
}
