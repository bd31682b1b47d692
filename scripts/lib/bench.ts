/**
 * Shared pieces of the benchmark scripts: the results heading (date and machine),
 * waiting for a server to be ready, and running wrk with its latency percentiles.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";

/** "## <date>: <CPU>, <n> cores, <GiB> GiB, <platform-arch>, Bun <version>" */
export function machineHeading(): string {
  return `## ${new Date().toISOString().slice(0, 10)}: ${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform}-${process.arch}, Bun ${Bun.version}`;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `url` until it answers 200 (to a GET, or to `method` with `body`). */
export async function waitReady(url: string, timeoutMs = 20_000, method = "GET", body?: string, intervalMs = 10): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      if ((await fetch(url, { method, body })).status === 200) return;
    } catch {}
    await sleep(intervalMs);
  }
  throw new Error(`not ready: ${url}`);
}

export interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
}

/** CPU time used so far (user + system, in 1/100 s ticks) and resident memory of a process. */
export function procStat(pid: number): { cpuTicks: number; rssKiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
  return { cpuTicks, rssKiB };
}

function parseMs(s: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(s);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
}

/**
 * Runs wrk with --latency; percentiles come from the latency-distribution lines. `threads`
 * defaults to 1 at c=1 and 2 otherwise; `cpus` pins wrk with taskset (e.g. "1"); `timeoutSecs`
 * replaces wrk's 2 s request timeout (a timed-out request counts as an error).
 */
export function wrk(url: string, c: number, seconds: number, script?: string, opts: { threads?: number; cpus?: string; timeoutSecs?: number } = {}): WrkResult {
  const threads = opts.threads ?? (c === 1 ? 1 : 2);
  const timeout = opts.timeoutSecs === undefined ? [] : ["--timeout", `${opts.timeoutSecs}s`];
  const args = ["-t", String(threads), "-c", String(c), "-d", `${seconds}s`, "--latency", ...timeout, ...(script ? ["-s", script] : []), url];
  const out =
    opts.cpus === undefined
      ? spawnSync("wrk", args, { encoding: "utf8" }).stdout
      : spawnSync("taskset", ["-c", opts.cpus, "wrk", ...args], { encoding: "utf8" }).stdout;
  return {
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50: parseMs(/^\s*50%\s+(\S+)/m.exec(out)?.[1] ?? "0ms"),
    p99: parseMs(/^\s*99%\s+(\S+)/m.exec(out)?.[1] ?? "0ms"),
    errors: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors:.*timeout (\d+)/.exec(out)?.[1] ?? 0),
  };
}

/**
 * CPU time (user + system, in 1/100 s ticks) of each thread of a process now alive, summed
 * by thread name (/proc/<pid>/task/<tid>/comm): e.g. the event loop ("nereid"), Bun's pool
 * threads (koffi's async calls, and the ONNX Runtime threads they started), JIT and GC.
 */
export function threadCpuTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      out.set(name, (out.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** CPU time (user + system, in 1/100 s ticks) of a process and all its descendants now alive. */
export function treeCpuTicks(pid: number): number {
  const children = new Map<number, number[]>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]));
  }
  let total = 0;
  for (const todo = [pid]; todo.length > 0; ) {
    const p = todo.pop()!;
    total += ticks.get(p) ?? 0;
    todo.push(...(children.get(p) ?? []));
  }
  return total;
}

/** CPU time (user + system, in 1/100 s ticks) of one thread of a process: the main thread by default. */
export function threadTicks(pid: number, tid = pid): number {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * Runs h2load for `seconds`, posting the gRPC frame in `bodyFile` to `url` (a gRPC method's
 * path) with c streams: on min(c, 8) connections, the rest as concurrent streams on them.
 */
export function h2load(url: string, bodyFile: string, c: number, seconds: number): { requests: number; failed: number } {
  const connections = Math.min(c, 8);
  const args = ["-D", String(seconds), "-c", String(connections), "-m", String(Math.ceil(c / connections)), "-t", "1", "-d", bodyFile];
  args.push("-H", "content-type: application/grpc", "-H", "te: trailers", url);
  const out = spawnSync("h2load", args, { encoding: "utf8" }).stdout;
  return {
    requests: Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(out)?.[1] ?? 0),
    failed: Number(/(\d+) failed/.exec(out)?.[1] ?? 0) + Number(/(\d+) errored/.exec(out)?.[1] ?? 0),
  };
}

/** Writes a wrk Lua script that POSTs the file `bodyFile` as JSON; returns the script's path. */
export function wrkPostScript(bodyFile: string): string {
  const script = `${bodyFile}.lua`;
  writeFileSync(
    script,
    `wrk.method = "POST"\nlocal f = io.open("${bodyFile}", "rb"); wrk.body = f:read("*a"); f:close()\nwrk.headers["Content-Type"] = "application/json"\n`,
  );
  return script;
}

/**
 * `binary` serving `repo` over HTTP on `httpPort` and gRPC on `grpcPort`, both frontends on
 * `threads` threads, without metrics or info logs (its output ignored); ready once `waitReady`
 * says so.
 */
export function spawnThreadedServer(binary: string, repo: string, httpPort: number, grpcPort: number, threads: number, extra: string[] = []): ChildProcess {
  return spawn(
    binary,
    [
      ...extra,
      `--model-repository=${repo}`,
      `--http-port=${httpPort}`,
      `--grpc-port=${grpcPort}`,
      "--allow-metrics=false",
      "--log-info=false",
      `--http-thread-count=${threads}`,
      `--grpc-infer-thread-count=${threads}`,
    ],
    { stdio: "ignore" },
  );
}
