/**
 * @module ONNX Runtime C API prototypes. OrtGetApiBase() returns {GetApi,
 * GetVersionString}; GetApi(ORT_API_VERSION) returns the OrtApi table, a struct of
 * function pointers whose order is fixed by ORT's ABI (new entries only append). Index
 * = position in `struct OrtApi` of onnxruntime_c_api.h. Every OrtStatus* result goes
 * through status.ts.
 */
import { getKoffi, loadLibrary, LibraryLoadError, type KoffiFunc, type KoffiType, type Pointer, type Unusable } from "../load.ts";

/**
 * The API version asked for. Every table from 1.17 on has each entry used here, and later
 * libraries (1.30 declares ORT_API_VERSION 30) still serve version 17, so one build of
 * the server works with any ONNX Runtime from 1.17.
 */
export const ORT_API_VERSION = 17;

/** OrtStatus*: null on success, else an error that status.ts turns into a ServerError. */
type Status = Pointer;
/** An `_Out_ T*` argument: koffi writes the result into element 0. */
type Out<T> = [T];
/** A pointer argument given as JS memory (ORT reads or writes it) or as an address. */
type Buf = ArrayBufferView | Pointer;

/** JS-side signatures of the entries used; the C ones are in PROTOTYPES. */
interface OrtApiFunctions {
  CreateStatus(code: number, msg: string): Status;
  GetErrorCode(status: Pointer): number;
  GetErrorMessage(status: Pointer): string;
  CreateEnv(level: number, logid: string, out: Buf): Status;
  CreateSession(env: Pointer, path: string, options: Pointer, out: Buf): Status;
  Run(session: Pointer, runOptions: Pointer, inputNames: Buf, inputs: Buf, inputCount: number, outputNames: Buf, outputCount: number, outputs: Buf): Status;
  CreateSessionOptions(out: Out<Pointer>): Status;
  SetSessionExecutionMode(options: Pointer, mode: number): Status;
  EnableMemPattern(options: Pointer): Status;
  DisableMemPattern(options: Pointer): Status;
  EnableCpuMemArena(options: Pointer): Status;
  DisableCpuMemArena(options: Pointer): Status;
  SetSessionGraphOptimizationLevel(options: Pointer, level: number): Status;
  SetIntraOpNumThreads(options: Pointer, n: number): Status;
  SetInterOpNumThreads(options: Pointer, n: number): Status;
  SessionGetInputCount(session: Pointer, out: Out<number>): Status;
  SessionGetOutputCount(session: Pointer, out: Out<number>): Status;
  SessionGetInputTypeInfo(session: Pointer, index: number, out: Out<Pointer>): Status;
  SessionGetOutputTypeInfo(session: Pointer, index: number, out: Out<Pointer>): Status;
  SessionGetInputName(session: Pointer, index: number, allocator: Pointer, out: Out<Pointer>): Status;
  SessionGetOutputName(session: Pointer, index: number, allocator: Pointer, out: Out<Pointer>): Status;
  CreateTensorAsOrtValue(allocator: Pointer, shape: Buf, shapeLen: number, type: number, out: Buf): Status;
  CreateTensorWithDataAsOrtValue(info: Pointer, data: Buf, byteLength: number, shape: Buf, shapeLen: number, type: number, out: Buf): Status;
  GetTensorMutableData(value: Pointer, out: Buf): Status;
  FillStringTensor(value: Pointer, strings: Buf, count: number): Status;
  GetStringTensorDataLength(value: Pointer, out: Out<number>): Status;
  GetStringTensorContent(value: Pointer, buffer: Buf, bufferLength: number, offsets: Buf, offsetsLength: number): Status;
  CastTypeInfoToTensorInfo(typeInfo: Pointer, out: Out<Pointer>): Status;
  GetOnnxTypeFromTypeInfo(typeInfo: Pointer, out: Out<number>): Status;
  GetTensorElementType(info: Pointer, out: Buf): Status;
  GetDimensionsCount(info: Pointer, out: Buf): Status;
  GetDimensions(info: Pointer, dims: Buf, count: number): Status;
  GetTensorTypeAndShape(value: Pointer, out: Buf): Status;
  CreateCpuMemoryInfo(allocatorType: number, memType: number, out: Out<Pointer>): Status;
  AllocatorFree(allocator: Pointer, p: Pointer): Status;
  GetAllocatorWithDefaultOptions(out: Out<Pointer>): Status;
  ReleaseEnv(env: Pointer): void;
  ReleaseStatus(status: Pointer): void;
  ReleaseMemoryInfo(info: Pointer): void;
  ReleaseSession(session: Pointer): void;
  ReleaseValue(value: Pointer): void;
  ReleaseTypeInfo(typeInfo: Pointer): void;
  ReleaseTensorTypeAndShapeInfo(info: Pointer): void;
  ReleaseSessionOptions(options: Pointer): void;
  GetAvailableProviders(out: Out<Pointer>, count: Out<number>): Status;
  ReleaseAvailableProviders(providers: Pointer, count: number): Status;
  AddSessionConfigEntry(options: Pointer, key: string, value: string): Status;
  GetResizedStringTensorElementBuffer(value: Pointer, index: number, length: number, out: Out<Pointer>): Status;
  SessionOptionsAppendExecutionProvider_TensorRT_V2(options: Pointer, trt: Pointer): Status;
  CreateTensorRTProviderOptions(out: Out<Pointer>): Status;
  UpdateTensorRTProviderOptions(trt: Pointer, keys: string[], values: string[], n: number): Status;
  ReleaseTensorRTProviderOptions(trt: Pointer): void;
  SessionOptionsAppendExecutionProvider_CUDA_V2(options: Pointer, cuda: Pointer): Status;
  CreateCUDAProviderOptions(out: Out<Pointer>): Status;
  UpdateCUDAProviderOptions(cuda: Pointer, keys: string[], values: string[], n: number): Status;
  ReleaseCUDAProviderOptions(cuda: Pointer): void;
  SessionOptionsAppendExecutionProvider(options: Pointer, provider: string, keys: string[], values: string[], n: number): Status;
}

