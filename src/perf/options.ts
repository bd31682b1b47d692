/**
 * @module `nereid perf`'s command line, with perf_analyzer's flag names and defaults:
 * -m, -x, -u, -i, -b, -p, -s, -f, -v, --concurrency-range, --request-rate-range,
 * --percentile, --shape, --input-data, --max-trials, --verbose-csv,
 * --measurement-interval, --stability-percentage, --latency-report-file; sequences
 * (--sequence-length, --sequence-length-variation, --sequence-id-range,
 * --num-of-sequences); -H, --async, --streaming, --shared-memory;
 * --collect-metrics, --metrics-url, --metrics-interval.
 */

export interface Range {
  start: number;
  end: number;
  step: number;
}

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
  sequenceLength: number;
  /** Percent. */
  sequenceLengthVariation: number;
  sequenceIdStart: number;
  /** How many ids from sequenceIdStart. */
  sequenceIdRange: number;
  /** Sequences kept going at once in request-rate mode. */
  numOfSequences: number;
  /** -H: extra headers, in order. */
  headers: [string, string][];
  /** --async: accepted; perf's requests are always asynchronous (one event loop). */
  async: boolean;
  streaming: boolean;
  sharedMemory: "none" | "system";
  collectMetrics: boolean;
  metricsUrl: string;
  metricsIntervalMs: number;
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
  --input-data random|zero|<file.json>|<dir>  input values (default random); a JSON file in
                                      perf_analyzer's format (arrays, {"content", "shape"}, {"b64"}),
                                      or a directory with one file per input, named after it
  -f, --latency-report-file <file.csv>  write the results as CSV
  --verbose-csv                       add Avg latency, request/response, response wait to the CSV
  --sequence-length <n>               requests per sequence, for sequence models (default 20)
  --sequence-length-variation <pct>   vary each sequence's length by up to this percentage (default 20)
  --sequence-id-range <start>[:<end>] sequence ids start to end-1, in turn (default 1, 2^32 ids)
  --num-of-sequences <n>              sequences at once in request-rate mode (default 4)
  -H <name:value>                     an extra HTTP header (gRPC metadata) on every request (repeatable)
  --async                             accepted: requests are always sent asynchronously here
  --streaming                         send over one gRPC ModelStreamInfer stream (decoupled models; needs -i grpc)
  --shared-memory none|system         inputs through system shared memory (server: --allow-client-shm=true)
  --collect-metrics                   scrape the server's metrics during each measurement
  --metrics-url <url>                 where (default localhost:8002/metrics)
  --metrics-interval <ms>             how often (default 1000)
  -v                                  print every measurement window`;

function int(flag: string, v: string, min = 1): number {
  if (!/^[0-9]+$/.test(v) || Number(v) < min) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected an integer >= ${min}`);
  return Number(v);
}

function range(flag: string, v: string, integer: boolean): Range {
  const parts = v.split(":");
  const num = (s: string) => {
    const n = Number(s);
    if (s === "" || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
      throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected <start>[:<end>[:<step>]] with ${integer ? "integers" : "numbers"} > 0`);
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
    sequenceLength: 20,
    sequenceLengthVariation: 20,
    sequenceIdStart: 1,
    sequenceIdRange: 2 ** 32,
    numOfSequences: 4,
    headers: [],
    async: false,
    streaming: false,
    sharedMemory: "none",
    collectMetrics: false,
    metricsUrl: "localhost:8002/metrics",
    metricsIntervalMs: 1000,
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
      case "-m":
        o.model = value();
        break;
      case "-x":
        o.version = value();
        break;
      case "-u":
        o.url = value();
        break;
      case "-i": {
        const v = value().toLowerCase();
        if (v !== "http" && v !== "grpc") throw new PerfUsageError(`invalid value '${v}' for -i: expected http or grpc`);
        o.protocol = v;
        break;
      }
      case "-b":
        o.batchSize = int("-b", value());
        break;
      case "-p":
      case "--measurement-interval":
        o.measurementIntervalMs = int(flag, value(), 10);
        break;
      case "-s":
      case "--stability-percentage": {
        const v = value();
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected a percentage > 0`);
        o.stabilityPercentage = n;
        break;
      }
      case "--max-trials":
        o.maxTrials = int(flag, value(), 3);
        break;
      case "--concurrency-range":
        o.concurrency = range(flag, value(), true);
        break;
      case "--request-rate-range":
        o.requestRate = range(flag, value(), false);
        break;
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
      case "--input-data":
        o.inputData = value();
        break;
      case "-f":
      case "--latency-report-file":
        o.csvFile = value();
        break;
      case "--sequence-length":
        o.sequenceLength = int(flag, value());
        break;
      case "--sequence-length-variation": {
        const v = value();
        const n = Number(v);
        if (v === "" || !Number.isFinite(n) || n < 0) throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected a percentage >= 0`);
        o.sequenceLengthVariation = n;
        break;
      }
      case "--sequence-id-range": {
        const v = value();
        const m = /^([0-9]+)(?::([0-9]+))?$/.exec(v);
        const start = Number(m?.[1]);
        const end = m?.[2] === undefined ? undefined : Number(m[2]);
        if (!m || start < 1 || (end !== undefined && end <= start))
          throw new PerfUsageError(`invalid value '${v}' for ${flag}: expected <start>[:<end>] with 0 < start < end`);
        o.sequenceIdStart = start;
        o.sequenceIdRange = end === undefined ? 2 ** 32 : end - start;
        break;
      }
      case "--num-of-sequences":
        o.numOfSequences = int(flag, value());
        break;
      case "-H": {
        const v = value();
        const colon = v.indexOf(":");
        const name = colon > 0 ? v.slice(0, colon).trim() : "";
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(v)) throw new PerfUsageError(`invalid value '${v}' for -H: expected <name>:<value>`);
        o.headers.push([name, v.slice(colon + 1).trim()]);
        break;
      }
      case "--async":
      case "-a":
        o.async = true;
        break;
      case "--streaming":
        o.streaming = true;
        break;
      case "--shared-memory": {
        const v = value();
        if (v === "cuda") throw new PerfUsageError("--shared-memory cuda is not supported by nereid perf: use system or none");
        if (v !== "none" && v !== "system") throw new PerfUsageError(`invalid value '${v}' for --shared-memory: expected none or system`);
        o.sharedMemory = v;
        break;
      }
      case "--collect-metrics":
        o.collectMetrics = true;
        break;
      case "--metrics-url":
        o.metricsUrl = value();
        break;
      case "--metrics-interval":
        o.metricsIntervalMs = int(flag, value());
        break;
      case "--verbose-csv":
        o.verboseCsv = true;
        break;
      case "-v":
      case "--verbose":
        o.verbose = true;
        break;
      default:
        throw new PerfUsageError(`unknown option '${arg}'`);
    }
  }
  if (!o.model) throw new PerfUsageError("-m <model> is required");
  if (!o.url) o.url = o.protocol === "http" ? "localhost:8000" : "localhost:8001";
  if (o.streaming && o.protocol !== "grpc") throw new PerfUsageError("--streaming needs -i grpc");
  return o;
}
