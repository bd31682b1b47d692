/**
 * @module GPU metrics through NVML, sampled every --metrics-interval-ms for
 * nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes,
 * nv_gpu_power_usage, nv_gpu_power_limit and nv_energy_consumption (label gpu_uuid). Without NVML (no GPU,
 * no driver) the sampler reports why and the families stay empty.
 */
import { Nvml, type GpuSample } from "../../ffi/nvml/nvml.ts";

export class GpuSampler {
  samples: GpuSample[] = [];
  /** Each GPU's first energy reading, in mJ: nv_energy_consumption counts from the server's start, as Triton's does. */
  readonly #energyStart = new Map<string, number>();
  readonly unavailable: string | undefined;
  readonly #nvml: Nvml | undefined;
  readonly #timer: ReturnType<typeof setInterval> | undefined;

  constructor(intervalMs: number) {
    try {
      this.#nvml = Nvml.get(process.env.NEREID_NVML_LIBRARY);
    } catch (err) {
      this.unavailable = (err as Error).message;
      return;
    }
    this.samples = this.#nvml.sample();
    for (const s of this.samples) if (s.energyMj !== undefined) this.#energyStart.set(s.uuid, s.energyMj);
    this.#timer = setInterval(() => (this.samples = this.#nvml!.sample()), Math.max(intervalMs, 100));
    this.#timer.unref();
  }

  /** Joules `s`'s GPU has used since the server started; undefined where it does not report energy. */
  energySinceStartJ(s: GpuSample): number | undefined {
    if (s.energyMj === undefined) return undefined;
    if (!this.#energyStart.has(s.uuid)) this.#energyStart.set(s.uuid, s.energyMj);
    return (s.energyMj - this.#energyStart.get(s.uuid)!) / 1000;
  }

  close(): void {
    clearInterval(this.#timer);
    this.#nvml?.close();
  }
}
