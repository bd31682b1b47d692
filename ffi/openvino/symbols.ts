/**
 * @module OpenVINO C API 2.0 prototypes (libopenvino_c.so), each as the header declares
 * it (ov_common.h, ov_core.h, ov_model.h, ov_node.h, ov_partial_shape.h, ov_shape.h,
 * ov_tensor.h, ov_compiled_model.h, ov_infer_request.h); the C types are in the comments.
 * Every ov_status_e result goes through status.ts.
 *
 * Out-parameters that are object pointers (`ov_core_t**`, `size_t*`, ...) are declared
 * `void *` and given off-heap typed arrays: calls made on koffi's worker thread
 * (ov_core_read_model, ov_infer_request_infer) must not write into movable JS memory.
 * Struct out-parameters use koffi's _Out_ struct conversion.
 */
import { LibraryLoadError, type KoffiFunc, type KoffiLibrary, type Pointer } from "../load.ts";
import { ovStructTypes } from "./types.ts";

type Status = number;
/** Memory the callee reads or writes: a typed array, or an address. */
type Buf = ArrayBufferView | Pointer;

export interface OvVersionStruct {
  buildNumber: Pointer;
  description: Pointer;
}
export interface OvDimension {
  min: number | bigint;
  max: number | bigint;
}
export interface OvPartialShapeStruct {
  rank: OvDimension;
  dims: Pointer;
}
export interface OvShapeStruct {
  rank: number | bigint;
  dims: Pointer;
}

interface OvFunctions {
  ov_get_error_info(status: Status): string;
  ov_free(content: Pointer): void;
  ov_get_openvino_version(version: Partial<OvVersionStruct>): Status;
  ov_version_free(version: OvVersionStruct): void;
  ov_core_create(core: Buf): Status;
  ov_core_free(core: Pointer): void;
  ov_core_read_model(core: Pointer, modelPath: string, binPath: string | null, model: Buf): Status;
  ov_core_compile_model(core: Pointer, model: Pointer, deviceName: string, propertyArgsSize: number, compiledModel: Buf, ...properties: unknown[]): Status;
  ov_compiled_model_create_infer_request(compiledModel: Pointer, inferRequest: Buf): Status;
  ov_compiled_model_free(compiledModel: Pointer): void;
  ov_model_inputs_size(model: Pointer, size: Buf): Status;
  ov_model_outputs_size(model: Pointer, size: Buf): Status;
  ov_model_const_input_by_index(model: Pointer, index: number, port: Buf): Status;
  ov_model_const_output_by_index(model: Pointer, index: number, port: Buf): Status;
  ov_model_free(model: Pointer): void;
  ov_port_get_any_name(port: Pointer, name: Buf): Status;
  ov_port_get_element_type(port: Pointer, type: Buf): Status;
  ov_port_get_partial_shape(port: Pointer, partialShape: Partial<OvPartialShapeStruct>): Status;
  ov_partial_shape_free(partialShape: OvPartialShapeStruct): void;
  ov_output_const_port_free(port: Pointer): void;
  ov_shape_create(rank: number, dims: Buf, shape: Partial<OvShapeStruct>): Status;
  ov_shape_free(shape: OvShapeStruct): Status;
  ov_tensor_create_from_host_ptr(type: number, shape: OvShapeStruct, hostPtr: Buf, tensor: Buf): Status;
  ov_tensor_get_shape(tensor: Pointer, shape: Partial<OvShapeStruct>): Status;
  ov_tensor_get_element_type(tensor: Pointer, type: Buf): Status;
  ov_tensor_get_byte_size(tensor: Pointer, size: Buf): Status;
  ov_tensor_data(tensor: Pointer, data: Buf): Status;
  ov_tensor_free(tensor: Pointer): void;
  ov_infer_request_set_input_tensor_by_index(request: Pointer, index: number, tensor: Pointer): Status;
  ov_infer_request_infer(request: Pointer): Status;
  ov_infer_request_get_output_tensor_by_index(request: Pointer, index: number, tensor: Buf): Status;
  ov_infer_request_free(request: Pointer): void;
}

/** A pointer- or size_t-sized out-parameter in memory that never moves. */
export function outPointer(): BigUint64Array {
  return new BigUint64Array(new ArrayBuffer(8));
}

/** A 32-bit out-parameter (ov_element_type_e*) in memory that never moves. */
export function outUint32(): Uint32Array {
  return new Uint32Array(new ArrayBuffer(4));
}