/**
 * [index in struct OrtApi, C prototype]; comments give the C types. Pointers that ORT may
 * read or write from koffi's worker thread (Run, CreateSession, CreateEnv) and the value out-params
 * are declared `void *` and passed as off-heap typed arrays, never as JS arrays.
 */
const PROTOTYPES = {
  CreateStatus: [0, "void *OrtCreateStatus(int code /* OrtErrorCode */, const char *msg)"],
  GetErrorCode: [1, "int OrtGetErrorCode(void *status /* const OrtStatus* */)"],
  GetErrorMessage: [2, "const char *OrtGetErrorMessage(void *status /* const OrtStatus* */)"],
  CreateEnv: [3, "void *OrtCreateEnv(int level /* OrtLoggingLevel */, const char *logid, void *out /* OrtEnv** */)"],
  CreateSession: [
    7,
    "void *OrtCreateSession(void *env /* const OrtEnv* */, const char *path /* const ORTCHAR_T* */, void *options /* const OrtSessionOptions* */, void *out /* OrtSession** */)",
  ],
  Run: [
    9,
    "void *OrtRun(void *session /* OrtSession* */, void *runOptions /* const OrtRunOptions* */, void *inputNames /* const char* const* */, void *inputs /* const OrtValue* const* */, size_t inputCount, void *outputNames /* const char* const* */, size_t outputCount, void *outputs /* OrtValue** */)",
  ],
  CreateSessionOptions: [10, "void *OrtCreateSessionOptions(_Out_ void **out /* OrtSessionOptions** */)"],
  SetSessionExecutionMode: [13, "void *OrtSetSessionExecutionMode(void *options /* OrtSessionOptions* */, int mode /* ExecutionMode */)"],
  EnableMemPattern: [16, "void *OrtEnableMemPattern(void *options /* OrtSessionOptions* */)"],
  DisableMemPattern: [17, "void *OrtDisableMemPattern(void *options /* OrtSessionOptions* */)"],
  EnableCpuMemArena: [18, "void *OrtEnableCpuMemArena(void *options /* OrtSessionOptions* */)"],
  DisableCpuMemArena: [19, "void *OrtDisableCpuMemArena(void *options /* OrtSessionOptions* */)"],
  SetSessionGraphOptimizationLevel: [
    23,
    "void *OrtSetSessionGraphOptimizationLevel(void *options /* OrtSessionOptions* */, int level /* GraphOptimizationLevel */)",
  ],
  SetIntraOpNumThreads: [24, "void *OrtSetIntraOpNumThreads(void *options /* OrtSessionOptions* */, int n)"],
  SetInterOpNumThreads: [25, "void *OrtSetInterOpNumThreads(void *options /* OrtSessionOptions* */, int n)"],
  SessionGetInputCount: [30, "void *OrtSessionGetInputCount(void *session /* const OrtSession* */, _Out_ size_t *out)"],
  SessionGetOutputCount: [31, "void *OrtSessionGetOutputCount(void *session /* const OrtSession* */, _Out_ size_t *out)"],
  SessionGetInputTypeInfo: [33, "void *OrtSessionGetInputTypeInfo(void *session /* const OrtSession* */, size_t index, _Out_ void **out /* OrtTypeInfo** */)"],
  SessionGetOutputTypeInfo: [
    34,
    "void *OrtSessionGetOutputTypeInfo(void *session /* const OrtSession* */, size_t index, _Out_ void **out /* OrtTypeInfo** */)",
  ],
  SessionGetInputName: [
    36,
    "void *OrtSessionGetInputName(void *session /* const OrtSession* */, size_t index, void *allocator /* OrtAllocator* */, _Out_ void **out /* char** */)",
  ],
  SessionGetOutputName: [
    37,
    "void *OrtSessionGetOutputName(void *session /* const OrtSession* */, size_t index, void *allocator /* OrtAllocator* */, _Out_ void **out /* char** */)",
  ],
  CreateTensorAsOrtValue: [
    48,
    "void *OrtCreateTensorAsOrtValue(void *allocator /* OrtAllocator* */, void *shape /* const int64_t* */, size_t shapeLen, int type /* ONNXTensorElementDataType */, void *out /* OrtValue** */)",
  ],
  CreateTensorWithDataAsOrtValue: [
    49,
    "void *OrtCreateTensorWithDataAsOrtValue(void *info /* const OrtMemoryInfo* */, void *data, size_t byteLength, void *shape /* const int64_t* */, size_t shapeLen, int type /* ONNXTensorElementDataType */, void *out /* OrtValue** */)",
  ],
  GetTensorMutableData: [51, "void *OrtGetTensorMutableData(void *value /* OrtValue* */, void *out /* void** */)"],
  FillStringTensor: [52, "void *OrtFillStringTensor(void *value /* OrtValue* */, void *strings /* const char* const* */, size_t count)"],
  GetStringTensorDataLength: [53, "void *OrtGetStringTensorDataLength(void *value /* const OrtValue* */, _Out_ size_t *out)"],
  GetStringTensorContent: [
    54,
    "void *OrtGetStringTensorContent(void *value /* const OrtValue* */, void *buffer, size_t bufferLength, void *offsets /* size_t* */, size_t offsetsLength)",
  ],
  CastTypeInfoToTensorInfo: [
    55,
    "void *OrtCastTypeInfoToTensorInfo(void *typeInfo /* const OrtTypeInfo* */, _Out_ void **out /* const OrtTensorTypeAndShapeInfo** */)",
  ],
  GetOnnxTypeFromTypeInfo: [56, "void *OrtGetOnnxTypeFromTypeInfo(void *typeInfo /* const OrtTypeInfo* */, _Out_ int *out /* ONNXType* */)"],
  GetTensorElementType: [60, "void *OrtGetTensorElementType(void *info /* const OrtTensorTypeAndShapeInfo* */, void *out /* ONNXTensorElementDataType* */)"],
  GetDimensionsCount: [61, "void *OrtGetDimensionsCount(void *info /* const OrtTensorTypeAndShapeInfo* */, void *out /* size_t* */)"],
  GetDimensions: [62, "void *OrtGetDimensions(void *info /* const OrtTensorTypeAndShapeInfo* */, void *dims /* int64_t* */, size_t count)"],
  GetTensorTypeAndShape: [65, "void *OrtGetTensorTypeAndShape(void *value /* const OrtValue* */, void *out /* OrtTensorTypeAndShapeInfo** */)"],
  CreateCpuMemoryInfo: [
    69,
    "void *OrtCreateCpuMemoryInfo(int allocatorType /* OrtAllocatorType */, int memType /* OrtMemType */, _Out_ void **out /* OrtMemoryInfo** */)",
  ],
  AllocatorFree: [76, "void *OrtAllocatorFree(void *allocator /* OrtAllocator* */, void *p)"],
  GetAllocatorWithDefaultOptions: [78, "void *OrtGetAllocatorWithDefaultOptions(_Out_ void **out /* OrtAllocator** */)"],
  ReleaseEnv: [92, "void OrtReleaseEnv(void *env /* OrtEnv* */)"],
  ReleaseStatus: [93, "void OrtReleaseStatus(void *status /* OrtStatus* */)"],
  ReleaseMemoryInfo: [94, "void OrtReleaseMemoryInfo(void *info /* OrtMemoryInfo* */)"],
  ReleaseSession: [95, "void OrtReleaseSession(void *session /* OrtSession* */)"],
  ReleaseValue: [96, "void OrtReleaseValue(void *value /* OrtValue* */)"],
  ReleaseTypeInfo: [98, "void OrtReleaseTypeInfo(void *typeInfo /* OrtTypeInfo* */)"],
  ReleaseTensorTypeAndShapeInfo: [99, "void OrtReleaseTensorTypeAndShapeInfo(void *info /* OrtTensorTypeAndShapeInfo* */)"],
  ReleaseSessionOptions: [100, "void OrtReleaseSessionOptions(void *options /* OrtSessionOptions* */)"],
  GetAvailableProviders: [125, "void *OrtGetAvailableProviders(_Out_ void **out /* char*** */, _Out_ int *count)"],
  ReleaseAvailableProviders: [126, "void *OrtReleaseAvailableProviders(void *providers /* char** */, int count)"],
  AddSessionConfigEntry: [130, "void *OrtAddSessionConfigEntry(void *options /* OrtSessionOptions* */, const char *key, const char *value)"],
  GetResizedStringTensorElementBuffer: [
    252,
    "void *OrtGetResizedStringTensorElementBuffer(void *value /* OrtValue* */, size_t index, size_t length, _Out_ void **buffer /* char** */)",
  ],
  // Execution providers (version 9, 11, 12 blocks of ort_api_1_to_N in onnxruntime_c_api.cc).
  SessionOptionsAppendExecutionProvider_TensorRT_V2: [
    170,
    "void *OrtSessionOptionsAppendExecutionProvider_TensorRT_V2(void *options /* OrtSessionOptions* */, void *trt /* const OrtTensorRTProviderOptionsV2* */)",
  ],
  CreateTensorRTProviderOptions: [171, "void *OrtCreateTensorRTProviderOptions(_Out_ void **out /* OrtTensorRTProviderOptionsV2** */)"],
  UpdateTensorRTProviderOptions: [
    172,
    "void *OrtUpdateTensorRTProviderOptions(void *trt /* OrtTensorRTProviderOptionsV2* */, const char **keys, const char **values, size_t n)",
  ],
  ReleaseTensorRTProviderOptions: [174, "void OrtReleaseTensorRTProviderOptions(void *trt /* OrtTensorRTProviderOptionsV2* */)"],
  SessionOptionsAppendExecutionProvider_CUDA_V2: [
    204,
    "void *OrtSessionOptionsAppendExecutionProvider_CUDA_V2(void *options /* OrtSessionOptions* */, void *cuda /* const OrtCUDAProviderOptionsV2* */)",
  ],
  CreateCUDAProviderOptions: [205, "void *OrtCreateCUDAProviderOptions(_Out_ void **out /* OrtCUDAProviderOptionsV2** */)"],
  UpdateCUDAProviderOptions: [
    206,
    "void *OrtUpdateCUDAProviderOptions(void *cuda /* OrtCUDAProviderOptionsV2* */, const char **keys, const char **values, size_t n)",
  ],
  ReleaseCUDAProviderOptions: [208, "void OrtReleaseCUDAProviderOptions(void *cuda /* OrtCUDAProviderOptionsV2* */)"],
  SessionOptionsAppendExecutionProvider: [
    216,
    "void *OrtSessionOptionsAppendExecutionProvider(void *options /* OrtSessionOptions* */, const char *provider, const char **keys, const char **values, size_t n)",
  ],
} as const satisfies Record<keyof OrtApiFunctions, readonly [number, string]>;

