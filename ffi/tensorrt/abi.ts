/**
 * @module TensorRT 10's binary interface as the binding uses it: virtual-table slot
 * numbers, object layout, enum values and the Dims64 layout. Plain data, no koffi, so a
 * test can hold it against the headers.
 *
 * Source: NVIDIA/TensorRT, include/NvInferImpl.h, NvInferRuntime.h, NvInferRuntimeBase.h
 * and NvInferVersion.h at tag v10.0.0 (commit 28733f0fdccde2967fed395b06ca491af3a561a9).
 * The slots were recounted from NvInferImpl.h at every 10.x tag up to v10.16 (commit
 * 52399f555c2f80cb690a4a558b604e1a5f227e7c): every virtual declared before the last slot
 * used here is identical in all of them (NVIDIA only appends within a major). They are
 * different in 8.6 and in 11.0, hence the major-version check in library.ts.
 *
 * How the slots are counted (Itanium C++ ABI, x86-64 and aarch64 Linux):
 *  - Virtual functions take vtable entries in declaration order, base class first.
 *    Overloads are not grouped: each takes the next entry where it is declared.
 *  - A virtual destructor takes two entries: the complete-object destructor, then the
 *    deleting destructor (which also frees the object).
 *  - `apiv::VRoot` declares only `virtual ~VRoot() noexcept`, so every `apiv::V*` class has
 *    its destructors in slots 0 and 1 and its first own method in slot 2.
 *  - A public class (IRuntime, ICudaEngine, IExecutionContext) derives from INoCopy, whose
 *    only virtual is its destructor; the public class adds only `virtual ~IXxx()` and one
 *    data member, `apiv::VXxx* mImpl`. So the object is [vptr][mImpl] and its vtable is
 *    [complete dtor][deleting dtor]. Every public method is a non-virtual inline calling
 *    `mImpl->method(...)`: the binding reads mImpl and calls the V-class slot with mImpl
 *    as `this`. `delete obj` (how TensorRT 10 destroys an object) is slot 1 of the public
 *    object's own vtable.
 */

/** The major version whose slots these are. getInferLibVersion() must report it. */
export const TRT_MAJOR = 10;
/** The release the table was taken from, for messages. */
export const TRT_HEADER_RELEASE = "10.0.0 (verified identical through 10.16)";

/**
 * getInferLibVersion() encoding: NV_TENSORRT_VERSION_INT(major, minor, patch) =
 * major*10000 + minor*100 + patch from 10.0 (NvInferRuntimeBase.h); major*1000 +
 * minor*100 + patch before (kNV_TENSORRT_VERSION_IMPL, 8.x and 9.x).
 */
export function decodeTrtVersion(v: number): { major: number; minor: number; patch: number } {
  if (v >= 100000) return { major: Math.floor(v / 10000), minor: Math.floor((v % 10000) / 100), patch: v % 100 };
  return { major: Math.floor(v / 1000), minor: Math.floor((v % 1000) / 100), patch: v % 100 };
}

/** Byte offset of `mImpl` in a public object: right after the vptr (LP64). */
export const IMPL_OFFSET = 8;

/** Slots of a public object's own vtable (~INoCopy / ~IRuntime etc.). */
export const PUBLIC_SLOT = {
  completeDestructor: 0,
  deletingDestructor: 1,
} as const;

/** apiv::VRuntime (NvInferImpl.h), after VRoot's two destructor slots. */
export const VRUNTIME_SLOT = {
  getPImpl: 2,
  /** deserializeCudaEngine(void const* blob, std::size_t size); the IStreamReader& overload is 4. */
  deserializeCudaEngine: 3,
  setMaxThreads: 12,
  getMaxThreads: 13,
} as const;

/** apiv::VCudaEngine (NvInferImpl.h). */
export const VCUDA_ENGINE_SLOT = {
  getPImpl: 2,
  createExecutionContext: 5,
  getNbOptimizationProfiles: 10,
  getTensorShape: 19,
  getTensorDataType: 20,
  getTensorLocation: 21,
  isShapeInferenceIO: 22,
  getTensorIOMode: 23,
  getTensorFormat: 26,
  getProfileShape: 29,
  getNbIOTensors: 30,
  getIOTensorName: 31,
} as const;

/** apiv::VExecutionContext (NvInferImpl.h). */
export const VEXECUTION_CONTEXT_SLOT = {
  getPImpl: 2,
  setInputShape: 21,
  getTensorShape: 22,
  setTensorAddress: 24,
  enqueueV3: 37,
} as const;

/**
 * nvinfer1::ILogger (NvInferRuntimeBase.h in 10.0, NvInferRuntime.h later): `virtual void
 * log(Severity, AsciiChar const*) noexcept = 0;` then `virtual ~ILogger() = default;`.
 */
export const ILOGGER_SLOT = {
  log: 0,
  completeDestructor: 1,
  deletingDestructor: 2,
} as const;

/** ILogger::Severity (int32_t). */
export const SEVERITY = { INTERNAL_ERROR: 0, ERROR: 1, WARNING: 2, INFO: 3, VERBOSE: 4 } as const;

/**
 * nvinfer1::DataType (int32_t). kFP4 arrived in 10.8 and kE8M0 in 10.16; neither has a
 * Triton datatype.
 */
export const TRT_DATA_TYPE = {
  FLOAT: 0,
  HALF: 1,
  INT8: 2,
  INT32: 3,
  BOOL: 4,
  UINT8: 5,
  FP8: 6,
  BF16: 7,
  INT64: 8,
  INT4: 9,
  FP4: 10,
  E8M0: 11,
} as const;

/** nvinfer1::TensorIOMode (int32_t). */
export const TENSOR_IO_MODE = { NONE: 0, INPUT: 1, OUTPUT: 2 } as const;
/** nvinfer1::OptProfileSelector (int32_t). */
export const OPT_PROFILE_SELECTOR = { MIN: 0, OPT: 1, MAX: 2 } as const;
/** nvinfer1::ExecutionContextAllocationStrategy (int32_t). */
export const EXECUTION_CONTEXT_ALLOCATION = { STATIC: 0, ON_PROFILE_CHANGE: 1, USER_MANAGED: 2 } as const;
/** nvinfer1::TensorFormat (int32_t): only kLINEAR is row-major. */
export const TENSOR_FORMAT_LINEAR = 0;
/** nvinfer1::TensorLocation (int32_t). */
export const TENSOR_LOCATION = { DEVICE: 0, HOST: 1 } as const;

/**
 * class Dims64 { static constexpr int32_t MAX_DIMS{8}; int32_t nbDims; int64_t d[MAX_DIMS]; }
 * (`using Dims = Dims64`): nbDims at 0, 4 bytes of padding, d at 8, 72 bytes, 8-aligned.
 * It has no constructors or virtuals, so it is returned like a C struct: through a hidden
 * result pointer (x86-64: in rdi ahead of `this`; aarch64: in x8), which koffi does for
 * a C function declared to return the struct by value.
 */
export const DIMS64 = { MAX_DIMS: 8, size: 72, offsetOfD: 8 } as const;
