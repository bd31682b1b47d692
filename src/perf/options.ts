/**
 * @module `nereid perf`'s command line, with perf_analyzer's flag names and defaults:
 * -m, -x, -u, -i, -b, -p, -s, -f, -v, --concurrency-range, --request-rate-range,
 * --percentile, --shape, --input-data, --max-trials, --verbose-csv,
 * --measurement-interval, --stability-percentage.
 */

export interface Range { start: number; end: number; step: number }

export interface PerfOptions {
  model: string;
  version: string;
  protocol: "http" | "grpc";
  url: string;
  batchSize: number;
  /** Concurrency mode unless a request rate range is given. */
  concurrency: Range;
  requestRate: Range | undefined;
  measurementIntervalMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  /** Report and stabilize on this latency percentile instead of the average. */
  percentile: number | undefined;
  /** `--shape NAME:d1,d2,...`: dims (without the batch dimension) for inputs with variable dims. */
  shapes: Map<string, number[]>;
  inputData: "random" | "zero" | string;
  csvFile: string | undefined;
  verboseCsv: boolean;
  verbose: boolean;
}

export class PerfUsageError extends Error {}

export const PERF_USAGE = `Usage: nereid perf -m <model> [options]   (perf_analyzer's flags)
  -m <model>                          model to measure (required)
  -x <version>                        model version (default: latest)
  -i http|grpc                        protocol (default http)
  -u <host:port>                      server (default localhost:8000, or localhost:8001 for grpc)
  -b <n>                              batch size (default 1)
  --concurrency-range <start>[:<end>[:<step>]]   concurrent requests (default 1)
  --request-rate-range <start>[:<end>[:<step>]]  requests per second instead of a concurrency
  -p, --measurement-interval <ms>     measurement window (default 5000)
  -s, --stability-percentage <pct>    windows agree within this percentage (default 10)
  --max-trials <n>                    windows tried before giving up (default 10)
  --percentile <p>                    stabilize and report on the p-th latency percentile
  --shape <input>:<d1>,<d2>,...       dims of an input with variable dims (repeatable)
  --input-data random|zero|<file.json>  input values (default random)
  -f <file.csv>                       write the results as CSV
  --verbose-csv                       add Avg latency, request/response, response wait to the CSV
  -v                                  print every measurement window`;

function int(flag: string, v: string, min = 1): number {
  if (!/^[0-9]+$/.test(v) || Number(v) < min) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected an integer >= ${min}`);
  return Number(v);
}

function range(flag: string, v: string, integer: boolean): Range {
  const parts = v.split(":");
  const num = (s: string) => {
    const n = Number(s);
    if (s === "" || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected <start>[:<end>[:<step>]] with ${integer ? "integers" : "numbers"} > 0`);
    return n;
  };
  if (parts.length > 3) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected <start>[:<end>[:<step>]]`);
  const start = num(parts[0]!);
  const end = parts[1] !== undefined ? num(parts[1]) : start;
  const step = parts[2] !== undefined ? num(parts[2]) : 1;
  if (end < start) throw new PerfUsageError(`invalid value '${v}' for ${flag}: the end is below the start`);
  return { start, end, step };
}

/** The values a range walks through: start, start + step, ... up to end. */
export function rangeValues(r: Range): number[] {
  const out: number[] = [];
  for (let v = r.start; v <= r.end + 1e-9; v += r.step) out.push(Number(v.toFixed(6)));
  return out;
}

export function parsePerfArgs(argv: readonly string[]): PerfOptions {
  const o: PerfOptions = {
    model: "",
    version: "",
    protocol: "http",
    url: "",
    batchSize: 1,
    concurrency: { start: 1, end: 1, step: 1 },
    requestRate: undefined,
    measurementIntervalMs: 5000,
    stabilityPercentage: 10,
    maxTrials: 10,
    percentile: undefined,
    shapes: new Map(),
    inputData: "random",
    csvFile: undefined,
    verboseCsv: false,
    verbose: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      if (eq >= 0) return arg.slice(eq + 1);
      const next = argv[++i];
      if (next === undefined) throw new PerfUsageError(`option '${flag}' needs a value`);
      return next;
    };
    switch (flag) {
      case "-m": o.model = value(); break;
      case "-x": o.version = value(); break;
      case "-u": o.url = value(); break;
      case "-i": {
        const v = value().toLowerCase();
        if (v !== "http" && v !== "grpc") throw new PerfUsageError(`invalid value '${v}' for -i: expected http or grpc`);
        o.protocol = v;
        break;
      }
      case "-b": o.batchSize = int("-b", value()); break;
      case "-p": case "--measurement-interval": o.measurementIntervalMs = int(flag, value(), 10); break;
      case "-s": case "--stability-percentage": {
        const v = value();
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected a percentage > 0`);
        o.stabilityPercentage = n;
        break;
      }
      case "--max-trials": o.maxTrials = int(flag, value(), 3); break;
      case "--concurrency-range": o.concurrency = range(flag, value(), true); break;
      case "--request-rate-range": o.requestRate = range(flag, value(), false); break;
      case "--percentile": {
        const p = int(flag, value());
        if (p > 99) throw new PerfUsageError(`invalid value '${p}' for --percentile: expected 1 to 99`);
        o.percentile = p;
        break;
      }
      case "--shape": {
        const v = value();
        const m = /^(.+):([0-9]+(?:,[0-9]+)*)$/.exec(v);
        if (!m) throw new PerfUsageError(`invalid value '${v}' for --shape: expected <input>:<d1>,<d2>,...`);
        o.shapes.set(m[1]!, m[2]!.split(",").map(Number));
        break;
      }
      case "--input-data": o.inputData = value(); break;
      case "-f": o.csvFile = value(); break;
      case "--verbose-csv": o.verboseCsv = true; break;
      case "-v": case "--verbose": o.verbose = true; break;
      default:
        throw new PerfUsageError(`unknown option '${arg}'`);
    }
  }
  if (!o.model) throw new PerfUsageError("-m <model> is required");
  if (!o.url) o.url = o.protocol === "http" ? "localhost:8000" : "localhost:8001";
  return o;
}
