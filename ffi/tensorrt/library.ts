/**
 * @module The TensorRT 10 runtime (libnvinfer.so.10): where it is looked for, its version
 * check, and how the binding reaches its C++ interface without a C API.
 *
 * Where: an explicit path (`--backend-config=tensorrt,library=PATH`) is the only
 * candidate when given, then likewise NEREID_TENSORRT_LIBRARY; otherwise libnvinfer.so.10
 * through the loader's search path, then /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu
 * (JetPack) and /usr/local/tensorrt/lib. A miss is one LibraryLoadError naming each place.
 *
 * How: TensorRT exports two C functions. `getInferLibVersion()` gives the version, and the
 * binding refuses any major other than 10 (the vtable slots below are TensorRT 10's;
 * 10.0 is the minimum minor, as every method used exists from 10.0). Then
 * `createInferRuntime_INTERNAL(ILogger*, version)` (what the header's inline
 * createInferRuntime() calls) returns an IRuntime*. The logger is a C++ object built in
 * native memory (logger.ts). The version argument is the NV_TENSORRT_VERSION a caller was
 * compiled against; the binding passes the library's own, as a program built against that
 * release would. Everything after that is a C++ virtual call made by hand (abi.ts has the
 * slot table and the layout rules, symbols.ts the prototypes):
 *
 *   public object (IRuntime*, ICudaEngine*, IExecutionContext*) = [vptr][mImpl]
 *   method m     = (*(void***)mImpl)[slot of m in apiv::V<Class>], called with this = mImpl
 *   delete obj   = (*(void***)obj)[1], the public object's deleting destructor
 *
 * Every TensorRT call is made on the JS thread: it needs the device's CUDA context
 * current (cuCtxSetCurrent is per thread, and koffi's worker threads have none), and it
 * keeps the logger's callbacks on the JS thread. Only the wait for a run
 * (cuStreamSynchronize) leaves it.
 */
import { LibraryLoadError, loadLibrary, type KoffiFunc, type KoffiLibrary, type Pointer } from "../load.ts";
import { decodeTrtVersion, TRT_HEADER_RELEASE, TRT_MAJOR } from "./abi.ts";
import { TensorRtError } from "./errors.ts";
import { TrtLogger } from "./logger.ts";
import { TrtRuntime } from "./runtime.ts";
import { ENTRY_POINTS } from "./symbols.ts";

export const TENSORRT_LIBRARY = "libnvinfer.so.10";

/** Candidates in priority order (see the module comment). */
export function tensorRtLibraryCandidates(explicit?: string): string[] {
  if (explicit) return [explicit];
  const env = process.env.NEREID_TENSORRT_LIBRARY;
  if (env) return [env];
  return [
    TENSORRT_LIBRARY,
    `/usr/lib/x86_64-linux-gnu/${TENSORRT_LIBRARY}`,
    `/usr/lib/aarch64-linux-gnu/${TENSORRT_LIBRARY}`,
    `/usr/local/tensorrt/lib/${TENSORRT_LIBRARY}`,
  ];
}

export interface TensorRtVersion {
  major: number;
  minor: number;
  patch: number;
  /** getInferLibVersion() as returned. */
  number: number;
  /** "10.8.0" */
  text: string;
}

/** Loads the library and reads getInferLibVersion(); no version check. Throws LibraryLoadError or TensorRtError (both UNAVAILABLE). */
function open(explicit?: string): { lib: KoffiLibrary; path: string; version: TensorRtVersion } {
  const { lib, path } = loadLibrary(`TensorRT (${TENSORRT_LIBRARY})`, tensorRtLibraryCandidates(explicit));
  let getVersion: KoffiFunc<() => number>;
  try {
    getVersion = lib.func(ENTRY_POINTS.getInferLibVersion);
  } catch (err) {
    throw new TensorRtError(`${path} is not a TensorRT runtime library: it does not export getInferLibVersion (${(err as Error).message})`, {
      call: "getInferLibVersion",
      code: "UNAVAILABLE",
    });
  }
  const number = getVersion();
  const v = decodeTrtVersion(number);
  return { lib, path, version: { ...v, number, text: `${v.major}.${v.minor}.${v.patch}` } };
}

/** Which TensorRT a path (or the default search) finds, for `nereid devices`; says nothing about whether it is usable. */
export function probeTensorRt(explicit?: string): { path: string; version: TensorRtVersion; supported: boolean } {
  const { path, version } = open(explicit);
  return { path, version, supported: version.major === TRT_MAJOR };
}

type CreateRuntime = KoffiFunc<(logger: bigint, version: number) => Pointer>;

/**
 * The loaded library, once per process: the first successful get() decides which file
 * (a failed one is not remembered, so a later call may try again).
 */
export class TensorRtLibrary {
  static #instance: TensorRtLibrary | undefined;
  readonly path: string;
  readonly version: TensorRtVersion;
  readonly logger: TrtLogger;
  readonly #create: CreateRuntime;

  private constructor(path: string, version: TensorRtVersion, logger: TrtLogger, create: CreateRuntime) {
    this.path = path;
    this.version = version;
    this.logger = logger;
    this.#create = create;
  }

  /** Throws LibraryLoadError (not found) or TensorRtError (not usable), each UNAVAILABLE with the reason. */
  static get(explicit?: string): TensorRtLibrary {
    if (TensorRtLibrary.#instance) return TensorRtLibrary.#instance;
    const { lib, path, version } = open(explicit);
    if (version.major !== TRT_MAJOR) {
      throw new TensorRtError(
        `TensorRT ${version.text} at ${path} (getInferLibVersion() = ${version.number}) is not supported: Nereid reaches ` +
          `TensorRT's C++ interface through virtual-table slots taken from the TensorRT ${TRT_MAJOR} headers ` +
          `(${TRT_HEADER_RELEASE}), and other major versions lay them out differently; install TensorRT ${TRT_MAJOR}.x`,
        { call: "getInferLibVersion", code: "UNAVAILABLE" },
      );
    }
    let create: CreateRuntime;
    try {
      create = lib.func(ENTRY_POINTS.createInferRuntime_INTERNAL);
    } catch (err) {
      throw new TensorRtError(`${path} does not export createInferRuntime_INTERNAL (${(err as Error).message})`, {
        call: "createInferRuntime_INTERNAL",
        code: "UNAVAILABLE",
      });
    }
    TensorRtLibrary.#instance = new TensorRtLibrary(path, version, TrtLogger.get(lib), create);
    return TensorRtLibrary.#instance;
  }

  /** A new IRuntime, limited to the calling thread. The caller owns it (close()). */
  createRuntime(): TrtRuntime {
    const { value: obj, errors } = this.logger.capture(() => this.#create(this.logger.address, this.version.number));
    if (!obj) throw TensorRtError.failed("createInferRuntime", errors);
    return TrtRuntime.adopt(obj, this.logger);
  }
}

export { LibraryLoadError };
