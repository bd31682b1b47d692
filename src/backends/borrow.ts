/**
 * @module Instances another thread owns, as a frontend worker thread runs them (#30):
 * the backends whose instances can be shared (BackendInstance.share) and their borrowers.
 */
import { borrowOrtInstance } from "./onnxruntime/backend.ts";
import { borrowTsInstance } from "./typescript/direct.ts";
import { borrowPythonInstance } from "./python/direct.ts";
import { borrowOpenVinoInstance } from "./openvino/direct.ts";
import { ServerError } from "../core/errors.ts";
import type { BorrowedInstance, SharedInstance } from "./backend.ts";

/** `connect`: asks the main thread for a channel to an instance that runs in a thread of its own (its answer goes to the instance's attach). */
export function borrowInstance(shared: SharedInstance, connect: (key: string) => void): BorrowedInstance {
  if (shared.backend === "onnxruntime") return borrowOrtInstance(shared);
  if (shared.backend === "typescript") return borrowTsInstance(shared, connect);
  if (shared.backend === "python") return borrowPythonInstance(shared);
  if (shared.backend === "openvino") return borrowOpenVinoInstance(shared);
  throw new ServerError("INTERNAL", `backend '${shared.backend}' has no instances another thread can run`);
}
