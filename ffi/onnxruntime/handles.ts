/**
 * @module Owned ONNX Runtime handles: the process's OrtEnvironment (API table, OrtEnv,
 * CPU memory info), OrtMemoryInfo and OrtSessionOptions. Each wraps one native handle in
 * `#handle`, releases it exactly once with ORT's own Release function, and has a close()
 * that is safe to call twice plus [Symbol.dispose]. OrtValue is in value.ts, OrtSession
 * in session.ts.
 */
import { getKoffi, type Pointer } from "../load.ts";
import { logSettings } from "../../src/core/logger.ts";
import { bindOrtApi, ORT_ARENA_ALLOCATOR, ORT_EXECUTION_MODE, ORT_LOGGING_LEVEL, ORT_MEM_TYPE_DEFAULT, type OrtApi } from "./symbols.ts";
import { check } from "./status.ts";
import { ortLibraryCandidates } from "./library.ts";
import { disableOrtTelemetry } from "./telemetry.ts";

export interface SessionConfig {
  intraOpThreads: number;
  interOpThreads: number;
  graphOptimizationLevel: number;
  allowSpinning: boolean;
  memArena: boolean;
  /** ORT_PARALLEL execution (operators across branches at once); sequential when absent. */
  parallelExecution?: boolean;
  /** Memory-pattern planning; ORT's default (on) when absent. */
  memPattern?: boolean;
  /** Extra ORT session config entries (AddSessionConfigEntry), e.g. session.disable_prepacking. */
  entries?: Record<string, string>;
  /** Execution providers to append, in priority order (ORT falls back to the CPU provider). */
  providers?: ExecutionProvider[];
}

/** An execution provider and its provider options (ORT's key/value names). */
export interface ExecutionProvider {
  name: "TensorRT" | "CUDA" | "OpenVINO";
  options: Record<string, string>;
}

let environment: OrtEnvironment | undefined;
/** A preload() whose CreateEnv has not returned yet: the API it bound, and its end. */
let preloading: { api: OrtApi; done: Promise<void> } | undefined;

/** ORT's logging level, as Triton picks it (see OrtEnvironment). */
function envLogLevel(): number {
  const log = logSettings();
  return log.verbose > 0 ? ORT_LOGGING_LEVEL.VERBOSE : log.warning ? ORT_LOGGING_LEVEL.WARNING : ORT_LOGGING_LEVEL.ERROR;
}

/**
 * The bound API and the one OrtEnv of the process, which lives until the process ends
 * (sessions must not outlive their env), as Triton's OnnxLoader does. ORT logs to stderr
 * through its own sink, at the level Triton picks (VERBOSE with --log-verbose, WARNING
 * while warnings are on, else ERROR). A logging callback into JS is not used: ORT calls
 * it from its own threads, also while the JS thread waits in a synchronous Run, which
 * would deadlock.
 */
export class OrtEnvironment {
  readonly api: OrtApi;
  /** ORT's default CPU allocator: owned by ORT, never released. */
  readonly allocator: Pointer;
  readonly cpuMemory: OrtMemoryInfo;
  readonly #handle: Pointer;

  /** With `created`, an OrtEnv that CreateEnv already returned (preload()): this object owns that reference. */
  private constructor(api: OrtApi, created?: Pointer) {
    this.api = api;
    if (created) {
      this.#handle = created;
    } else {
      const env = new BigUint64Array(1);
      check(api, api.CreateEnv(envLogLevel(), "nereid", env), "CreateEnv");
      this.#handle = env[0] || null;
    }
    try {
      const alloc: [Pointer] = [null];
      check(api, api.GetAllocatorWithDefaultOptions(alloc), "GetAllocatorWithDefaultOptions");
      this.allocator = alloc[0];
      this.cpuMemory = OrtMemoryInfo.cpu(api);
    } catch (err) {
      api.ReleaseEnv(this.#handle);
      throw err;
    }
  }

  /** The process's environment; the first call (or preload()) decides which library is loaded. */
  static get(explicitLibrary?: string): OrtEnvironment {
    disableOrtTelemetry();
    environment ??= new OrtEnvironment(preloading?.api ?? bindOrtApi(ortLibraryCandidates(explicitLibrary)));
    return environment;
  }

  /** The process's environment if get() or a preload has made it; never makes one. */
  static existing(): OrtEnvironment | undefined {
    return environment;
  }

  /**
   * Starts the process's environment ahead of its first use (#30): the library is opened
   * and bound here, and CreateEnv (ORT's platform and logging set-up, 13-18 ms on the 2-core
   * VM) runs on koffi's pool thread while this thread goes on. ORT keeps one OrtEnv per
   * process and counts its references: a get() that comes first waits in its own CreateEnv
   * for this one and takes a second reference to the same OrtEnv, and this one's is then
   * released. Throws LibraryLoadError as get() would; a no-op once either has run. The
   * promise settles when the pool thread's CreateEnv has returned (a failure there is left
   * for get() to report).
   */
  static preload(explicitLibrary?: string): Promise<void> {
    if (environment || preloading) return preloading?.done ?? Promise.resolve();
    disableOrtTelemetry();
    const api = bindOrtApi(ortLibraryCandidates(explicitLibrary));
    // A pointer ORT writes from the pool thread: kept out of the JS heap's movable memory.
    const out = new BigUint64Array(new ArrayBuffer(8));
    let settle!: () => void;
    const mine = { api, done: new Promise<void>((resolve) => (settle = resolve)) };
    preloading = mine;
    api.CreateEnv.async(envLogLevel(), "nereid", out, (err: unknown, status: Pointer) => {
      const handle = out[0] || null;
      try {
        if (err || status) {
          if (status) api.ReleaseStatus(status);
        } else if (handle && environment) {
          api.ReleaseEnv(handle);
        } else if (handle) {
          try {
            environment = new OrtEnvironment(api, handle);
          } catch {
            // The constructor released the reference; get() reports the failure when it meets it.
          }
        }
      } finally {
        // Whatever a release threw, get() no longer waits on this preload.
        if (preloading === mine) preloading = undefined;
        settle();
      }
    });
    return mine.done;
  }

  get handle(): Pointer {
    return this.#handle;
  }

  get version(): string {
    return this.api.version;
  }

  availableProviders(): string[] {
    const out: [Pointer] = [null];
    const count: [number] = [0];
    check(this.api, this.api.GetAvailableProviders(out, count), "GetAvailableProviders");
    const names = getKoffi().decode(out[0], "const char *", count[0]) as string[];
    check(this.api, this.api.ReleaseAvailableProviders(out[0], count[0]), "ReleaseAvailableProviders");
    return names;
  }
}

export class OrtMemoryInfo {
  readonly #api: OrtApi;
  #handle: Pointer;

