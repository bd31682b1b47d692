/**
 * @module `nereid health [--url=<base>]`: the container image's HEALTHCHECK, for images
 * with no curl or shell. Asks a running server's `/v2/health/live` and
 * `/v2/health/ready` and exits 0 only when both answer 200. Without --url the base is the
 * HTTP endpoint of the server this container runs: the Nereid process that is PID 1, or
 * else the one child of PID 1 running this same executable (behind `--init`, or a systemd
 * service), its command line parsed as the server parsed it (so `--http-port=9000` is
 * followed); http://127.0.0.1:8000 when there is none (not Linux, no such process).
 */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { parseArgs, type ParsedArgs } from "./options.ts";

export const DEFAULT_HEALTH_URL = "http://127.0.0.1:8000";

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return undefined;
  }
};
const exe = (proc: string, pid: string): string | undefined => {
  try {
    return readlinkSync(join(proc, pid, "exe"));
  } catch {
    return undefined;
  }
};
const nulSeparated = (text: string): string[] => (text.endsWith("\0") ? text.slice(0, -1) : text).split("\0");

/** The HTTP base URL a serving command line listens on, or an error for one that serves no HTTP. */
function serverUrl(proc: string, pid: string): string | Error | undefined {
  const cmdline = read(join(proc, pid, "cmdline"));
  if (!cmdline) return undefined;
  const env: Record<string, string> = {};
  for (const entry of nulSeparated(read(join(proc, pid, "environ")) ?? "")) {
    const eq = entry.indexOf("=");
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(nulSeparated(cmdline).slice(1), env);
  } catch {
    return undefined;
  }
  if (parsed.kind !== "run") return undefined;
  const o = parsed.options;
  if (!o.allowHttp) return new Error(`the server (pid ${pid}) serves no HTTP endpoint (--allow-http=false): pass --url`);
  const any = ["", "0.0.0.0", "::", "[::]"].includes(o.httpAddress);
  const host = any ? "127.0.0.1" : o.httpAddress.includes(":") && !o.httpAddress.startsWith("[") ? `[${o.httpAddress}]` : o.httpAddress;
  return `http://${host}:${o.httpPort}`;
}

/**
 * The base URL of the server beside this process (see the module comment), read from
 * `proc` (/proc); undefined when there is none. Throws when it is ambiguous (two such
 * children of PID 1) or serves no HTTP.
 */
export function localServerUrl(proc = "/proc", self = exe(proc, "self")): string | undefined {
  if (!self) return undefined;
  const pick = (pid: string) => {
    const url = serverUrl(proc, pid);
    if (url instanceof Error) throw url;
    return url;
  };
  if (exe(proc, "1") === self) return pick("1");
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((p) => /^\d+$/.test(p) && p !== "1");
  } catch {
    return undefined;
  }
  const found = new Map<string, string>();
  for (const pid of pids) {
    const stat = read(join(proc, pid, "stat"));
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const ppid = stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
    if (ppid !== "1" || exe(proc, pid) !== self) continue;
    const url = pick(pid);
    if (url) found.set(pid, url);
  }
  if (found.size > 1) throw new Error(`several servers run beside this one (pids ${[...found.keys()].join(", ")}): pass --url`);
  return found.values().next().value;
}

export async function runHealthCheck(base: string | undefined, timeoutMs = 5000): Promise<number> {
  if (base === undefined) {
    try {
      base = localServerUrl() ?? DEFAULT_HEALTH_URL;
    } catch (err) {
      process.stdout.write(`${(err as Error).message}\n`);
      return 1;
    }
  }
  let ok = true;
  for (const route of ["/v2/health/live", "/v2/health/ready"]) {
    let line: string;
    try {
      const res = await fetch(base.replace(/\/+$/, "") + route, { signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      line = `${route} ${res.status}`;
      if (res.status !== 200) ok = false;
    } catch (err) {
      line = `${route} unreachable: ${(err as Error).message}`;
      ok = false;
    }
    process.stdout.write(line + "\n");
  }
  return ok ? 0 : 1;
}
