/**
 * @module What a model file declares about its tensors, as a backend reads it for
 * auto-complete (`Backend.describe`) and `autoCompleteConfig` consumes it.
 */
import type { DataType } from "../core/tensor.ts";

/** One tensor as the model file declares it; -1 marks a dynamic dimension. */
export interface TensorSpec {
  name: string;
  datatype: DataType;
  shape: number[];
}

export interface ModelFileIO {
  inputs: TensorSpec[];
  outputs: TensorSpec[];
}
