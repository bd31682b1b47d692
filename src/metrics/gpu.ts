/**
 * @module GPU metrics through NVML, sampled every --metrics-interval-ms for
 * nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes,
 * nv_gpu_power_usage and nv_gpu_power_limit (label gpu_uuid). Without NVML (no GPU,
 * no driver) the sampler reports why and the families stay empty.
 */
import { Nvml, type GpuSample } from "../../ffi/nvml/nvml.ts";

export class GpuSampler {
  samples: GpuSample[] = [];
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
    this.#timer = setInterval(() => (this.samples = this.#nvml!.sample()), Math.max(intervalMs, 100));
    this.#timer.unref();
  }

  close(): void {
    clearInterval(this.#timer);
    this.#nvml?.close();
  }
}
