/**
 * @module OpenVINO ports ↔ Triton tensors: a port as a TensorSpec for auto-complete, the
 * load-time check that each configured input and output is a port of the model with the
 * same datatype, and the per-run mapping of tensors onto ports.
 */
import { ServerError, invalidArg, unsupported } from "../../core/errors.ts";
import { ELEMENT_SIZE, fromConfigType, type DataType, type Tensor } from "../../core/tensor.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";
import type { TensorSpec } from "../backend.ts";
import type { ElementTypes } from "../../../ffi/openvino/types.ts";
import type { OvPortInfo } from "../../../ffi/openvino/model.ts";
import type { OvRunInput } from "../../../ffi/openvino/infer-request.ts";
import type { OvTensorData } from "../../../ffi/openvino/tensor.ts";

/** A port's Triton datatype, or UNSUPPORTED naming the OpenVINO type Triton has no name for. */
export function portDataType(types: ElementTypes, port: OvPortInfo, where: string): DataType {
  const dt = types.toTriton(port.elementType);
  if (!dt) throw unsupported(`${where}: tensor '${port.name}' has OpenVINO element type ${types.name(port.elementType)}, which has no Triton datatype`);
  return dt;
}

export function portSpec(types: ElementTypes, port: OvPortInfo, where: string): TensorSpec {
  if (!port.shape) throw invalidArg(`${where}: tensor '${port.name}' has a dynamic rank; give its dims in config.pbtxt`);
  return { name: port.name, datatype: portDataType(types, port, where), shape: port.shape };
}

/** A configured tensor bound to its port. */
export interface BoundPort {
  port: OvPortInfo;
  datatype: DataType;
}

/**
 * Checks the config's inputs and outputs against the model's ports: each must exist, and
 * its data_type must be the port's (BYTES is refused: the backend has no string tensors).
 */
export function bindPorts(
  config: ModelConfig,
  types: ElementTypes,
  inputs: OvPortInfo[],
  outputs: OvPortInfo[],
  modelName: string,
): { inputs: Map<string, BoundPort>; outputs: Map<string, BoundPort> } {
  const bind = (list: { name?: string; data_type?: string }[] | undefined, ports: OvPortInfo[], kind: "input" | "output") => {
    const out = new Map<string, BoundPort>();
    for (const t of list ?? []) {
      const name = t.name ?? "";
      const port = ports.find((p) => p.name === name);
      if (!port) {
        throw invalidArg(
          `model '${modelName}': ${kind} '${name}' is not an ${kind} of the OpenVINO model (its ${kind}s: ${ports.map((p) => `'${p.name}'`).join(", ") || "none"})`,
        );
      }
      const configured = t.data_type ? fromConfigType(t.data_type) : undefined;
      if (configured === "BYTES")
        throw unsupported(`model '${modelName}': ${kind} '${name}' is TYPE_STRING; the openvino backend does not take string tensors`);
      const actual = portDataType(types, port, `model '${modelName}'`);
      if (configured && configured !== actual) {
        throw invalidArg(
          `model '${modelName}': ${kind} '${name}' is ${t.data_type} in config.pbtxt but ${types.name(port.elementType)} (TYPE_${actual}) in the OpenVINO model`,
        );
      }
      out.set(name, { port, datatype: actual });
    }
    return out;
  };
  return { inputs: bind(config.input, inputs, "input"), outputs: bind(config.output, outputs, "output") };
}

/** A request tensor as a run input; BYTES → UNSUPPORTED. */
export function runInput(types: ElementTypes, bound: ReadonlyMap<string, BoundPort>, t: Tensor): OvRunInput {
  if (t.datatype === "BYTES") throw unsupported(`input '${t.name}': the openvino backend does not take BYTES tensors`);
  const b = bound.get(t.name);
  if (!b) throw invalidArg(`unexpected inference input '${t.name}' for the OpenVINO model`);
  const elementType = types.fromTriton(t.datatype);
  if (elementType === undefined) throw unsupported(`input '${t.name}': OpenVINO ${types.table.label} has no element type for ${t.datatype}`);
  return { index: b.port.index, name: t.name, elementType, elementSize: ELEMENT_SIZE[t.datatype], shape: t.shape, data: t.data };
}

/** A run output as a Triton tensor; an element type Triton cannot carry → UNSUPPORTED. */
export function outputTensor(types: ElementTypes, name: string, o: OvTensorData): Tensor {
  const datatype = types.toTriton(o.elementType);
  if (!datatype)
    throw new ServerError("UNSUPPORTED", `output '${name}' came back as OpenVINO element type ${types.name(o.elementType)}, which has no Triton datatype`);
  return { name, datatype, shape: o.shape, data: o.data };
}