/** C prototypes; comments give the header's types. */
const PROTOTYPES = {
  // ov_common.h
  ov_get_error_info: "const char *ov_get_error_info(int status /* ov_status_e */)",
  ov_free: "void ov_free(void *content /* const char* */)",
  // ov_core.h
  ov_get_openvino_version: "int ov_get_openvino_version(_Out_ ov_version_t *version)",
  ov_version_free: "void ov_version_free(ov_version_t *version)",
  ov_core_create: "int ov_core_create(void *core /* ov_core_t** */)",
  ov_core_free: "void ov_core_free(void *core /* ov_core_t* */)",
  ov_core_read_model: "int ov_core_read_model(void *core /* const ov_core_t* */, const char *model_path, const char *bin_path, void *model /* ov_model_t** */)",
  // Variadic: property_args_size, then that many `const char*` key/value arguments.
  ov_core_compile_model:
    "int ov_core_compile_model(void *core /* const ov_core_t* */, void *model /* const ov_model_t* */, const char *device_name, size_t property_args_size, void *compiled_model /* ov_compiled_model_t** */, ...)",
  // ov_compiled_model.h
  ov_compiled_model_create_infer_request:
    "int ov_compiled_model_create_infer_request(void *compiled_model /* const ov_compiled_model_t* */, void *infer_request /* ov_infer_request_t** */)",
  ov_compiled_model_free: "void ov_compiled_model_free(void *compiled_model /* ov_compiled_model_t* */)",
  // ov_model.h
  ov_model_inputs_size: "int ov_model_inputs_size(void *model /* const ov_model_t* */, void *input_size /* size_t* */)",
  ov_model_outputs_size: "int ov_model_outputs_size(void *model /* const ov_model_t* */, void *output_size /* size_t* */)",
  ov_model_const_input_by_index:
    "int ov_model_const_input_by_index(void *model /* const ov_model_t* */, size_t index, void *input_port /* ov_output_const_port_t** */)",
  ov_model_const_output_by_index:
    "int ov_model_const_output_by_index(void *model /* const ov_model_t* */, size_t index, void *output_port /* ov_output_const_port_t** */)",
  ov_model_free: "void ov_model_free(void *model /* ov_model_t* */)",
  // ov_node.h
  ov_port_get_any_name: "int ov_port_get_any_name(void *port /* const ov_output_const_port_t* */, void *tensor_name /* char** */)",
  ov_port_get_element_type: "int ov_port_get_element_type(void *port /* const ov_output_const_port_t* */, void *tensor_type /* ov_element_type_e* */)",
  ov_port_get_partial_shape: "int ov_port_get_partial_shape(void *port /* const ov_output_const_port_t* */, _Out_ ov_partial_shape_t *partial_shape)",
  ov_output_const_port_free: "void ov_output_const_port_free(void *port /* ov_output_const_port_t* */)",
  // ov_partial_shape.h
  ov_partial_shape_free: "void ov_partial_shape_free(ov_partial_shape_t *partial_shape)",
  // ov_shape.h
  ov_shape_create: "int ov_shape_create(int64_t rank, void *dims /* const int64_t* */, _Out_ ov_shape_t *shape)",
  ov_shape_free: "int ov_shape_free(ov_shape_t *shape)",
  // ov_tensor.h; ov_shape_t is passed by value.
  ov_tensor_create_from_host_ptr:
    "int ov_tensor_create_from_host_ptr(uint32_t type /* ov_element_type_e */, ov_shape_t shape, void *host_ptr, void *tensor /* ov_tensor_t** */)",
  ov_tensor_get_shape: "int ov_tensor_get_shape(void *tensor /* const ov_tensor_t* */, _Out_ ov_shape_t *shape)",
  ov_tensor_get_element_type: "int ov_tensor_get_element_type(void *tensor /* const ov_tensor_t* */, void *type /* ov_element_type_e* */)",
  ov_tensor_get_byte_size: "int ov_tensor_get_byte_size(void *tensor /* const ov_tensor_t* */, void *byte_size /* size_t* */)",
  ov_tensor_data: "int ov_tensor_data(void *tensor /* const ov_tensor_t* */, void *data /* void** */)",
  ov_tensor_free: "void ov_tensor_free(void *tensor /* ov_tensor_t* */)",
  // ov_infer_request.h
  ov_infer_request_set_input_tensor_by_index:
    "int ov_infer_request_set_input_tensor_by_index(void *infer_request /* ov_infer_request_t* */, size_t idx, void *tensor /* const ov_tensor_t* */)",
  ov_infer_request_infer: "int ov_infer_request_infer(void *infer_request /* ov_infer_request_t* */)",
  ov_infer_request_get_output_tensor_by_index:
    "int ov_infer_request_get_output_tensor_by_index(void *infer_request /* const ov_infer_request_t* */, size_t idx, void *tensor /* ov_tensor_t** */)",
  ov_infer_request_free: "void ov_infer_request_free(void *infer_request /* ov_infer_request_t* */)",
} as const satisfies Record<keyof OvFunctions, string>;

/**
 * `const char* ov_get_last_err_msg()` (ov_common.h), added by openvino PR #20643 (late
 * 2023); looked up separately because older libraries lack it.
 */
const LAST_ERROR_PROTOTYPE = "void *ov_get_last_err_msg() /* const char* */";

export type OvApi = { [K in keyof OvFunctions]: KoffiFunc<OvFunctions[K]> } & {
  /** Absent where the library predates it. */
  ov_get_last_err_msg: KoffiFunc<() => Pointer> | undefined;
  /** koffi's library handle: referenced for as long as any function may be called (its GC closes the library). */
  library: KoffiLibrary;
};

/** The C-type comments are documentation; koffi's parser does not take them. */
function bare(proto: string): string {
  return proto.replace(/\/\*.*?\*\//g, "");
}

/** Declares every prototype; throws naming the first symbol the library lacks. */
export function declareOpenVino(lib: KoffiLibrary, path: string): OvApi {
  ovStructTypes();
  const api = { library: lib } as Record<string, unknown>;
  for (const [name, proto] of Object.entries(PROTOTYPES)) {
    try {
      api[name] = lib.func(bare(proto));
    } catch (err) {
      throw new LibraryLoadError(`${path} does not export ${name}, so it is not OpenVINO's C library (libopenvino_c): ${(err as Error).message}`, {
        library: "OpenVINO",
        call: name,
        cause: err,
      });
    }
  }
  try {
    api.ov_get_last_err_msg = lib.func(bare(LAST_ERROR_PROTOTYPE));
  } catch {
    api.ov_get_last_err_msg = undefined;
  }
  return api as OvApi;
}
