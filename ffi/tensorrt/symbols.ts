/**
 * @module koffi declarations for TensorRT 10: the two exported C entry points, the
 * Dims64 struct, and each virtual method used, written as a C function whose first
 * argument is the C++ `this` (how the Itanium ABI passes it). abi.ts holds the slot each
 * one lives in; bindVirtuals() reads an object's vtable and turns those slots into
 * callable functions.
 */
import { getKoffi, type KoffiType, type Pointer } from "../load.ts";
import { DIMS64, IMPL_OFFSET, PUBLIC_SLOT } from "./abi.ts";
import { TensorRtError } from "./errors.ts";

/** Dims64 as koffi hands it over: `d` always has MAX_DIMS entries. */
export interface Dims64 {
  nbDims: number;
  d: (number | bigint)[];
}

/** The exported C functions (NvInfer.h / NvInferRuntime.h), both `extern "C"`. */
export const ENTRY_POINTS = {
  /** extern "C" int32_t getInferLibVersion() noexcept; */
  getInferLibVersion: "int32_t getInferLibVersion()",
  /** extern "C" void* createInferRuntime_INTERNAL(void* logger, int32_t version) noexcept; returns IRuntime*. */
  createInferRuntime_INTERNAL: "void *createInferRuntime_INTERNAL(void *logger, int32_t version)",
} as const;

/** The public object's deleting destructor: `delete obj` (slot PUBLIC_SLOT.deletingDestructor). */
const DELETING_DESTRUCTOR = "void NereidTrtDeletingDestructor(void *self)";

/** apiv::VRuntime methods (slots in VRUNTIME_SLOT). */
export const RUNTIME_PROTOTYPES = {
  /** nvinfer1::ICudaEngine* deserializeCudaEngine(void const* blob, std::size_t size) noexcept */
  deserializeCudaEngine: "void *NereidTrtRuntimeDeserializeCudaEngine(void *self, const void *blob, size_t size)",
  /** bool setMaxThreads(int32_t maxThreads) noexcept */
  setMaxThreads: "bool NereidTrtRuntimeSetMaxThreads(void *self, int32_t maxThreads)",
  /** int32_t getMaxThreads() const noexcept */
  getMaxThreads: "int32_t NereidTrtRuntimeGetMaxThreads(void *self)",
} as const;

export interface RuntimeMethods {
  deserializeCudaEngine(self: Pointer, blob: Uint8Array, size: number): Pointer;
  setMaxThreads(self: Pointer, maxThreads: number): boolean;
  getMaxThreads(self: Pointer): number;
}

/** apiv::VCudaEngine methods (slots in VCUDA_ENGINE_SLOT). Enum results are int32_t. */
export const ENGINE_PROTOTYPES = {
  /** IExecutionContext* createExecutionContext(ExecutionContextAllocationStrategy strategy) noexcept */
  createExecutionContext: "void *NereidTrtEngineCreateExecutionContext(void *self, int32_t strategy)",
  /** int32_t getNbOptimizationProfiles() const noexcept */
  getNbOptimizationProfiles: "int32_t NereidTrtEngineGetNbOptimizationProfiles(void *self)",
  /** Dims getTensorShape(char const* tensorName) const noexcept */
  getTensorShape: "NereidTrtDims64 NereidTrtEngineGetTensorShape(void *self, const char *tensorName)",
  /** DataType getTensorDataType(char const* tensorName) const noexcept */
  getTensorDataType: "int32_t NereidTrtEngineGetTensorDataType(void *self, const char *tensorName)",
  /** TensorLocation getTensorLocation(char const* tensorName) const noexcept */
  getTensorLocation: "int32_t NereidTrtEngineGetTensorLocation(void *self, const char *tensorName)",
  /** bool isShapeInferenceIO(char const* tensorName) const noexcept */
  isShapeInferenceIO: "bool NereidTrtEngineIsShapeInferenceIO(void *self, const char *tensorName)",
  /** TensorIOMode getTensorIOMode(char const* tensorName) const noexcept */
  getTensorIOMode: "int32_t NereidTrtEngineGetTensorIOMode(void *self, const char *tensorName)",
  /** TensorFormat getTensorFormat(char const* tensorName) const noexcept */
  getTensorFormat: "int32_t NereidTrtEngineGetTensorFormat(void *self, const char *tensorName)",
  /** Dims getProfileShape(char const* tensorName, int32_t profileIndex, OptProfileSelector select) const noexcept */
  getProfileShape: "NereidTrtDims64 NereidTrtEngineGetProfileShape(void *self, const char *tensorName, int32_t profileIndex, int32_t select)",
  /** int32_t getNbIOTensors() const noexcept */
  getNbIOTensors: "int32_t NereidTrtEngineGetNbIOTensors(void *self)",
  /** char const* getIOTensorName(int32_t index) const noexcept */
  getIOTensorName: "const char *NereidTrtEngineGetIOTensorName(void *self, int32_t index)",
} as const;

export interface EngineMethods {
  createExecutionContext(self: Pointer, strategy: number): Pointer;
  getNbOptimizationProfiles(self: Pointer): number;
  getTensorShape(self: Pointer, name: string): Dims64;
  getTensorDataType(self: Pointer, name: string): number;
  getTensorLocation(self: Pointer, name: string): number;
  isShapeInferenceIO(self: Pointer, name: string): boolean;
  getTensorIOMode(self: Pointer, name: string): number;
  getTensorFormat(self: Pointer, name: string): number;
  getProfileShape(self: Pointer, name: string, profile: number, select: number): Dims64;
  getNbIOTensors(self: Pointer): number;
  getIOTensorName(self: Pointer, index: number): string | null;
}

