/**
 * @module ONNX Runtime C API prototypes. OrtGetApiBase() returns {GetApi,
 * GetVersionString}; GetApi(ORT_API_VERSION) returns the OrtApi table, a struct of
 * function pointers whose order is fixed by ORT's ABI (new entries only append). Index
 * = position in `struct OrtApi` of onnxruntime_c_api.h. Every OrtStatus* result is
 * checked by status.ts.
 */
import { getKoffi, loadLibrary, type KoffiFunction, type Pointer } from "../load.ts";

/** The API version we ask for: 1.17's table has every entry used here. */
export const ORT_API_VERSION = 17;

/** [index in OrtApi, C prototype]; argument comments give the C types. */
const PROTOTYPES = {
  CreateStatus: [0, "void *OrtCreateStatus(int code /* OrtErrorCode */, const char *msg)"],
  GetErrorCode: [1, "int OrtGetErrorCode(void *status /* const OrtStatus* */)"],
  GetErrorMessage: [2, "const char *OrtGetErrorMessage(void *status /* const OrtStatus* */)"],
  CreateEnv: [3, "void *OrtCreateEnv(int level /* OrtLoggingLevel */, const char *logid, _Out_ void **out /* OrtEnv** */)"],
  CreateSession: [7, "void *OrtCreateSession(void *env /* const OrtEnv* */, const char *path, void *options /* const OrtSessionOptions* */, _Out_ void **out /* OrtSession** */)"],
  // Same entry, declared with a raw OrtSession** buffer so it can run through koffi's .async.
  CreateSessionAsync: [7, "void *OrtCreateSessionAsync(void *env, const char *path, void *options, void *out /* OrtSession** */)"],
  CreateSessionFromArray: [8, "void *OrtCreateSessionFromArray(void *env, void *data /* const void* */, size_t length, void *options, _Out_ void **out)"],
  Run: [9, "void *OrtRun(void *session /* OrtSession* */, void *runOptions /* const OrtRunOptions* */, const char **inputNames /* const char* const* */, void **inputs /* const OrtValue* const* */, size_t inputCount, const char **outputNames /* const char* const* */, size_t outputCount, void *outputs /* OrtValue** */)"],
  // The same entry with raw pointer arrays (names, values, outputs), for the hot path.
  RunRaw: [9, "void *OrtRunRaw(void *session, void *runOptions, void *inputNames /* const char* const* */, void *inputs /* const OrtValue* const* */, size_t inputCount, void *outputNames /* const char* const* */, size_t outputCount, void *outputs /* OrtValue** */)"],
  CreateSessionOptions: [10, "void *OrtCreateSessionOptions(_Out_ void **out /* OrtSessionOptions** */)"],
  SetSessionExecutionMode: [13, "void *OrtSetSessionExecutionMode(void *options, int mode /* ExecutionMode */)"],
  EnableCpuMemArena: [18, "void *OrtEnableCpuMemArena(void *options)"],
  DisableCpuMemArena: [19, "void *OrtDisableCpuMemArena(void *options)"],
  SetSessionGraphOptimizationLevel: [23, "void *OrtSetSessionGraphOptimizationLevel(void *options, int level /* GraphOptimizationLevel */)"],
  SetIntraOpNumThreads: [24, "void *OrtSetIntraOpNumThreads(void *options, int n)"],
  SetInterOpNumThreads: [25, "void *OrtSetInterOpNumThreads(void *options, int n)"],
  SessionGetInputCount: [30, "void *OrtSessionGetInputCount(void *session, _Out_ size_t *out)"],
  SessionGetOutputCount: [31, "void *OrtSessionGetOutputCount(void *session, _Out_ size_t *out)"],
  SessionGetInputTypeInfo: [33, "void *OrtSessionGetInputTypeInfo(void *session, size_t index, _Out_ void **out /* OrtTypeInfo** */)"],
  SessionGetOutputTypeInfo: [34, "void *OrtSessionGetOutputTypeInfo(void *session, size_t index, _Out_ void **out /* OrtTypeInfo** */)"],
  SessionGetInputName: [36, "void *OrtSessionGetInputName(void *session, size_t index, void *allocator /* OrtAllocator* */, _Out_ void **out /* char** */)"],
  SessionGetOutputName: [37, "void *OrtSessionGetOutputName(void *session, size_t index, void *allocator /* OrtAllocator* */, _Out_ void **out /* char** */)"],
  CreateTensorAsOrtValue: [48, "void *OrtCreateTensorAsOrtValue(void *allocator, int64_t *shape /* const int64_t* */, size_t shapeLen, int type /* ONNXTensorElementDataType */, _Out_ void **out /* OrtValue** */)"],
  CreateTensorWithDataAsOrtValue: [49, "void *OrtCreateTensorWithDataAsOrtValue(void *info /* const OrtMemoryInfo* */, void *data, size_t byteLength, int64_t *shape /* const int64_t* */, size_t shapeLen, int type /* ONNXTensorElementDataType */, _Out_ void **out /* OrtValue** */)"],
  CreateTensorAsOrtValueRaw: [48, "void *OrtCreateTensorAsOrtValueRaw(void *allocator, void *shape /* const int64_t* */, size_t shapeLen, int type, void *out /* OrtValue** */)"],
  CreateTensorWithDataAsOrtValueRaw: [49, "void *OrtCreateTensorWithDataAsOrtValueRaw(void *info, void *data, size_t byteLength, void *shape /* const int64_t* */, size_t shapeLen, int type, void *out /* OrtValue** */)"],
  GetTensorMutableData: [51, "void *OrtGetTensorMutableData(void *value /* OrtValue* */, _Out_ void **out /* void** */)"],
  FillStringTensor: [52, "void *OrtFillStringTensor(void *value /* OrtValue* */, void **strings /* const char* const* */, size_t count)"],
  GetStringTensorDataLength: [53, "void *OrtGetStringTensorDataLength(void *value, _Out_ size_t *out)"],
  GetStringTensorContent: [54, "void *OrtGetStringTensorContent(void *value, void *buffer, size_t bufferLength, void *offsets /* size_t* */, size_t offsetsLength)"],
  CastTypeInfoToTensorInfo: [55, "void *OrtCastTypeInfoToTensorInfo(void *typeInfo, _Out_ void **out /* const OrtTensorTypeAndShapeInfo** */)"],
  GetOnnxTypeFromTypeInfo: [56, "void *OrtGetOnnxTypeFromTypeInfo(void *typeInfo, _Out_ int *out /* ONNXType* */)"],
  GetTensorElementType: [60, "void *OrtGetTensorElementType(void *info, _Out_ int *out /* ONNXTensorElementDataType* */)"],
  GetDimensionsCount: [61, "void *OrtGetDimensionsCount(void *info, _Out_ size_t *out)"],
  GetDimensions: [62, "void *OrtGetDimensions(void *info, void *dims /* int64_t* */, size_t count)"],
  GetTensorTypeAndShape: [65, "void *OrtGetTensorTypeAndShape(void *value, _Out_ void **out /* OrtTensorTypeAndShapeInfo** */)"],
  CreateCpuMemoryInfo: [69, "void *OrtCreateCpuMemoryInfo(int allocatorType /* OrtAllocatorType */, int memType /* OrtMemType */, _Out_ void **out /* OrtMemoryInfo** */)"],
  AllocatorFree: [76, "void *OrtAllocatorFree(void *allocator, void *p)"],
  GetAllocatorWithDefaultOptions: [78, "void *OrtGetAllocatorWithDefaultOptions(_Out_ void **out /* OrtAllocator** */)"],
  ReleaseEnv: [92, "void OrtReleaseEnv(void *env)"],
  ReleaseStatus: [93, "void OrtReleaseStatus(void *status)"],
  ReleaseMemoryInfo: [94, "void OrtReleaseMemoryInfo(void *info)"],
  ReleaseSession: [95, "void OrtReleaseSession(void *session)"],
  ReleaseValue: [96, "void OrtReleaseValue(void *value)"],
  ReleaseTypeInfo: [98, "void OrtReleaseTypeInfo(void *typeInfo)"],
  ReleaseTensorTypeAndShapeInfo: [99, "void OrtReleaseTensorTypeAndShapeInfo(void *info)"],
  ReleaseSessionOptions: [100, "void OrtReleaseSessionOptions(void *options)"],
  GetAvailableProviders: [125, "void *OrtGetAvailableProviders(_Out_ void **out /* char*** */, _Out_ int *count)"],
  ReleaseAvailableProviders: [126, "void *OrtReleaseAvailableProviders(void *providers /* char** */, int count)"],
  AddSessionConfigEntry: [130, "void *OrtAddSessionConfigEntry(void *options, const char *key, const char *value)"],
  GetResizedStringTensorElementBuffer: [252, "void *OrtGetResizedStringTensorElementBuffer(void *value /* OrtValue* */, size_t index, size_t length, _Out_ void **buffer /* char** */)"],
} as const;

