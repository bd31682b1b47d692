/**
 * @module The nvinfer1::ILogger handed to createInferRuntime_INTERNAL: a C++ object built
 * in native memory, one per process, kept (with its koffi callbacks) until the process
 * ends, as TensorRT requires the logger to outlive every object created through it.
 *
 * Layout (Itanium C++ ABI), in one koffi.alloc block that never moves:
 *
 *   block+0   the object: its vptr = block+24
 *   block+8   vtable[-2]: offset-to-top = 0
 *   block+16  vtable[-1]: std::type_info* for a class named nereid::TrtLogger, built on
 *             libstdc++'s __class_type_info when the library exposes it, else null
 *   block+24  vtable[0]: log(this, Severity, char const* msg)   (ILOGGER_SLOT.log)
 *   block+32  vtable[1]: complete-object destructor: does nothing
 *   block+40  vtable[2]: deleting destructor: does nothing (TensorRT never owns the logger)
 *
 * Messages go to the server log by severity, as Triton's tensorrt backend maps them:
 * INTERNAL_ERROR and ERROR → error, WARNING → warning, INFO → info, VERBOSE → verbose 1.
 * capture() also collects the errors logged while a call runs, so a failed call can say
 * why.
 *
 * Threads: TensorRT calls log() on the thread that made the API call, and the binding makes
 * every TensorRT call on the JS thread (the runtime is limited to one thread with
 * setMaxThreads(1), TensorRT's documented default), so the callback runs inline. Were
 * TensorRT to call it from another thread, koffi queues it to the JS thread and that thread
 * waits; this would deadlock only if the JS thread were meanwhile blocked in a TensorRT
 * call waiting for that same thread. The callback copies the message (koffi converts it
 * to a JS string during the call) and never throws.
 */
import { getKoffi, type KoffiLibrary, type Pointer } from "../load.ts";
import { getLogger } from "../../src/core/logger.ts";
import { ILOGGER_SLOT, SEVERITY } from "./abi.ts";
import { protoType } from "./symbols.ts";

const log = getLogger("ffi/tensorrt/logger.ts");
const POINTER_SIZE = 8;
const VTABLE_OFFSET = 3 * POINTER_SIZE;
/** The mangled name of `nereid::TrtLogger`, what std::type_info::name() returns. */
export const LOGGER_TYPE_NAME = "N6nereid9TrtLoggerE";
/** vtable for __cxxabiv1::__class_type_info (libstdc++ / libc++abi). */
const CLASS_TYPE_INFO_VTABLE = "_ZTVN10__cxxabiv117__class_type_infoE";

const LOG_PROTOTYPE = "void NereidTrtLoggerLog(void *self, int32_t severity, const char *msg)";
const DESTRUCTOR_PROTOTYPE = "void NereidTrtLoggerDestructor(void *self)";

export class TrtLogger {
  static #instance: TrtLogger | undefined;
  /** The ILogger* to pass to TensorRT. */
  readonly address: bigint;
  /** Whether vtable[-1] points at a real std::type_info. */
  readonly hasTypeInfo: boolean;
  readonly #captures: string[][] = [];
  // Native memory and callback slots, referenced for the life of the process.
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: written only, to keep the native callbacks alive
  readonly #keep: unknown[];

  private constructor(lib: KoffiLibrary) {
    const k = getKoffi();
    const onLog = k.register((_self: Pointer, severity: number, msg: string | null) => this.#log(severity, msg ?? ""), k.pointer(protoType(LOG_PROTOTYPE)));
    const noop = k.register(() => {}, k.pointer(protoType(DESTRUCTOR_PROTOTYPE)));
    const typeInfo = buildTypeInfo(lib);
    const block = k.alloc("void *", 6) as bigint;
    k.encode(block, 0, "void *", block + BigInt(VTABLE_OFFSET));
    k.encode(block, VTABLE_OFFSET - 2 * POINTER_SIZE, "int64_t", 0);
    k.encode(block, VTABLE_OFFSET - POINTER_SIZE, "void *", typeInfo?.address ?? null);
    k.encode(block, VTABLE_OFFSET + ILOGGER_SLOT.log * POINTER_SIZE, "void *", onLog);
    k.encode(block, VTABLE_OFFSET + ILOGGER_SLOT.completeDestructor * POINTER_SIZE, "void *", noop);
    k.encode(block, VTABLE_OFFSET + ILOGGER_SLOT.deletingDestructor * POINTER_SIZE, "void *", noop);
    this.address = block;
    this.hasTypeInfo = typeInfo !== undefined;
    this.#keep = [onLog, noop, block, typeInfo];
  }

  /** The process's logger; `lib` is the loaded libnvinfer (used to find libstdc++'s type_info vtable). */
  static get(lib: KoffiLibrary): TrtLogger {
    TrtLogger.#instance ??= new TrtLogger(lib);
    return TrtLogger.#instance;
  }

  /** Runs `fn` and returns its value with the ERROR / INTERNAL_ERROR messages TensorRT logged meanwhile. */
  capture<T>(fn: () => T): { value: T; errors: string[] } {
    const errors: string[] = [];
    this.#captures.push(errors);
    try {
      return { value: fn(), errors };
    } finally {
      this.#captures.pop();
    }
  }

  #log(severity: number, msg: string): void {
    try {
      switch (severity) {
        case SEVERITY.INTERNAL_ERROR:
        case SEVERITY.ERROR:
          this.#captures.at(-1)?.push(msg);
          log.error(msg);
          break;
        case SEVERITY.WARNING:
          log.warn(msg);
          break;
        case SEVERITY.INFO:
          log.info(msg);
          break;
        default:
          log.verbose(1, msg);
      }
    } catch {
      // A throw would reach TensorRT as nothing useful; the message is lost instead.
    }
  }
}

/**
 * A std::type_info for `nereid::TrtLogger` ([vptr][const char* name], the layout of
 * __cxxabiv1::__class_type_info), so typeid or dynamic_cast on the logger sees a
 * well-formed polymorphic object. Undefined when the type_info vtable cannot be found.
 */
function buildTypeInfo(lib: KoffiLibrary): { address: bigint; name: bigint } | undefined {
  const k = getKoffi();
  let vtable: bigint | null = null;
  for (const find of [() => lib.symbol(CLASS_TYPE_INFO_VTABLE), () => k.load("libstdc++.so.6").symbol(CLASS_TYPE_INFO_VTABLE)]) {
    try {
      vtable = find() as bigint | null;
      if (vtable) break;
    } catch {
      // not exported there
    }
  }
  if (!vtable) return undefined;
  const bytes = Buffer.from(LOGGER_TYPE_NAME + "\0");
  const name = k.alloc("uint8_t", bytes.length) as bigint;
  k.encode(name, 0, k.array("uint8_t", bytes.length, "Array"), Array.from(bytes));
  const address = k.alloc("void *", 2) as bigint;
  k.encode(address, 0, "void *", vtable + BigInt(2 * POINTER_SIZE));
  k.encode(address, POINTER_SIZE, "void *", name);
  return { address, name };
}