/** apiv::VExecutionContext methods (slots in VEXECUTION_CONTEXT_SLOT). */
export const CONTEXT_PROTOTYPES = {
  /** bool setInputShape(char const* tensorName, Dims const& dims) noexcept */
  setInputShape: "bool NereidTrtContextSetInputShape(void *self, const char *tensorName, const NereidTrtDims64 *dims)",
  /** Dims getTensorShape(char const* tensorName) const noexcept */
  getTensorShape: "NereidTrtDims64 NereidTrtContextGetTensorShape(void *self, const char *tensorName)",
  /** bool setTensorAddress(char const* tensorName, void* data) noexcept */
  setTensorAddress: "bool NereidTrtContextSetTensorAddress(void *self, const char *tensorName, void *data)",
  /** bool enqueueV3(cudaStream_t stream) noexcept */
  enqueueV3: "bool NereidTrtContextEnqueueV3(void *self, void *stream)",
} as const;

export interface ContextMethods {
  setInputShape(self: Pointer, name: string, dims: Dims64): boolean;
  getTensorShape(self: Pointer, name: string): Dims64;
  setTensorAddress(self: Pointer, name: string, data: bigint): boolean;
  enqueueV3(self: Pointer, stream: unknown): boolean;
}

let dimsType: KoffiType | undefined;

/** class Dims64 { int32_t nbDims; int64_t d[8]; } (NvInferRuntimeBase.h), declared once per process. */
export function dims64Type(): KoffiType {
  const k = getKoffi();
  dimsType ??= k.struct("NereidTrtDims64", { nbDims: "int32_t", d: k.array("int64_t", DIMS64.MAX_DIMS, "Array") });
  return dimsType;
}

// koffi type names are global: each prototype is declared once per process.
const protoCache = new Map<string, KoffiType>();
export function protoType(decl: string): KoffiType {
  let t = protoCache.get(decl);
  if (!t) {
    dims64Type();
    t = getKoffi().proto(decl);
    protoCache.set(decl, t);
  }
  return t;
}

const POINTER_SIZE = 8;

/** The address stored at `address + offset` (a pointer-sized read). */
function readPointer(address: bigint, offset = 0): Pointer {
  return getKoffi().decode(address, offset, "void *") as Pointer;
}

/** `obj->mImpl` of a public TensorRT object. */
export function implOf(obj: bigint): bigint {
  const impl = readPointer(obj, IMPL_OFFSET);
  if (!impl) throw new TensorRtError("TensorRT object has a null mImpl");
  return impl;
}

/** Binds `slots` of the vtable of the object at `self` with the C prototypes in `prototypes`. */
export function bindVirtuals<T>(self: bigint, slots: Readonly<Record<string, number>>, prototypes: Readonly<Record<string, string>>): T {
  const k = getKoffi();
  const vtable = readPointer(self);
  if (!vtable) throw new TensorRtError("TensorRT object has a null vtable pointer");
  const out: Record<string, unknown> = {};
  for (const [name, decl] of Object.entries(prototypes)) {
    const slot = slots[name];
    if (slot === undefined) throw new TensorRtError(`TensorRT: no vtable slot recorded for ${name}`, { call: name });
    const fn = readPointer(vtable, slot * POINTER_SIZE);
    if (!fn) throw new TensorRtError(`TensorRT vtable slot ${slot} (${name}) is empty`, { call: name });
    out[name] = k.decode(fn, protoType(decl));
  }
  return out as T;
}

/**
 * Takes a public object the caller is to own: reads its mImpl and binds the V-class
 * methods. If that fails, `obj` is deleted before the error propagates.
 */
export function bindOwned<M>(obj: bigint, slots: Readonly<Record<string, number>>, prototypes: Readonly<Record<string, string>>): { impl: bigint; m: M } {
  try {
    const impl = implOf(obj);
    return { impl, m: bindVirtuals<M>(impl, slots, prototypes) };
  } catch (err) {
    deletePublicObject(obj);
    throw err;
  }
}

/** `delete obj` for a public TensorRT object: its own vtable's deleting destructor. */
export function deletePublicObject(obj: bigint): void {
  const del = bindVirtuals<{ deletingDestructor(self: bigint): void }>(obj, PUBLIC_SLOT, { deletingDestructor: DELETING_DESTRUCTOR });
  del.deletingDestructor(obj);
}

/** A shape as Dims64 (at most MAX_DIMS dimensions). */
export function toDims(shape: readonly number[]): Dims64 {
  if (shape.length > DIMS64.MAX_DIMS)
    throw new TensorRtError(`a TensorRT shape has at most ${DIMS64.MAX_DIMS} dimensions, got ${shape.length}`, { code: "INVALID_ARG" });
  const d = new Array<number>(DIMS64.MAX_DIMS).fill(0);
  shape.forEach((v, i) => (d[i] = v));
  return { nbDims: shape.length, d };
}

/** Dims64 as a shape; undefined for TensorRT's "invalid" answer (nbDims -1, e.g. an unknown name). */
export function fromDims(dims: Dims64): number[] | undefined {
  if (dims.nbDims < 0 || dims.nbDims > DIMS64.MAX_DIMS) return undefined;
  return dims.d.slice(0, dims.nbDims).map(Number);
}
