/**
 * @module CPU utilization and memory from /proc (Linux), sampled every
 * --metrics-interval-ms for nv_cpu_utilization and nv_cpu_memory_*.
 */
import { readFileSync } from "node:fs";

function cpuTimes(): { idle: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  } catch {
    return undefined;
  }
}

export class CpuSampler {
  utilization = 0;
  #last = cpuTimes();
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(intervalMs: number) {
    this.#timer = setInterval(() => this.#sample(), Math.max(intervalMs, 100));
    this.#timer.unref();
  }

  #sample(): void {
    const now = cpuTimes();
    if (now && this.#last && now.total > this.#last.total) {
      this.utilization = 1 - (now.idle - this.#last.idle) / (now.total - this.#last.total);
    }
    this.#last = now;
  }

  memory(): { total: number; used: number } {
    try {
      const info = readFileSync("/proc/meminfo", "utf8");
      const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(info)?.[1] ?? 0) * 1024;
      const total = kib("MemTotal");
      return { total, used: total - kib("MemAvailable") };
    } catch {
      return { total: 0, used: 0 };
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
