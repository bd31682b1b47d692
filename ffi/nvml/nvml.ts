/**
 * @module NVML (libnvidia-ml.so.1, nvml.h) for Triton's GPU metrics: per device the
 * UUID, utilization, memory and power. Declared from nvml.h with its versioned symbols
 * (nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2). Nvml is a
 * process-wide singleton: initialised once, shut down by close().
 */
import { getKoffi, loadLibrary, type KoffiFunc } from "../load.ts";
import { NativeError } from "../errors.ts";

export const NVML_SUCCESS = 0;
/** nvml.h: NVML_DEVICE_UUID_V2_BUFFER_SIZE. */
export const NVML_UUID_BUFFER = 96;

type Ret = number;
interface Api {
  nvmlInit_v2: KoffiFunc<() => Ret>;
  nvmlShutdown: KoffiFunc<() => Ret>;
  nvmlErrorString: KoffiFunc<(r: number) => string>;
  nvmlDeviceGetCount_v2: KoffiFunc<(n: unknown[]) => Ret>;
  nvmlDeviceGetHandleByIndex_v2: KoffiFunc<(i: number, h: unknown[]) => Ret>;
  nvmlDeviceGetUUID: KoffiFunc<(h: unknown, buf: Buffer, len: number) => Ret>;
  nvmlDeviceGetUtilizationRates: KoffiFunc<(h: unknown, u: { gpu: number; memory: number }) => Ret>;
  nvmlDeviceGetMemoryInfo: KoffiFunc<(h: unknown, m: { total: number; free: number; used: number }) => Ret>;
  nvmlDeviceGetPowerUsage: KoffiFunc<(h: unknown, mw: unknown[]) => Ret>;
  nvmlDeviceGetEnforcedPowerLimit: KoffiFunc<(h: unknown, mw: unknown[]) => Ret>;
  nvmlDeviceGetTotalEnergyConsumption: KoffiFunc<(h: unknown, mj: unknown[]) => Ret>;
}

export interface GpuSample {
  uuid: string;
  /** 0..1 */
  utilization: number;
  memoryTotalBytes: number;
  memoryUsedBytes: number;
  /** Watts; undefined where the device does not report power. */
  powerUsageW?: number;
  powerLimitW?: number;
  /** Millijoules used since the driver was loaded (Volta and newer); undefined elsewhere. */
  energyMj?: number;
}

let types: { util: unknown; mem: unknown } | undefined;

/** nvmlUtilization_t { unsigned int gpu, memory; } and nvmlMemory_t { unsigned long long total, free, used; } */
export function nvmlTypes(): { util: unknown; mem: unknown } {
  const k = getKoffi();
  types ??= {
    util: k.struct("nvmlUtilization_t", { gpu: "uint32_t", memory: "uint32_t" }),
    mem: k.struct("nvmlMemory_t", { total: "uint64_t", free: "uint64_t", used: "uint64_t" }),
  };
  return types;
}

export class Nvml {
  static #instance: Nvml | undefined;
  readonly #api: Api;
  readonly #handles: unknown[];
  #open = true;

  private constructor(api: Api, handles: unknown[]) {
    this.#api = api;
    this.#handles = handles;
  }

  /** Loads and initialises NVML; throws with the reason when it is absent or fails. */
  static get(library?: string): Nvml {
    if (Nvml.#instance) return Nvml.#instance;
    const { lib } = loadLibrary("NVML (libnvidia-ml.so.1)", library ? [library] : ["libnvidia-ml.so.1"]);
    nvmlTypes();
    const api = {
      nvmlInit_v2: lib.func("int nvmlInit_v2()"),
      nvmlShutdown: lib.func("int nvmlShutdown()"),
      nvmlErrorString: lib.func("const char *nvmlErrorString(int result)"),
      nvmlDeviceGetCount_v2: lib.func("int nvmlDeviceGetCount_v2(_Out_ unsigned int *count)"),
      nvmlDeviceGetHandleByIndex_v2: lib.func("int nvmlDeviceGetHandleByIndex_v2(unsigned int index, _Out_ void **device)"),
      nvmlDeviceGetUUID: lib.func("int nvmlDeviceGetUUID(void *device, void *uuid, unsigned int length)"),
      nvmlDeviceGetUtilizationRates: lib.func("int nvmlDeviceGetUtilizationRates(void *device, _Out_ nvmlUtilization_t *utilization)"),
      nvmlDeviceGetMemoryInfo: lib.func("int nvmlDeviceGetMemoryInfo(void *device, _Out_ nvmlMemory_t *memory)"),
      nvmlDeviceGetPowerUsage: lib.func("int nvmlDeviceGetPowerUsage(void *device, _Out_ unsigned int *power)"),
      nvmlDeviceGetEnforcedPowerLimit: lib.func("int nvmlDeviceGetEnforcedPowerLimit(void *device, _Out_ unsigned int *limit)"),
      nvmlDeviceGetTotalEnergyConsumption: lib.func("int nvmlDeviceGetTotalEnergyConsumption(void *device, _Out_ unsigned long long *energy)"),
    } as unknown as Api;
    const check = (call: string, r: Ret) => {
      if (r !== NVML_SUCCESS) throw new NativeError("INTERNAL", "NVML", `NVML: ${call} failed: ${api.nvmlErrorString(r)} (${r})`, { call });
    };
    check("nvmlInit_v2", api.nvmlInit_v2());
    const n: unknown[] = [0];
    check("nvmlDeviceGetCount_v2", api.nvmlDeviceGetCount_v2(n));
    const handles = Array.from({ length: Number(n[0]) }, (_, i) => {
      const h: unknown[] = [null];
      check("nvmlDeviceGetHandleByIndex_v2", api.nvmlDeviceGetHandleByIndex_v2(i, h));
      return h[0];
    });
    Nvml.#instance = new Nvml(api, handles);
    return Nvml.#instance;
  }

  get deviceCount(): number {
    return this.#handles.length;
  }

  /** One reading per device; a quantity the device does not report is left out. */
  sample(): GpuSample[] {
    if (!this.#open) return [];
    const a = this.#api;
    return this.#handles.map((h) => {
      const uuid = Buffer.alloc(NVML_UUID_BUFFER);
      a.nvmlDeviceGetUUID(h, uuid, uuid.length);
      const util = { gpu: 0, memory: 0 };
      const utilOk = a.nvmlDeviceGetUtilizationRates(h, util) === NVML_SUCCESS;
      const mem = { total: 0, free: 0, used: 0 };
      a.nvmlDeviceGetMemoryInfo(h, mem);
      const power: unknown[] = [0];
      const limit: unknown[] = [0];
      const s: GpuSample = {
        uuid: uuid.subarray(0, uuid.indexOf(0)).toString(),
        utilization: utilOk ? util.gpu / 100 : 0,
        memoryTotalBytes: Number(mem.total),
        memoryUsedBytes: Number(mem.used),
      };
      if (a.nvmlDeviceGetPowerUsage(h, power) === NVML_SUCCESS) s.powerUsageW = Number(power[0]) / 1000;
      if (a.nvmlDeviceGetEnforcedPowerLimit(h, limit) === NVML_SUCCESS) s.powerLimitW = Number(limit[0]) / 1000;
      const energy: unknown[] = [0];
      if (a.nvmlDeviceGetTotalEnergyConsumption(h, energy) === NVML_SUCCESS) s.energyMj = Number(energy[0]);
      return s;
    });
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#api.nvmlShutdown();
    Nvml.#instance = undefined;
  }
}
