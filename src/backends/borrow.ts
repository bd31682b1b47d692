/**
 * @module Instances another thread owns, as a frontend worker thread runs them (#30):
 * the backends whose instances can be shared (BackendInstance.share) and their borrowers.
 */
import { borrowOrtInstance } from "./onnxruntime/backend.ts";
import { ServerError } from "../core/errors.ts";
import type { BorrowedInstance, SharedInstance } from "./backend.ts";

export function borrowInstance(shared: SharedInstance): BorrowedInstance {
  if (shared.backend === "onnxruntime") return borrowOrtInstance(shared);
  throw new ServerError("INTERNAL", `backend '${shared.backend}' has no instances another thread can run`);
}
