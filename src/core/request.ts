/**
 * @module The inference request and response as the core sees them, independent of the
 * wire. Frontends decode into InferenceRequest and encode InferenceResponse.
 */
import { invalidArg, ServerError } from "./errors.ts";
import type { Tensor } from "./tensor.ts";

/** The default `--max-queued-bytes`: input bytes that unanswered client requests may hold together (1 GiB). */
export const DEFAULT_MAX_QUEUED_BYTES = 1 << 30;

/** A request/response parameter value: HTTP JSON string/number/bool, gRPC InferParameter. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

export interface InputTensor extends Tensor {
  parameters?: Parameters;
}

export interface RequestedOutput {
  name: string;
  /** binary_data, classification, shared-memory keys, ...; the core reads `classification`. */
  parameters?: Parameters;
}

export interface InferenceRequest {
  modelName: string;
  /**
   * Set only by an ensemble for its steps under --model-namespacing: the namespace whose
   * model of `modelName` is preferred. No frontend sets it (Triton gives clients no way
   * to name a namespace).
   */
  modelNamespace?: string;
  /** Requested version as given on the wire ("" or undefined: latest ready). */
  modelVersion?: string;
  id?: string;
  parameters: Parameters;
  inputs: InputTensor[];
  /** Requested outputs; undefined or empty means all of the model's outputs. */
  outputs?: RequestedOutput[];
  /**
   * Aborted when the request is cancelled: its gRPC call was cancelled or ran past its
   * deadline, or its HTTP client went away (S-20). The frontend owns it; the server,
   * schedulers, ensembles and TypeScript models honour it (core/cancel.ts), and a
   * stream stops sending.
   */
  signal?: AbortSignal;
  /**
   * Where a decoupled model's responses go (set by the server's streaming entry): each
   * call is one response, or a final flag with no response, or an error.
   */
  responseSink?: ResponseSink;
  /**
   * Set by an ensemble on its steps' requests: whoever runs a step adds its compute
   * durations here once it succeeds, and the ensemble reports their sums as its own
   * (Triton's secondary statistics aggregator of an ensemble's step requests).
   */
  stepTimes?: ComputeTimes;
  /**
   * Set by a frontend worker that counted the request for a traced model's sampling rate
   * (server/trace-sampler.ts) before it reached the main thread: whether it was chosen (a
   * trace taken). The main thread's core then counts it no more, and traces it when it was
   * chosen. No decoder sets it: it never comes from a client.
   */
  traceSampled?: boolean;
}

/** Compute durations in ns, summed over an ensemble's steps. */
export interface ComputeTimes {
  input: number;
  infer: number;
  output: number;
}

/** Adds one step's compute durations to its ensemble's sums, when the request is a step. */
export function addStepTimes(request: Pick<InferenceRequest, "stepTimes">, input: number, infer: number, output: number): void {
  const t = request.stepTimes;
  if (!t) return;
  t.input += input;
  t.infer += infer;
  t.output += output;
}

/** One response a decoupled model sent: outputs (absent for a flag-only final), the final flag, or an error. */
export interface SentResponse {
  outputs?: Tensor[];
  parameters?: Parameters;
  error?: ServerError;
  final: boolean;
}

export type ResponseSink = (response: SentResponse) => void;

/** One response of a stream as the frontends write it: a response (absent for an empty final), its final flag, or an error. */
export interface StreamedResponse {
  response?: InferenceResponse;
  error?: ServerError;
  final: boolean;
}

/** A response output; one written into shared memory carries its parameters and no data. */
export interface OutputTensor extends Tensor {
  sharedMemory?: { region: string; offset: number; byteSize: number };
}

export interface InferenceResponse {
  modelName: string;
  modelVersion: string;
  id?: string;
  parameters?: Parameters;
  outputs: OutputTensor[];
}

/** Triton's InferenceRequest::LogRequest(): "[request id: <id>] " when the request has an id. */
export function logPrefix(id: string | undefined): string {
  return id ? `[request id: ${id}] ` : "";
}

