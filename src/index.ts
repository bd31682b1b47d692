/**
 * @module The package's public entry (`import { createServer } from "nereid"`): the
 * in-process API (src/embedded.ts) and the types it speaks. Re-exports only.
 */
export {
  createServer,
  Nereid,
  type CreateServerOptions,
  type InferRequest,
  type InferInput,
  type InferOutput,
  type InferResult,
  type TypedData,
  type ModelStatistics,
  type ServerMetadata,
  type ListenerSpec,
  type Endpoints,
  type DataType,
  type Parameters,
  type ParameterValue,
  type ModelMetadata,
  type IndexEntry,
} from "./embedded.ts";
export { ServerError, type ErrorCode } from "./core/errors.ts";
export { defaultOptions, type ServerOptions } from "./options.ts";
