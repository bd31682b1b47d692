/**
 * @module The size limits every frontend applies to tensors the same way (issue #29),
 * with one message each, so that HTTP JSON, HTTP binary, gRPC typed contents, gRPC
 * raw_input_contents and shared memory refuse the same request with the same words.
 */
import { invalidArg } from "./errors.ts";
import { shapeToString } from "./tensor.ts";

/**
 * Most elements one BYTES input may declare, whatever carries its data. Triton has no such
 * limit; here each element costs work on the event loop (framing checks, and for ONNX
 * Runtime a C string), so 8M one-byte elements, well inside 64 MiB, held every other
 * client for seconds.
 */
export const MAX_BYTES_ELEMENTS = 1 << 20;

/**
 * Throws INVALID_ARG when a BYTES input of `count` elements (of `shape`) is over
 * MAX_BYTES_ELEMENTS; called from the shape alone, before any data is read.
 */
export function checkBytesElements(name: string, shape: readonly number[], count: number): void {
  if (count > MAX_BYTES_ELEMENTS) {
    throw invalidArg(
      `input '${name}' has ${count} BYTES elements (shape ${shapeToString(shape)}), more than the ${MAX_BYTES_ELEMENTS} one BYTES input may have`,
    );
  }
}