/** A sequence's correlation ID: a non-zero unsigned integer (exact, bigint past 2^53) or a non-empty string. */
export type CorrelationId = number | bigint | string;

/**
 * A request's control fields, read from its parameters once, at the server's boundary
 * (parseControl). Schedulers read these and never the parameters.
 */
export interface RequestControl {
  /** The correlation ID; undefined when absent, 0 or "" (Triton's "no ID"). */
  readonly sequenceId?: CorrelationId;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  /** Priority level asked for; 0 (the default level) when absent. */
  readonly priority: number;
  /** Queue timeout asked for, in microseconds; 0 (none) when absent. */
  readonly timeoutUs: number;
}

/** The control fields of a request that sets none (most requests): one frozen object. */
const NO_CONTROL: RequestControl = Object.freeze({ sequenceId: undefined, sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0 });

/**
 * Reads the control fields of `params`. The frontends have already checked the wire
 * types (with each protocol's own wording); this refuses what no protocol can mean, for
 * the in-process API too: a negative or fractional ID, priority or timeout.
 */
export function parseControl(params: Parameters): RequestControl {
  if (
    params.sequence_id === undefined &&
    params.sequence_start === undefined &&
    params.sequence_end === undefined &&
    params.priority === undefined &&
    params.timeout === undefined
  ) {
    return NO_CONTROL;
  }
  return {
    sequenceId: correlationId(params.sequence_id),
    sequenceStart: params.sequence_start === true,
    sequenceEnd: params.sequence_end === true,
    priority: uintParameter(params, "priority"),
    timeoutUs: uintParameter(params, "timeout"),
  };
}

/**
 * The request parameters Triton consumes rather than passing to the backend (P-29): the
 * control fields and HTTP's output-kind switch. Of Triton's reserved keys (server
 * src/common.h kReservedParameterKeys) only `headers` is not among them: neither of its
 * frontends treats it specially, so it reaches the model like any custom key.
 */
const CONSUMED_PARAMETER_KEYS: ReadonlySet<string> = new Set(["sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "binary_data_output"]);

/** The parameters a model sees: the request's own, less the keys the server consumes. */
export function modelParameters(params: Parameters | undefined): Parameters {
  const out: Parameters = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    if (CONSUMED_PARAMETER_KEYS.has(key)) continue;
    if (key === "__proto__") Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

/** The continuation of a sequence already running (an ID without START): it may reach a model being unloaded. */
export function continuesSequence(control: RequestControl): boolean {
  return control.sequenceId !== undefined && !control.sequenceStart;
}

/** Triton's correlation IDs are uint64: a larger one (which only the in-process API can pass) is refused, not wrapped. */
const MAX_CORRELATION_ID = 2n ** 64n - 1n;

function correlationId(v: ParameterValue | undefined): CorrelationId | undefined {
  if (typeof v === "string") return v === "" ? undefined : v;
  if (typeof v === "bigint") {
    if (v < 0n || v > MAX_CORRELATION_ID) throw invalidArg(`invalid value for 'sequence_id' parameter: ${v}`);
    return v === 0n ? undefined : v;
  }
  if (typeof v === "number") {
    if (!Number.isInteger(v) || v < 0 || v >= 2 ** 64) throw invalidArg(`invalid value for 'sequence_id' parameter: ${v}`);
    return v === 0 ? undefined : v;
  }
  return undefined;
}

/** A `priority` or `timeout`: a non-negative integer, 0 when absent; one past 2^53 saturates (it only compares). */
function uintParameter(params: Parameters, key: "priority" | "timeout"): number {
  const v = params[key];
  if (v === undefined) return 0;
  const n = typeof v === "bigint" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
    throw new ServerError("INVALID_ARG", `invalid value for '${key}' parameter: expected a non-negative integer`, { reason: "OTHER" });
  }
  return n;
}