export type OrtApi = { [K in keyof OrtApiFunctions]: KoffiFunc<OrtApiFunctions[K]> } & {
  version: string;
  libraryPath: string;
  /**
   * koffi's handle of the loaded library. It must stay referenced for as long as any
   * function of the table may be called: when koffi's handle is garbage-collected it
   * closes the library, and every later call jumps into unmapped memory.
   */
  library: unknown;
};

/** ONNXTensorElementDataType */
export const ONNX_TYPE = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
} as const;

/** ONNXType of a tensor: the only kind of value served. */
export const ONNX_VALUE_TYPE_TENSOR = 1;

/** OrtErrorCode names by value. */
export const ORT_ERROR_CODES = [
  "ORT_OK",
  "ORT_FAIL",
  "ORT_INVALID_ARGUMENT",
  "ORT_NO_SUCHFILE",
  "ORT_NO_MODEL",
  "ORT_ENGINE_ERROR",
  "ORT_RUNTIME_EXCEPTION",
  "ORT_INVALID_PROTOBUF",
  "ORT_MODEL_LOADED",
  "ORT_NOT_IMPLEMENTED",
  "ORT_INVALID_GRAPH",
  "ORT_EP_FAIL",
  "ORT_MODEL_LOAD_CANCELED",
  "ORT_MODEL_REQUIRES_COMPILATION",
  "ORT_NOT_FOUND",
] as const;