  private constructor(api: OrtApi, handle: Pointer) {
    this.#api = api;
    this.#handle = handle;
  }

  /** CPU memory of the arena allocator: how JS buffers handed to ORT are described. */
  static cpu(api: OrtApi): OrtMemoryInfo {
    const out: [Pointer] = [null];
    check(api, api.CreateCpuMemoryInfo(ORT_ARENA_ALLOCATOR, ORT_MEM_TYPE_DEFAULT, out), "CreateCpuMemoryInfo");
    return new OrtMemoryInfo(api, out[0]);
  }

  get handle(): Pointer {
    return this.#handle;
  }

  close(): void {
    if (this.#handle) this.#api.ReleaseMemoryInfo(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

export class OrtSessionOptions {
  readonly #api: OrtApi;
  #handle: Pointer;

  constructor(api: OrtApi, config: SessionConfig) {
    this.#api = api;
    const out: [Pointer] = [null];
    check(api, api.CreateSessionOptions(out), "CreateSessionOptions");
    this.#handle = out[0];
    const h = this.#handle;
    try {
      check(api, api.SetIntraOpNumThreads(h, config.intraOpThreads), "SetIntraOpNumThreads");
      check(api, api.SetInterOpNumThreads(h, config.interOpThreads), "SetInterOpNumThreads");
      check(api, api.SetSessionGraphOptimizationLevel(h, config.graphOptimizationLevel), "SetSessionGraphOptimizationLevel");
      const spin = config.allowSpinning ? "1" : "0";
      check(api, api.AddSessionConfigEntry(h, "session.intra_op.allow_spinning", spin), "AddSessionConfigEntry");
      check(api, api.AddSessionConfigEntry(h, "session.inter_op.allow_spinning", spin), "AddSessionConfigEntry");
      check(api, config.memArena ? api.EnableCpuMemArena(h) : api.DisableCpuMemArena(h), "CpuMemArena");
      if (config.parallelExecution) check(api, api.SetSessionExecutionMode(h, ORT_EXECUTION_MODE.PARALLEL), "SetSessionExecutionMode");
      if (config.memPattern !== undefined) check(api, config.memPattern ? api.EnableMemPattern(h) : api.DisableMemPattern(h), "MemPattern");
      for (const [key, value] of Object.entries(config.entries ?? {})) {
        check(api, api.AddSessionConfigEntry(h, key, value), `AddSessionConfigEntry(${key})`);
      }
      for (const p of config.providers ?? []) appendProvider(api, h, p);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  get handle(): Pointer {
    return this.#handle;
  }

  close(): void {
    if (this.#handle) this.#api.ReleaseSessionOptions(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Appends one execution provider: TensorRT and CUDA through their V2 option objects
 * (created, updated with the key/value options, released after the append), others
 * through the generic SessionOptionsAppendExecutionProvider. A build without the
 * provider answers with ORT's own "not enabled in this build" error.
 */
function appendProvider(api: OrtApi, options: Pointer, p: ExecutionProvider): void {
  const keys = Object.keys(p.options);
  const values = keys.map((k) => p.options[k]!);
  if (p.name === "OpenVINO") {
    check(api, api.SessionOptionsAppendExecutionProvider(options, p.name, keys, values, keys.length), "SessionOptionsAppendExecutionProvider(OpenVINO)");
    return;
  }
  const trt = p.name === "TensorRT";
  const out: [Pointer] = [null];
  check(api, trt ? api.CreateTensorRTProviderOptions(out) : api.CreateCUDAProviderOptions(out), `Create${p.name}ProviderOptions`);
  const providerOptions = out[0];
  try {
    if (keys.length > 0) {
      check(
        api,
        trt
          ? api.UpdateTensorRTProviderOptions(providerOptions, keys, values, keys.length)
          : api.UpdateCUDAProviderOptions(providerOptions, keys, values, keys.length),
        `Update${p.name}ProviderOptions`,
      );
    }
    check(
      api,
      trt
        ? api.SessionOptionsAppendExecutionProvider_TensorRT_V2(options, providerOptions)
        : api.SessionOptionsAppendExecutionProvider_CUDA_V2(options, providerOptions),
      `SessionOptionsAppendExecutionProvider_${p.name}_V2`,
    );
  } finally {
    if (trt) api.ReleaseTensorRTProviderOptions(providerOptions);
    else api.ReleaseCUDAProviderOptions(providerOptions);
  }
}
