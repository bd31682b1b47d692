/**
 * @module The inference request and response as the core sees them, independent of the
 * wire. Frontends decode into InferenceRequest and encode InferenceResponse.
 */
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
  /** Requested version as given on the wire ("" or undefined: latest ready). */
  modelVersion?: string;
  id?: string;
  parameters: Parameters;
  inputs: InputTensor[];
  /** Requested outputs; undefined or empty means all of the model's outputs. */
  outputs?: RequestedOutput[];
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