export type OrtApi = { [K in keyof typeof PROTOTYPES]: KoffiFunction } & {
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
  UNDEFINED: 0, FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8,
  BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13, COMPLEX64: 14, COMPLEX128: 15, BFLOAT16: 16,
} as const;

/** OrtErrorCode names by value. */
export const ORT_ERROR_CODES = [
  "ORT_OK", "ORT_FAIL", "ORT_INVALID_ARGUMENT", "ORT_NO_SUCHFILE", "ORT_NO_MODEL", "ORT_ENGINE_ERROR",
  "ORT_RUNTIME_EXCEPTION", "ORT_INVALID_PROTOBUF", "ORT_MODEL_LOADED", "ORT_NOT_IMPLEMENTED", "ORT_INVALID_GRAPH",
  "ORT_EP_FAIL", "ORT_MODEL_LOAD_CANCELED", "ORT_MODEL_REQUIRES_COMPILATION", "ORT_NOT_FOUND",
] as const;

export const ORT_LOGGING_LEVEL = { VERBOSE: 0, INFO: 1, WARNING: 2, ERROR: 3, FATAL: 4 } as const;
export const GRAPH_OPTIMIZATION_LEVEL = { DISABLE_ALL: 0, ENABLE_BASIC: 1, ENABLE_EXTENDED: 2, ENABLE_ALL: 99 } as const;
export const ONNX_VALUE_TYPE_TENSOR = 1;