export const ORT_LOGGING_LEVEL = { VERBOSE: 0, INFO: 1, WARNING: 2, ERROR: 3, FATAL: 4 } as const;
export const ORT_EXECUTION_MODE = { SEQUENTIAL: 0, PARALLEL: 1 } as const;
export const GRAPH_OPTIMIZATION_LEVEL = { DISABLE_ALL: 0, ENABLE_BASIC: 1, ENABLE_EXTENDED: 2, ENABLE_ALL: 99 } as const;
/** OrtAllocatorType.OrtArenaAllocator and OrtMemType.OrtMemTypeDefault, for CreateCpuMemoryInfo. */
export const ORT_ARENA_ALLOCATOR = 1;
export const ORT_MEM_TYPE_DEFAULT = 0;

/** Loads the library and binds the table. Throws LibraryLoadError (UNAVAILABLE) with the reason. */
export function bindOrtApi(candidates: readonly (string | Unusable)[]): OrtApi {
  const koffi = getKoffi();
  const { lib, path } = loadLibrary("ONNX Runtime (libonnxruntime.so.1)", candidates);
  let base: Pointer;
  try {
    base = lib.func("void *OrtGetApiBase()")();
  } catch (err) {
    throw new LibraryLoadError(`${path} does not export OrtGetApiBase: ${(err as Error).message}`, {
      library: "ONNX Runtime",
      call: "OrtGetApiBase",
      cause: err,
    });
  }
  // struct OrtApiBase { const OrtApi* (*GetApi)(uint32_t version); const char* (*GetVersionString)(void); }
  const [getApi, getVersion] = koffi.decode(base, "void *", 2) as [Pointer, Pointer];
  const version = koffi.call(getVersion, protoType("const char *OrtGetVersionString()")) as string;
  const table = koffi.call(getApi, protoType("void *OrtGetApi(uint32_t version)"), ORT_API_VERSION) as Pointer;
  if (!table)
    throw new LibraryLoadError(`ONNX Runtime ${version} at ${path} does not provide C API version ${ORT_API_VERSION}`, {
      library: "ONNX Runtime",
      call: "OrtApiBase::GetApi",
    });
  const maxIndex = Math.max(...Object.values(PROTOTYPES).map(([i]) => i));
  const entries = koffi.decode(table, "void *", maxIndex + 1) as Pointer[];
  const api = { version, libraryPath: path, library: lib } as OrtApi;
  for (const [name, [index, proto]] of Object.entries(PROTOTYPES)) {
    if (!entries[index]) {
      throw new LibraryLoadError(`ONNX Runtime ${version} at ${path} has no entry ${index} (${name}) in its C API table`, {
        library: "ONNX Runtime",
        call: "OrtApiBase::GetApi",
      });
    }
    (api as unknown as Record<string, unknown>)[name] = koffi.decode(entries[index], protoType(proto));
  }
  return api;
}

// koffi type names are global: declare each prototype once per process.
const protoCache = new Map<string, KoffiType>();
function protoType(decl: string): KoffiType {
  let t = protoCache.get(decl);
  if (!t) {
    // The C-type comments are documentation; koffi's parser does not take them.
    t = getKoffi().proto(decl.replace(/\/\*.*?\*\//g, ""));
    protoCache.set(decl, t);
  }
  return t;
}
