/**
 * @module What crosses to a Python stub and back for one request, wherever it was sent
 * from: the main thread's instance (instance.ts, tensors in the shared regions) and a
 * frontend worker thread's direct connection (direct.ts, tensors inline, #30) build the
 * same exec entry and judge the stub's response with the same words.
 */
import { ERROR_CODES, ServerError, internal, type ErrorCode } from "../../core/errors.ts";
import { isDataType, type Tensor } from "../../core/tensor.ts";
import { modelParameters } from "../../core/request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { ModelConfig, ModelOutput } from "../../core/model-config-types.ts";
import type { RequestOutcome } from "../backend.ts";
import { checkOutput } from "../typescript/tensors.ts";
import { responseParameters } from "../response-parameters.ts";

/** A tensor as the channel describes it: name, datatype, shape, offset and byte size (in a region, or in a direct message's bytes). */
export interface Desc {
  n: string;
  d: string;
  s: number[];
  o: number;
  b: number;
}

export interface WireError {
  m: string;
  c: string;
}

export interface WireResponse {
  outs?: Desc[];
  err?: WireError;
  /** The response's parameters (pb_utils.InferenceResponse(parameters=...)), checked here. */
  p?: unknown;
}

export function wireError(e: WireError): ServerError {
  const code = (ERROR_CODES as readonly string[]).includes(e.c) ? (e.c as ErrorCode) : "INTERNAL";
  return new ServerError(code, String(e.m));
}

/**
 * One request of an exec message; `place` puts an input's bytes where the stub reads them
 * and returns its offset. Fields at their defaults are left out: the message is the
 * per-request cost.
 */
export function execEntry(p: PreparedRequest, place: (t: Tensor) => number): Record<string, unknown> {
  const r: Record<string, unknown> = {
    out: p.outputNames,
    in: p.inputs.map((t) => ({ n: t.name, d: t.datatype, s: t.shape, o: place(t), b: t.data.byteLength })),
  };
  if (p.request.id) r.id = p.request.id;
  const sid = p.control.sequenceId;
  if (sid !== undefined) r.corr = typeof sid === "bigint" ? Number(sid) : sid;
  const flags = (p.control.sequenceStart ? 1 : 0) | (p.control.sequenceEnd ? 2 : 0);
  if (flags) r.flags = flags;
  const params = Object.entries(modelParameters(p.request.parameters));
  if (params.length > 0) r.p = Object.fromEntries(params.map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v]));
  if (p.request.signal?.aborted) r.cancelled = true;
  return r;
}

/** Judges the stub's responses against one model's config. */
export class ResponseChecker {
  readonly #model: string;
  readonly #label: string;
  readonly #outputs: Map<string, ModelOutput>;
  readonly #batched: boolean;

  /** `label`: "model 'x' instance 'x_0'", as errors name the stub. */
  constructor(model: string, label: string, config: ModelConfig) {
    this.#model = model;
    this.#label = label;
    this.#outputs = new Map((config.output ?? []).map((o) => [o.name!, o]));
    this.#batched = (config.max_batch_size ?? 0) > 0;
  }

  /** The tensors `descs` describe, their bytes from `bytes` (which checks the range). */
  tensors(descs: Desc[], bytes: (offset: number, length: number) => Uint8Array): Tensor[] {
    return descs.map((d) => {
      if (!isDataType(d.d)) throw internal(`${this.#label} returned tensor '${d.n}' with unknown datatype '${d.d}'`);
      return { name: String(d.n), datatype: d.d, shape: d.s.map(Number), data: bytes(d.o, d.b) };
    });
  }

  /** One request's outcome from the stub's response; `take` gives the response's tensors. */
  outcome(p: PreparedRequest, r: WireResponse, take: (descs: Desc[]) => Tensor[]): RequestOutcome {
    if (r.err) return { error: wireError(r.err) };
    const model = this.#model;
    try {
      const all = take(r.outs ?? []);
      const wanted = new Set(p.outputNames);
      const outputs: Tensor[] = [];
      for (const t of all) {
        if (!wanted.has(t.name)) continue;
        checkOutput(model, t, this.#outputs.get(t.name), this.#batched ? p.batchSize : undefined);
        outputs.push(t);
      }
      for (const n of p.request.outputs?.map((o) => o.name) ?? []) {
        if (!outputs.some((t) => t.name === n)) throw internal(`model '${model}' returned no output '${n}', which the request asked for`);
      }
      outputs.sort((a, b) => p.outputNames.indexOf(a.name) - p.outputNames.indexOf(b.name));
      const parameters = responseParameters(model, r.p);
      return parameters ? { outputs, parameters } : { outputs };
    } catch (err) {
      return { error: ServerError.from(err) };
    }
  }
}

/** A byte range of a stub's shared region or message, checked: a stub that names bytes outside it is broken. */
export function checkedRange(size: number, offset: number, length: number, where: string): void {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > size) {
    throw internal(`python stub named bytes [${offset}, +${length}) outside its ${size}-byte ${where}`);
  }
}

/** A tensor that does not fit the free space of the stub's shared region, on every thread alike. */
export function doesNotFit(what: string, bytes: number, regionSize: number): ServerError {
  return internal(
    `${what} of ${bytes} bytes does not fit the free space of the python stub's shared memory (${regionSize} bytes; raise --backend-config=python,shm-default-byte-size)`,
  );
}