/** Loads the library and binds the table. Throws LibraryLoadError or Error with the reason. */
export function bindOrtApi(candidates: readonly string[]): OrtApi {
  const koffi = getKoffi();
  const { lib, path } = loadLibrary("ONNX Runtime (libonnxruntime.so.1)", candidates);
  let base: Pointer;
  try {
    base = lib.func("void *OrtGetApiBase()")();
  } catch (err) {
    throw new Error(`${path} does not export OrtGetApiBase: ${(err as Error).message}`);
  }
  const [getApi, getVersion] = koffi.decode(base, "void *", 2) as [Pointer, Pointer];
  const version = koffi.call(getVersion, protoType("const char *OrtGetVersionString()")) as string;
  const table = koffi.call(getApi, protoType("void *OrtGetApi(uint32_t version)"), ORT_API_VERSION) as Pointer;
  if (!table) throw new Error(`ONNX Runtime ${version} at ${path} does not provide C API version ${ORT_API_VERSION}`);
  const maxIndex = Math.max(...Object.values(PROTOTYPES).map(([i]) => i));
  const entries = koffi.decode(table, "void *", maxIndex + 1) as Pointer[];
  const api = { version, libraryPath: path, library: lib } as OrtApi;
  for (const [name, [index, proto]] of Object.entries(PROTOTYPES)) {
    (api as Record<string, unknown>)[name] = koffi.decode(entries[index], protoType(proto));
  }
  return api;
}

// koffi type names are global: declare each prototype once per process.
const protoCache = new Map<string, unknown>();
function protoType(decl: string): unknown {
  let t = protoCache.get(decl);
  if (!t) {
    // The C-type comments in PROTOTYPES are documentation; koffi's parser does not take them.
    t = getKoffi().proto(decl.replace(/\/\*.*?\*\//g, ""));
    protoCache.set(decl, t);
  }
  return t;
}
