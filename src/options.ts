/**
 * @module Every server setting, typed, with tritonserver's flag names and defaults, and
 * the command-line parser. Nothing else reads argv; environment variables are read here
 * or in ffi/ library lookup only.
 */
import { parseRestriction, type Restriction } from "./frontends/restricted.ts";
import { DEFAULT_MAX_QUEUED_BYTES } from "./core/request.ts";

export const VERSION = "0.1.0";
/** The Triton release whose protocol this server speaks, reported in server metadata. */
export const TRITON_PROTOCOL_VERSION = "2.73.0";

export type ModelControlMode = "none" | "poll" | "explicit";

export interface ServerOptions {
  modelRepositories: string[];
  modelControlMode: ModelControlMode;
  repositoryPollSecs: number;
  loadModels: string[];
  modelConfigName: string;
  disableAutoCompleteConfig: boolean;
  exitOnError: boolean;
  strictReadiness: boolean;
  exitTimeoutSecs: number;
  id: string;
  allowHttp: boolean;
  httpPort: number;
  httpAddress: string;
  httpMaxInputSize: number;
  allowGrpc: boolean;
  grpcPort: number;
  grpcAddress: string;
  grpcKeepaliveTimeMs: number;
  grpcKeepaliveTimeoutMs: number;
  grpcKeepalivePermitWithoutCalls: boolean;
  grpcHttp2MaxPingsWithoutData: number;
  grpcHttp2MinRecvPingIntervalWithoutDataMs: number;
  grpcHttp2MaxPingStrikes: number;
  /** Triton's --grpc-max-connection-age / -grace, in ms; 0: unlimited. */
  grpcMaxConnectionAgeMs: number;
  grpcMaxConnectionAgeGraceMs: number;
  /** Nereid's own: open gRPC connections beyond this are closed at once; 0: no limit. */
  grpcMaxConnections: number;
  /** Nereid's own: a connection must send the HTTP/2 client preface within this; 0: no limit. */
  grpcHandshakeTimeoutSecs: number;
  /** Nereid's own: a connection without calls for this long is closed (GOAWAY); 0: never. */
  grpcIdleTimeoutSecs: number;
  allowMetrics: boolean;
  metricsPort: number;
  metricsAddress: string;
  metricsIntervalMs: number;
  allowCpuMetrics: boolean;
  allowGpuMetrics: boolean;
  /** `--metrics-config key=value`: counter_latencies, summary_latencies, summary_quantiles. */
  metricsConfig: Record<string, string>;
  /** `--http-restricted-api` and `--grpc-restricted-protocol` groups. */
  httpRestrictedApi: Restriction[];
  grpcRestrictedProtocol: Restriction[];
  /** `--trace-config` (and the deprecated --trace-* flags), as trace-extension settings. */
  traceConfig: Record<string, string | string[]>;
  /** `--allow-client-shm`: the shared-memory extension (off by default, as in Triton since 26.04). */
  allowClientShm: boolean;
  /**
   * `--allow-model-code-overrides`: a load's file and config overrides may bring code the
   * server runs (TypeScript/JavaScript models, shared libraries, host paths in accelerator
   * parameters); refused with INVALID_ARG otherwise (Nereid's own; off by default).
   */
  allowModelCodeOverrides: boolean;
  /** `--allow-status-page`: the live status page at /nereid/status on the HTTP port (Nereid's own; off by default). */
  allowStatusPage: boolean;
  /** `--max-queued-bytes`: input bytes all unanswered client requests may hold together (0: no bound). */
  maxQueuedBytes: number;
  /** `--cache-config local,size=N` (or the deprecated --response-cache-byte-size); undefined: no cache. */
  cacheSizeBytes: number | undefined;
  /**
   * `--cache-config redis,<key>=<value>` (repeatable), Triton's redis cache keys as given,
   * with `user`/`password` filled from TRITONCACHE_REDIS_USERNAME/PASSWORD when absent;
   * undefined: no redis cache.
   */
  redisCacheConfig: Record<string, string> | undefined;
  logVerbose: number;
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logFormat: "default" | "ISO8601";
  /** backend name → key → value; "" holds global keys such as default-max-batch-size. */
  backendConfig: Record<string, Record<string, string>>;
  /** `--log-file`: log lines go to this file instead of the console ("": the console). */
  logFile: string;
  /** `--model-load-thread-count` (4): versions loading at once. */
  modelLoadThreadCount: number;
  /** `--model-load-retry-count` (0): further tries of a load that failed. */
  modelLoadRetryCount: number;
  /** `--model-namespacing` (false): same-named models in different repositories serve side by side. */
  modelNamespacing: boolean;
  /** `--rate-limit` (off) and `--rate-limit-resource <name>:<count>[:<device>]` (repeatable). */
  rateLimit: "off" | "execution_count";
  rateLimitResources: RateLimitResource[];
  /**
   * `--http-thread-count` and `--grpc-infer-thread-count`: the frontend's threads, 1 the
   * main thread, more that many worker threads (Bun only; at most MAX_FRONTEND_THREADS).
   * Unset: the cores available, at most DEFAULT_FRONTEND_THREADS (src/startup/listeners.ts).
   */
  httpThreadCount: number | undefined;
  grpcInferThreadCount: number | undefined;
  /** `--reuse-http-port` / `--reuse-grpc-port` (false): SO_REUSEPORT on the listening socket. */
  reuseHttpPort: boolean;
  reuseGrpcPort: boolean;
  /** `--http-header-forward-pattern` / `--grpc-header-forward-pattern`: headers copied into request parameters ("": none). */
  httpHeaderForwardPattern: string;
  grpcHeaderForwardPattern: string;
  /** gRPC TLS: `--grpc-use-ssl`, `--grpc-use-ssl-mutual` (preempts it), the PEM files. */
  grpcUseSsl: boolean;
  grpcUseSslMutual: boolean;
  grpcServerCert: string;
  grpcServerKey: string;
  grpcRootCert: string;
  /** `--grpc-infer-response-compression-level` (none). */
  grpcInferResponseCompressionLevel: "none" | "low" | "medium" | "high";
  /** `--allow-sagemaker` (false), `--sagemaker-port` (8080), `--sagemaker-safe-port-range <lo>-<hi>`. */
  allowSagemaker: boolean;
  sagemakerPort: number;
  sagemakerSafePortRange: [number, number] | undefined;
  /** SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, SAGEMAKER_TRITON_PING_MODE, SAGEMAKER_TRITON_INFERENCE_TYPE. */
  sagemakerModel: string;
  sagemakerPingMode: "ready" | "live";
  sagemakerInferenceType: "infer" | "generate" | "generate_stream";
  /** `--openai-port` (off unless given; Triton's OpenAI frontend listens on 9000), `--openai-address` (default: the HTTP address). */
  openaiPort: number | undefined;
  openaiAddress: string;
  /** `--allow-vertex-ai` (true iff AIP_MODE=PREDICTION), `--vertex-ai-port` (AIP_HTTP_PORT or 8080), `--vertex-ai-default-model`. */
  allowVertexAi: boolean;
  vertexAiPort: number;
  vertexAiDefaultModel: string;
  /** AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE (required with Vertex AI). */
  vertexAiPredictRoute: string;
  vertexAiHealthRoute: string;
  /**
   * Flags accepted for tritonserver's command lines that change nothing here, each with
   * what it means for this server; logged once at start.
   */
  inertFlags: { flag: string; value: string; meaning: string }[];
  /** The deprecated `--strict-model-config`'s value, when given (it sets disableAutoCompleteConfig). */
  strictModelConfig?: boolean;
  /** Warnings about the command line that tritonserver prints to stderr as it parses it (deprecated flags), in its words. */
  warnings: string[];
}

export interface RateLimitResource {
  name: string;
  count: number;
  /** The device it applies to; undefined: every device. */
  device?: number;
}

export function defaultOptions(): ServerOptions {
  return {
    modelRepositories: [],
    modelControlMode: "none",
    repositoryPollSecs: 15,
    loadModels: [],
    modelConfigName: "",
    disableAutoCompleteConfig: false,
    exitOnError: true,
    strictReadiness: true,
    exitTimeoutSecs: 30,
    id: "triton",
    allowHttp: true,
    httpPort: 8000,
    httpAddress: "0.0.0.0",
    httpMaxInputSize: 64 * 1024 * 1024,
    allowGrpc: true,
    grpcPort: 8001,
    grpcAddress: "0.0.0.0",
    grpcKeepaliveTimeMs: 7_200_000,
    grpcKeepaliveTimeoutMs: 20_000,
    grpcKeepalivePermitWithoutCalls: false,
    grpcHttp2MaxPingsWithoutData: 2,
    grpcHttp2MinRecvPingIntervalWithoutDataMs: 300_000,
    grpcHttp2MaxPingStrikes: 2,
    grpcMaxConnectionAgeMs: 0,
    grpcMaxConnectionAgeGraceMs: 0,
    grpcMaxConnections: 1024,
    grpcHandshakeTimeoutSecs: 10,
    grpcIdleTimeoutSecs: 300,
    allowMetrics: true,
    metricsPort: 8002,
    metricsAddress: "",
    metricsIntervalMs: 2000,
    allowGpuMetrics: true,
    metricsConfig: {},
    allowClientShm: false,
    allowModelCodeOverrides: false,
    allowStatusPage: false,
    maxQueuedBytes: DEFAULT_MAX_QUEUED_BYTES,
    traceConfig: {},
    httpRestrictedApi: [],
    grpcRestrictedProtocol: [],
    cacheSizeBytes: undefined,
    redisCacheConfig: undefined,
    allowCpuMetrics: true,
    logVerbose: 0,
    logInfo: true,
    logWarning: true,
    logError: true,
    logFormat: "default",
    backendConfig: {},
    logFile: "",
    modelLoadThreadCount: 4,
    modelLoadRetryCount: 0,
    modelNamespacing: false,
    rateLimit: "off",
    rateLimitResources: [],
    httpThreadCount: undefined,
    grpcInferThreadCount: undefined,
    reuseHttpPort: false,
    reuseGrpcPort: false,
    httpHeaderForwardPattern: "",
    grpcHeaderForwardPattern: "",
    grpcUseSsl: false,
    grpcUseSslMutual: false,
    grpcServerCert: "",
    grpcServerKey: "",
    grpcRootCert: "",
    grpcInferResponseCompressionLevel: "none",
    allowSagemaker: false,
    sagemakerPort: 8080,
    sagemakerSafePortRange: undefined,
    sagemakerModel: "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME",
    sagemakerPingMode: "ready",
    sagemakerInferenceType: "infer",
    openaiPort: undefined,
    openaiAddress: "",
    allowVertexAi: false,
    vertexAiPort: 8080,
    vertexAiDefaultModel: "",
    vertexAiPredictRoute: "",
    vertexAiHealthRoute: "",
    inertFlags: [],
    warnings: [],
  };
}

export class UsageError extends Error {}

type Kind = "string" | "int" | "bool" | "flag";
interface FlagSpec {
  kind: Kind;
  help: string;
  apply: (o: ServerOptions, v: string) => void;
  /** For a flag with nothing to act on here: what it means for this server (logged at start). */
  inert?: string;
  /** Validates an inert flag's value as Triton does. */
  check?: (flag: string, v: string) => void;
}

function parseBool(flag: string, v: string): boolean {
  const s = v.toLowerCase();
  if (["true", "1", "yes", "on"].includes(s)) return true;
  if (["false", "0", "no", "off"].includes(s)) return false;
  throw new UsageError(`invalid value '${v}' for --${flag}: expected true or false`);
}

function parseInt10(flag: string, v: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^-?\d+$/.test(v)) throw new UsageError(`invalid value '${v}' for --${flag}: expected an integer`);
  const n = Number(v);
  if (n < min || n > max) throw new UsageError(`invalid value '${v}' for --${flag}: expected ${min}..${max}`);
  return n;
}

const port = (flag: string, v: string) => parseInt10(flag, v, 0, 65535);

/** The longest delay a JS timer takes, in ms and in whole seconds. */
const INT32_MAX = 2 ** 31 - 1;
const MAX_TIMER_SECS = Math.floor(INT32_MAX / 1000);

function parseBackendConfig(o: ServerOptions, v: string): void {
  // <backend>,<key>=<value>  or  <key>=<value> (global)
  const comma = v.indexOf(",");
  const eq = v.indexOf("=");
  if (eq < 0) throw new UsageError(`--backend-config must be <backend>,<key>=<value> or <key>=<value>, got '${v}'`);
  const backend = comma >= 0 && comma < eq ? v.slice(0, comma) : "";
  const kv = comma >= 0 && comma < eq ? v.slice(comma + 1) : v;
  const k = kv.slice(0, kv.indexOf("="));
  const val = kv.slice(kv.indexOf("=") + 1);
  if (!k) throw new UsageError(`--backend-config: empty key in '${v}'`);
  (o.backendConfig[backend] ??= {})[k] = val;
}

/** The keys of Triton's redis cache (redis_cache src/redis_cache.cc, RedisCache::Create). */
export const REDIS_CACHE_KEYS = [
  "host",
  "port",
  "user",
  "password",
  "db",
  "connect_timeout",
  "socket_timeout",
  "pool_size",
  "wait_timeout",
  "tls_enabled",
  "cert",
  "key",
  "cacert",
  "cacert_dir",
  "sni",
] as const;

/** `--cache-config <cache>,<key>=<value>` (repeatable): the `local` cache's size or one of the `redis` cache's keys. */
function parseCacheConfig(o: ServerOptions, v: string): void {
  const m = /^([^,]+),([^=]+)=(.*)$/.exec(v);
  if (!m) throw new UsageError(`--cache-config must be <cache>,<key>=<value>, got '${v}'`);
  const [, cache, key, value] = m;
  if (cache === "local") {
    if (key !== "size") throw new UsageError(`--cache-config: unknown key '${key}' for the local cache (expected size)`);
    o.cacheSizeBytes = parseInt10("cache-config size", value!, 1);
  } else if (cache === "redis") {
    if (!(REDIS_CACHE_KEYS as readonly string[]).includes(key!))
      throw new UsageError(`--cache-config: unknown key '${key}' for the redis cache (expected one of ${REDIS_CACHE_KEYS.join(", ")})`);
    (o.redisCacheConfig ??= {})[key!] = value!;
  } else {
    throw new UsageError(`--cache-config: cache '${cache}' is not available; Nereid has the 'local' and 'redis' caches`);
  }
}

/** Checks the redis cache's settings once every flag is read and takes the credentials Triton reads from the environment. */
function finishRedisCacheConfig(o: ServerOptions, env: Readonly<Record<string, string | undefined>>): void {
  const c = o.redisCacheConfig;
  if (!c) return;
  if (o.cacheSizeBytes !== undefined) throw new UsageError("--cache-config: only one cache may be configured, got both 'local' and 'redis'");
  if (c.host === undefined || c.port === undefined) {
    throw new UsageError(
      "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' and 'port' in the configuration - e.g. --cache-config redis,host=redis --cache-config redis,port=6379",
    );
  }
  parseInt10("cache-config redis port", c.port, 1);
  for (const k of ["db", "connect_timeout", "socket_timeout", "pool_size", "wait_timeout"] as const)
    if (c[k] !== undefined) parseInt10(`cache-config redis ${k}`, c[k], 0);
  if (c.user === undefined && env.TRITONCACHE_REDIS_USERNAME !== undefined) c.user = env.TRITONCACHE_REDIS_USERNAME;
  if (c.password === undefined && env.TRITONCACHE_REDIS_PASSWORD !== undefined) c.password = env.TRITONCACHE_REDIS_PASSWORD;
}

function addRestriction(list: Restriction[], flag: string, v: string): void {
  let r: Restriction;
  try {
    r = parseRestriction(flag, v);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  for (const api of r.apis) {
    if (list.some((x) => x.apis.includes(api))) throw new UsageError(`--${flag}: API '${api}' is already in another restricted group`);
  }
  list.push(r);
}

/** `--trace-config [<mode>,]<key>=<value>`: level, rate, count, mode (triton only), file, log-frequency. */
function parseTraceConfig(o: ServerOptions, v: string): void {
  const m = /^(?:([^,=]+),)?([^,=]+)=(.*)$/.exec(v);
  if (!m) throw new UsageError(`--trace-config must be [<mode>,]<key>=<value>, got '${v}'`);
  const [, mode, key, value] = m;
  if (mode !== undefined && mode !== "triton")
    throw new UsageError(`--trace-config: trace mode '${mode}' is not available; Nereid writes Triton-mode trace files`);
  switch (key) {
    case "mode":
      if (value !== "triton") throw new UsageError(`--trace-config: trace mode '${value}' is not available; Nereid writes Triton-mode trace files`);
      return;
    case "level":
      ((o.traceConfig.trace_level ??= []) as string[]).push(value!);
      return;
    case "rate":
    case "count":
    case "file":
      o.traceConfig[`trace_${key}`] = value!;
      return;
    case "log-frequency":
      o.traceConfig.log_frequency = value!;
      return;
    default:
      throw new UsageError(`--trace-config: unknown key '${key}'`);
  }
}

function parseMetricsConfig(o: ServerOptions, v: string): void {
  const m = /^(?:([^,=]+),)?([^,=]+)=(.*)$/.exec(v);
  if (!m) throw new UsageError(`--metrics-config must be [<group>,]<key>=<value>, got '${v}'`);
  const [, , key, value] = m;
  if (!["counter_latencies", "summary_latencies", "summary_quantiles", "histogram_latencies"].includes(key!)) {
    throw new UsageError(`--metrics-config: unknown key '${key}'`);
  }
  if (key !== "summary_quantiles") parseBool(`metrics-config ${key}`, value!);
  o.metricsConfig[key!] = value!;
}

/** A flag accepted for compatibility whose setting has nothing to act on here; `check` validates its value as Triton does. */
function inert(kind: Kind, help: string, meaning: string, check?: (flag: string, v: string) => void): FlagSpec {
  return { kind, help, inert: meaning, apply: () => {}, check };
}

const NO_CUDA = "Nereid manages no CUDA memory of its own (ONNX Runtime, TensorRT and OpenVINO allocate their own)";

/** `<integer>:<integer>` (a GPU and a value), as Triton's cuda flags take. */
function gpuPair(flag: string, v: string): void {
  const m = /^(\d+):(\d+)$/.exec(v);
  if (!m) throw new UsageError(`invalid value '${v}' for --${flag}: expected <GPU device ID>:<integer>`);
}

/** SageMaker's model, ping mode and inference type come from its environment, as Triton reads them. */
function finishSagemaker(o: ServerOptions, env: Readonly<Record<string, string | undefined>>): void {
  if (env.SAGEMAKER_TRITON_DEFAULT_MODEL_NAME) o.sagemakerModel = env.SAGEMAKER_TRITON_DEFAULT_MODEL_NAME;
  const ping = env.SAGEMAKER_TRITON_PING_MODE ?? "ready";
  const type = env.SAGEMAKER_TRITON_INFERENCE_TYPE ?? "infer";
  if (!o.allowSagemaker) return;
  if (ping !== "ready" && ping !== "live") throw new UsageError(`SAGEMAKER_TRITON_PING_MODE must be 'ready' or 'live', got '${ping}'`);
  if (type !== "infer" && type !== "generate" && type !== "generate_stream")
    throw new UsageError(`Invalid SAGEMAKER_TRITON_INFERENCE_TYPE '${type}'. Must be one of: infer, generate, generate_stream.`);
  o.sagemakerPingMode = ping;
  o.sagemakerInferenceType = type;
}

/**
 * The frontend threads a server starts for HTTP, and for gRPC, without --http-thread-count
 * or --grpc-infer-thread-count: one per core available, at most Triton's HTTP default of 8
 * (the 16-core measurements of #30 gain nothing past 4 threads on either protocol).
 */
export const DEFAULT_FRONTEND_THREADS = 8;

/**
 * The most frontend threads a flag may ask for (Triton's bound for --grpc-infer-thread-count):
 * each worker thread is a JS heap of its own (tens of MB), so a mistyped count must not start thousands.
 */
export const MAX_FRONTEND_THREADS = 128;

/** The addresses Triton's SageMaker and Vertex AI frontends listen on (no flag sets them). */
export const SAGEMAKER_ADDRESS = "0.0.0.0";
export const VERTEX_AI_ADDRESS = "0.0.0.0";

/**
 * Triton's CheckPortCollision: two enabled services on one address and port are refused,
 * and with --sagemaker-safe-port-range so is any service on SageMaker's address outside
 * the range, each with Triton's message, the first found in Triton's order. Port 0 (the
 * system picks a free port) collides with nothing (beyond Triton, which has no port 0).
 */
function checkPortCollision(o: ServerOptions): void {
  const services = [
    o.allowHttp && { name: "HTTP", address: o.httpAddress, port: o.httpPort },
    o.allowGrpc && { name: "GRPC", address: o.grpcAddress, port: o.grpcPort },
    o.allowMetrics && { name: "metrics", address: o.metricsAddress, port: o.metricsPort },
    o.allowSagemaker && { name: "SageMaker", address: SAGEMAKER_ADDRESS, port: o.sagemakerPort, range: o.sagemakerSafePortRange },
    o.allowVertexAi && { name: "Vertex AI", address: VERTEX_AI_ADDRESS, port: o.vertexAiPort },
    o.openaiPort !== undefined && { name: "OpenAI", address: o.openaiAddress, port: o.openaiPort },
  ].filter((s): s is { name: string; address: string; port: number; range?: [number, number] } => !!s && s.port !== 0);
  services.forEach((a, i) => {
    // A service with a safe range is compared with every other one, the rest only with those after them.
    for (const b of a.range ? services : services.slice(i + 1)) {
      if (b === a || b.address !== a.address) continue;
      if (a.range && (b.port < a.range[0] || b.port > a.range[1])) {
        throw new UsageError(`The server cannot listen to ${b.name} requests at port ${b.port}, allowed port range is [${a.range[0]}, ${a.range[1]}]`);
      }
      if (a.port === b.port)
        throw new UsageError(`The server cannot listen to ${a.name} requests and ${b.name} requests at the same address and port ${a.address}:${a.port}`);
    }
  });
}

/** Vertex AI's defaults come from its environment (AIP_MODE, AIP_HTTP_PORT) unless the flags say otherwise. */
function finishVertexAi(o: ServerOptions, argv: readonly string[], env: Readonly<Record<string, string | undefined>>): void {
  const given = (flag: string) => argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
  const prediction = env.AIP_MODE === "PREDICTION";
  if (!given("allow-vertex-ai")) o.allowVertexAi = prediction;
  if (!given("vertex-ai-port") && env.AIP_HTTP_PORT !== undefined) o.vertexAiPort = port("vertex-ai-port (AIP_HTTP_PORT)", env.AIP_HTTP_PORT);
  // In a Vertex AI container (AIP_MODE=PREDICTION) Triton serves only Vertex AI by default.
  if (prediction && !given("allow-http")) o.allowHttp = false;
  if (prediction && !given("allow-grpc")) o.allowGrpc = false;
  // Triton's code reads AIP_STORAGE_URI whenever no repository is named, Vertex AI on or not (its comment says only with Vertex AI).
  if (o.modelRepositories.length === 0 && env.AIP_STORAGE_URI) o.modelRepositories.push(env.AIP_STORAGE_URI);
  if (!o.allowVertexAi) return;
  o.vertexAiPredictRoute = env.AIP_PREDICT_ROUTE ?? "";
  o.vertexAiHealthRoute = env.AIP_HEALTH_ROUTE ?? "";
  // Triton's messages, its "API_" typo included.
  if (!o.vertexAiPredictRoute) throw new UsageError("API_PREDICT_ROUTE is not defined for Vertex AI endpoint");
  if (!o.vertexAiHealthRoute) throw new UsageError("AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint");
  for (const [name, route] of [
    ["AIP_PREDICT_ROUTE", o.vertexAiPredictRoute],
    ["AIP_HEALTH_ROUTE", o.vertexAiHealthRoute],
  ] as const) {
    try {
      new RegExp(route);
    } catch (err) {
      throw new UsageError(`${name} '${route}' is not a regular expression: ${(err as Error).message}`);
    }
  }
}

function parseRateLimitResource(o: ServerOptions, v: string): void {
  const parts = v.split(":");
  if (parts.length < 2 || parts.length > 3 || !parts[0]) throw new UsageError(`--rate-limit-resource must be <resource_name>:<count>[:<device>], got '${v}'`);
  const r: RateLimitResource = { name: parts[0], count: parseInt10("rate-limit-resource count", parts[1]!) };
  if (parts[2] !== undefined) r.device = parseInt10("rate-limit-resource device", parts[2]);
  o.rateLimitResources.push(r);
}

const FLAGS: Record<string, FlagSpec> = {
  "model-repository": {
    kind: "string",
    help: "A model repository: a local folder, or s3://, as:// or gs:// object storage (repeatable).",
    apply: (o, v) => o.modelRepositories.push(v),
  },
  "model-store": { kind: "string", help: "Alias of --model-repository.", apply: (o, v) => o.modelRepositories.push(v) },
  "model-control-mode": {
    kind: "string",
    help: "none | poll | explicit (default none).",
    apply: (o, v) => {
      if (v !== "none" && v !== "poll" && v !== "explicit")
        throw new UsageError(`invalid value '${v}' for --model-control-mode: expected none, poll or explicit`);
      o.modelControlMode = v;
    },
  },
  "repository-poll-secs": {
    kind: "int",
    help: "Poll interval in seconds (default 15).",
    apply: (o, v) => (o.repositoryPollSecs = parseInt10("repository-poll-secs", v)),
  },
  "load-model": { kind: "string", help: "Model to load at start in explicit mode (repeatable; * for all).", apply: (o, v) => o.loadModels.push(v) },
  "model-config-name": { kind: "string", help: "Use <model>/configs/<name>.pbtxt when present.", apply: (o, v) => (o.modelConfigName = v) },
  "disable-auto-complete-config": { kind: "flag", help: "Do not complete configs from the model files.", apply: (o) => (o.disableAutoCompleteConfig = true) },
  "strict-model-config": {
    kind: "bool",
    help: "Deprecated: true = --disable-auto-complete-config.",
    apply: (o, v) => {
      o.warnings.push("Warning: '--strict-model-config' has been deprecated! Please use '--disable-auto-complete-config' instead.");
      o.strictModelConfig = parseBool("strict-model-config", v);
      o.disableAutoCompleteConfig = o.strictModelConfig;
    },
  },
  "exit-on-error": { kind: "bool", help: "Exit when a model fails to load (default true).", apply: (o, v) => (o.exitOnError = parseBool("exit-on-error", v)) },
  "strict-readiness": {
    kind: "bool",
    help: "Ready only when every model is ready (default true).",
    apply: (o, v) => (o.strictReadiness = parseBool("strict-readiness", v)),
  },
  "exit-timeout-secs": {
    kind: "int",
    help: "Graceful shutdown budget (default 30).",
    apply: (o, v) => (o.exitTimeoutSecs = parseInt10("exit-timeout-secs", v)),
  },
  id: { kind: "string", help: "Server id reported in metadata (default triton).", apply: (o, v) => (o.id = v) },
  "allow-http": { kind: "bool", help: "Serve HTTP (default true).", apply: (o, v) => (o.allowHttp = parseBool("allow-http", v)) },
  "http-port": { kind: "int", help: "HTTP port (default 8000).", apply: (o, v) => (o.httpPort = port("http-port", v)) },
  "http-address": { kind: "string", help: "HTTP address (default 0.0.0.0).", apply: (o, v) => (o.httpAddress = v) },
  "http-max-input-size": {
    kind: "int",
    help: "Largest HTTP request body in bytes (default 64 MiB).",
    apply: (o, v) => (o.httpMaxInputSize = parseInt10("http-max-input-size", v, 1)),
  },
  "allow-grpc": { kind: "bool", help: "Serve gRPC (default true).", apply: (o, v) => (o.allowGrpc = parseBool("allow-grpc", v)) },
  "grpc-port": { kind: "int", help: "gRPC port (default 8001).", apply: (o, v) => (o.grpcPort = port("grpc-port", v)) },
  "grpc-address": { kind: "string", help: "gRPC address (default 0.0.0.0).", apply: (o, v) => (o.grpcAddress = v) },
  "grpc-keepalive-time": {
    kind: "int",
    help: "Keepalive ping interval in ms (default 7200000).",
    apply: (o, v) => (o.grpcKeepaliveTimeMs = parseInt10("grpc-keepalive-time", v)),
  },
  "grpc-keepalive-timeout": {
    kind: "int",
    help: "Keepalive ping timeout in ms (default 20000).",
    apply: (o, v) => (o.grpcKeepaliveTimeoutMs = parseInt10("grpc-keepalive-timeout", v)),
  },
  "grpc-keepalive-permit-without-calls": {
    kind: "bool",
    help: "Allow keepalive pings without calls (default false).",
    apply: (o, v) => (o.grpcKeepalivePermitWithoutCalls = parseBool("grpc-keepalive-permit-without-calls", v)),
  },
  "grpc-http2-max-pings-without-data": {
    kind: "int",
    help: "Pings allowed without data (default 2).",
    apply: (o, v) => (o.grpcHttp2MaxPingsWithoutData = parseInt10("grpc-http2-max-pings-without-data", v)),
  },
  "grpc-http2-min-recv-ping-interval-without-data": {
    kind: "int",
    help: "Minimum ping interval without data in ms (default 300000).",
    apply: (o, v) => (o.grpcHttp2MinRecvPingIntervalWithoutDataMs = parseInt10("grpc-http2-min-recv-ping-interval-without-data", v)),
  },
  "grpc-http2-max-ping-strikes": {
    kind: "int",
    help: "Bad pings before the connection closes (default 2).",
    apply: (o, v) => (o.grpcHttp2MaxPingStrikes = parseInt10("grpc-http2-max-ping-strikes", v)),
  },
  "grpc-max-connection-age": {
    kind: "int",
    help: "Close a connection (GOAWAY) this many ms after it opened (default 0: never).",
    apply: (o, v) => (o.grpcMaxConnectionAgeMs = parseInt10("grpc-max-connection-age", v, 0, INT32_MAX)),
  },
  "grpc-max-connection-age-grace": {
    kind: "int",
    help: "Calls still running at the max age get this many ms more (default 0: unlimited).",
    apply: (o, v) => (o.grpcMaxConnectionAgeGraceMs = parseInt10("grpc-max-connection-age-grace", v, 0, INT32_MAX)),
  },
  "grpc-max-connections": {
    kind: "int",
    help: "Open gRPC connections at most (default 1024, 0: no limit); at the limit a new one replaces the oldest without a handshake or the one idle longest, and is closed only when every connection has a call in flight.",
    apply: (o, v) => (o.grpcMaxConnections = parseInt10("grpc-max-connections", v)),
  },
  "grpc-handshake-timeout-secs": {
    kind: "int",
    help: "Close a connection that has not sent the HTTP/2 preface (with TLS: finished the TLS handshake) within this (default 10, 0: never).",
    apply: (o, v) => (o.grpcHandshakeTimeoutSecs = parseInt10("grpc-handshake-timeout-secs", v, 0, MAX_TIMER_SECS)),
  },
  "grpc-idle-timeout-secs": {
    kind: "int",
    help: "Close a connection with no call for this long (default 300, 0: never).",
    apply: (o, v) => (o.grpcIdleTimeoutSecs = parseInt10("grpc-idle-timeout-secs", v, 0, MAX_TIMER_SECS)),
  },
  "allow-metrics": { kind: "bool", help: "Serve Prometheus metrics (default true).", apply: (o, v) => (o.allowMetrics = parseBool("allow-metrics", v)) },
  "metrics-port": { kind: "int", help: "Metrics port (default 8002).", apply: (o, v) => (o.metricsPort = port("metrics-port", v)) },
  "metrics-address": { kind: "string", help: "Metrics address (default: the HTTP address).", apply: (o, v) => (o.metricsAddress = v) },
  "metrics-interval-ms": {
    kind: "int",
    help: "CPU/GPU metrics sampling interval in ms (default 2000).",
    apply: (o, v) => (o.metricsIntervalMs = parseInt10("metrics-interval-ms", v, 1)),
  },
  "allow-cpu-metrics": {
    kind: "bool",
    help: "Report nv_cpu_* metrics (default true).",
    apply: (o, v) => (o.allowCpuMetrics = parseBool("allow-cpu-metrics", v)),
  },
  "max-queued-bytes": {
    kind: "int",
    help: "Input bytes that unanswered requests may hold together; past it 503 'Exceeds maximum queue size' (default 1073741824; 0: no bound).",
    apply: (o, v) => (o.maxQueuedBytes = parseInt10("max-queued-bytes", v)),
  },
  "allow-client-shm": {
    kind: "bool",
    help: "Allow clients to register shared-memory regions (default false).",
    apply: (o, v) => (o.allowClientShm = parseBool("allow-client-shm", v)),
  },
  "allow-model-code-overrides": {
    kind: "bool",
    help: "Let a model load's file and config overrides bring code that the server runs: TypeScript/JavaScript, Python or shared-library files, the typescript backend over uploaded files, accelerator parameters that name host files (Nereid's own; default false: refused with 400 / INVALID_ARGUMENT).",
    apply: (o, v) => (o.allowModelCodeOverrides = parseBool("allow-model-code-overrides", v)),
  },
  "allow-status-page": {
    kind: "bool",
    help: "Serve the live status page at /nereid/status and its data at /nereid/status.json on the HTTP port (Nereid's own; default false).",
    apply: (o, v) => (o.allowStatusPage = parseBool("allow-status-page", v)),
  },
  "allow-gpu-metrics": {
    kind: "bool",
    help: "Report nv_gpu_* metrics through NVML when a GPU driver is present (default true).",
    apply: (o, v) => (o.allowGpuMetrics = parseBool("allow-gpu-metrics", v)),
  },
  "http-restricted-api": {
    kind: "string",
    help: "<apis>:<key>=<value>: those APIs need HTTP header <key>: <value> (repeatable).",
    apply: (o, v) => addRestriction(o.httpRestrictedApi, "http-restricted-api", v),
  },
  "grpc-restricted-protocol": {
    kind: "string",
    help: "<protocols>:<key>=<value>: those RPCs need metadata triton-grpc-protocol-<key>: <value> (repeatable).",
    apply: (o, v) => addRestriction(o.grpcRestrictedProtocol, "grpc-restricted-protocol", v),
  },
  "trace-config": {
    kind: "string",
    help: "[triton,]<key>=<value> with level (OFF|TIMESTAMPS), rate, count, file, log-frequency (repeatable).",
    apply: parseTraceConfig,
  },
  "trace-file": { kind: "string", help: "Deprecated: --trace-config triton,file=<path>.", apply: (o, v) => parseTraceConfig(o, `file=${v}`) },
  "trace-level": { kind: "string", help: "Deprecated: --trace-config level=<level>.", apply: (o, v) => parseTraceConfig(o, `level=${v}`) },
  "trace-rate": { kind: "string", help: "Deprecated: --trace-config rate=<n>.", apply: (o, v) => parseTraceConfig(o, `rate=${v}`) },
  "trace-count": { kind: "string", help: "Deprecated: --trace-config count=<n>.", apply: (o, v) => parseTraceConfig(o, `count=${v}`) },
  "metrics-config": {
    kind: "string",
    help: "counter_latencies=<bool>, summary_latencies=<bool>, summary_quantiles=<q>:<err>,... (repeatable).",
    apply: parseMetricsConfig,
  },
  "cache-config": {
    kind: "string",
    help: "local,size=<bytes> or redis,<key>=<value> (repeatable; host, port, user, password, db, tls_enabled, ...): the response cache (models opt in with response_cache { enable: true }).",
    apply: parseCacheConfig,
  },
  "response-cache-byte-size": {
    kind: "int",
    help: "Deprecated: same as --cache-config local,size=<bytes>.",
    apply: (o, v) => (o.cacheSizeBytes = parseInt10("response-cache-byte-size", v, 1)),
  },
  "log-verbose": { kind: "int", help: "Verbose log level (default 0).", apply: (o, v) => (o.logVerbose = parseInt10("log-verbose", v)) },
  "log-info": { kind: "bool", help: "Log info messages (default true).", apply: (o, v) => (o.logInfo = parseBool("log-info", v)) },
  "log-warning": { kind: "bool", help: "Log warnings (default true).", apply: (o, v) => (o.logWarning = parseBool("log-warning", v)) },
  "log-error": { kind: "bool", help: "Log errors (default true).", apply: (o, v) => (o.logError = parseBool("log-error", v)) },
  "log-format": {
    kind: "string",
    help: "default | ISO8601.",
    apply: (o, v) => {
      if (v !== "default" && v !== "ISO8601") throw new UsageError(`invalid value '${v}' for --log-format: expected default or ISO8601`);
      o.logFormat = v;
    },
  },
  "backend-config": {
    kind: "string",
    help: "<backend>,<key>=<value> (repeatable), e.g. onnxruntime,library=/path/libonnxruntime.so.1",
    apply: parseBackendConfig,
  },
  "log-file": { kind: "string", help: "Write the log to this file instead of the console.", apply: (o, v) => (o.logFile = v) },
  "trace-log-frequency": {
    kind: "string",
    help: "Deprecated: --trace-config triton,log-frequency=<n>.",
    apply: (o, v) => parseTraceConfig(o, `log-frequency=${v}`),
  },
  "model-load-thread-count": {
    kind: "int",
    help: "Model versions loading at once (default 4).",
    apply: (o, v) => (o.modelLoadThreadCount = parseInt10("model-load-thread-count", v, 1)),
  },
  "model-load-retry-count": {
    kind: "int",
    help: "Further tries of a model load that failed (default 0).",
    apply: (o, v) => (o.modelLoadRetryCount = parseInt10("model-load-retry-count", v)),
  },
  "model-namespacing": {
    kind: "bool",
    help: "Same-named models in different repositories serve side by side (default false).",
    apply: (o, v) => (o.modelNamespacing = parseBool("model-namespacing", v)),
  },
  "rate-limit": {
    kind: "string",
    help: "off | execution_count (default off): instances run when their rate_limiter resources are free, by priority.",
    apply: (o, v) => {
      if (v !== "off" && v !== "execution_count") throw new UsageError(`invalid value '${v}' for --rate-limit: expected off or execution_count`);
      o.rateLimit = v;
    },
  },
  "rate-limit-resource": {
    kind: "string",
    help: "<name>:<count>[:<device>]: resources available to the rate limiter (repeatable).",
    apply: parseRateLimitResource,
  },
  "http-thread-count": {
    kind: "int",
    help: `Threads handling HTTP requests, 1 to ${MAX_FRONTEND_THREADS}: 1 is the main thread, more are worker threads (Bun only; under Node and Deno the main thread serves HTTP). Default: the cores available, at most ${DEFAULT_FRONTEND_THREADS} (Triton's default is 8).`,
    apply: (o, v) => (o.httpThreadCount = parseInt10("http-thread-count", v, 1, MAX_FRONTEND_THREADS)),
  },
  "grpc-infer-thread-count": {
    kind: "int",
    help: `Threads handling gRPC calls, 1 to ${MAX_FRONTEND_THREADS}: 1 is the main thread, more are worker threads, each doing its calls' HTTP/2, protobuf and inference work (Bun only; under Node and Deno the main thread serves gRPC). Default: the cores available, at most ${DEFAULT_FRONTEND_THREADS} (Triton's default is 2 handler threads beside gRPC's own pollers).`,
    apply: (o, v) => (o.grpcInferThreadCount = parseInt10("grpc-infer-thread-count", v, 1, MAX_FRONTEND_THREADS)),
  },
  "reuse-http-port": {
    kind: "bool",
    help: "Let several servers listen on the HTTP port (SO_REUSEPORT; default false).",
    apply: (o, v) => (o.reuseHttpPort = parseBool("reuse-http-port", v)),
  },
  "reuse-grpc-port": {
    kind: "bool",
    help: "Let several servers listen on the gRPC port (SO_REUSEPORT; default false).",
    apply: (o, v) => (o.reuseGrpcPort = parseBool("reuse-grpc-port", v)),
  },
  "http-header-forward-pattern": {
    kind: "string",
    help: "HTTP headers matching this regular expression become request parameters.",
    apply: (o, v) => (o.httpHeaderForwardPattern = v),
  },
  "grpc-header-forward-pattern": {
    kind: "string",
    help: "gRPC metadata matching this regular expression becomes request parameters.",
    apply: (o, v) => (o.grpcHeaderForwardPattern = v),
  },
  "grpc-use-ssl": { kind: "bool", help: "Serve gRPC over TLS (default false).", apply: (o, v) => (o.grpcUseSsl = parseBool("grpc-use-ssl", v)) },
  "grpc-use-ssl-mutual": {
    kind: "bool",
    help: "Serve gRPC over mutual TLS; preempts --grpc-use-ssl (default false).",
    apply: (o, v) => (o.grpcUseSslMutual = parseBool("grpc-use-ssl-mutual", v)),
  },
  "grpc-server-cert": { kind: "string", help: "PEM server certificate for gRPC TLS.", apply: (o, v) => (o.grpcServerCert = v) },
  "grpc-server-key": { kind: "string", help: "PEM server key for gRPC TLS.", apply: (o, v) => (o.grpcServerKey = v) },
  "grpc-root-cert": { kind: "string", help: "PEM root certificate clients are checked against (mutual TLS).", apply: (o, v) => (o.grpcRootCert = v) },
  "grpc-infer-response-compression-level": {
    kind: "string",
    help: "none | low | medium | high (default none).",
    apply: (o, v) => {
      if (v !== "none" && v !== "low" && v !== "medium" && v !== "high")
        throw new UsageError(`invalid value '${v}' for --grpc-infer-response-compression-level: expected none, low, medium or high`);
      o.grpcInferResponseCompressionLevel = v;
      if (v !== "none")
        o.inertFlags.push({
          flag: "grpc-infer-response-compression-level",
          value: v,
          meaning:
            "responses go out uncompressed: grpc-js, Nereid's gRPC server, does not compress what a server sends (requests compressed by the client are read)",
        });
    },
  },
  "allow-sagemaker": {
    kind: "bool",
    help: "Serve SageMaker's /ping and /invocations (default false).",
    apply: (o, v) => (o.allowSagemaker = parseBool("allow-sagemaker", v)),
  },
  "sagemaker-port": { kind: "int", help: "SageMaker port (default 8080).", apply: (o, v) => (o.sagemakerPort = port("sagemaker-port", v)) },
  "sagemaker-safe-port-range": {
    kind: "string",
    help: "<lo>-<hi>: the ports the other endpoints may use.",
    apply: (o, v) => {
      const m = /^(\d+)-(\d+)$/.exec(v);
      if (!m) throw new UsageError(`invalid value '${v}' for --sagemaker-safe-port-range: expected <integer>-<integer>`);
      o.sagemakerSafePortRange = [port("sagemaker-safe-port-range", m[1]!), port("sagemaker-safe-port-range", m[2]!)];
    },
  },
  "openai-port": {
    kind: "int",
    help: "Serve the OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions) on this port (default: off; Triton's OpenAI frontend uses 9000).",
    apply: (o, v) => (o.openaiPort = port("openai-port", v)),
  },
  "openai-address": { kind: "string", help: "OpenAI-compatible API address (default: the HTTP address).", apply: (o, v) => (o.openaiAddress = v) },
  "allow-vertex-ai": {
    kind: "bool",
    help: "Serve Vertex AI's health and predict routes (default true iff AIP_MODE=PREDICTION).",
    apply: (o, v) => (o.allowVertexAi = parseBool("allow-vertex-ai", v)),
  },
  "vertex-ai-port": { kind: "int", help: "Vertex AI port (default AIP_HTTP_PORT, else 8080).", apply: (o, v) => (o.vertexAiPort = port("vertex-ai-port", v)) },
  "vertex-ai-default-model": {
    kind: "string",
    help: "The model a Vertex AI predict request goes to when it names none.",
    apply: (o, v) => (o.vertexAiDefaultModel = v),
  },
  "sagemaker-thread-count": inert(
    "int",
    "Threads handling SageMaker requests (default 8).",
    "the SageMaker routes share the HTTP frontend's event loop",
    (f, v) => parseInt10(f, v, 1),
  ),
  "vertex-ai-thread-count": inert(
    "int",
    "Threads handling Vertex AI requests (default 8).",
    "the Vertex AI routes share the HTTP frontend's event loop",
    (f, v) => parseInt10(f, v, 1),
  ),
  "grpc-infer-allocation-pool-size": inert(
    "int",
    "Request/response states kept for reuse (default 8).",
    "Nereid keeps no pool of gRPC request states",
    (f, v) => parseInt10(f, v),
  ),
  "grpc-max-response-pool-size": inert("int", "Response objects allocated at once (default unlimited).", "Nereid keeps no pool of gRPC responses", (f, v) =>
    parseInt10(f, v, 1),
  ),
  "cache-directory": inert(
    "string",
    "Where cache libraries are searched (default /opt/tritonserver/caches).",
    "the local and redis caches are built in; no cache library is loaded",
  ),
  "backend-directory": inert(
    "string",
    "Where backend libraries are searched (default /opt/tritonserver/backends).",
    "the backends are built in; native runtimes are found as docs/hardware.md says (--backend-config <backend>,library=<path>)",
  ),
  "repoagent-directory": inert("string", "Where repository agents are searched (default /opt/tritonserver/repoagents).", "Nereid runs no repository agents"),
  "pinned-memory-pool-byte-size": inert("int", "Pinned host memory pool in bytes (default 268435456).", `${NO_CUDA}; no pinned pool is allocated`, (f, v) =>
    parseInt10(f, v),
  ),
  "cuda-memory-pool-byte-size": inert("string", "<gpu>:<bytes>: CUDA memory pool per GPU (default 64 MiB; repeatable).", NO_CUDA, gpuPair),
  "cuda-virtual-address-size": inert(
    "string",
    "<gpu>:<bytes>: CUDA virtual address size for growable implicit state (repeatable).",
    `${NO_CUDA}; implicit state lives in host memory`,
    gpuPair,
  ),
  "min-supported-compute-capability": inert(
    "string",
    "GPUs below this CUDA compute capability are not used (default 6.0).",
    "GPU instances go to whatever device ONNX Runtime's or TensorRT's CUDA provider accepts",
    (f, v) => {
      if (!/^\d+(\.\d+)?$/.test(v)) throw new UsageError(`invalid value '${v}' for --${f}: expected a number`);
    },
  ),
  "buffer-manager-thread-count": inert("int", "Threads for tensor copies (default 0).", "tensor copies run on the request's own thread", (f, v) =>
    parseInt10(f, v),
  ),
  "host-policy": inert(
    "string",
    "<policy>,<setting>=<value>: numa-node, cpu-cores (repeatable).",
    "instances are not pinned to NUMA nodes or cores; use taskset or systemd's CPUAffinity",
    (f, v) => {
      if (!/^[^,]+,[^=]+=.*$/.test(v)) throw new UsageError(`invalid value '${v}' for --${f}: expected <policy_name>,<setting>=<value>`);
    },
  ),
  "model-load-gpu-limit": inert(
    "string",
    "<gpu>:<fraction>: refuse loads past this share of GPU memory (repeatable).",
    "GPU memory is not checked before a load",
    (f, v) => {
      const m = /^(\d+):([0-9.]+)$/.exec(v);
      if (!m || !(Number(m[2]) >= 0 && Number(m[2]) <= 1))
        throw new UsageError(`invalid value '${v}' for --${f}: expected <device_id>:<fraction between 0 and 1>`);
    },
  ),
  "enable-peer-access": inert(
    "bool",
    "Enable CUDA peer access between GPUs (default true).",
    "Nereid copies no tensors between GPUs itself",
    (f, v) => void parseBool(f, v),
  ),
};

/** Every flag this parser takes, with its help text and whether it is accepted with no effect here. */
export function flagTable(): { name: string; kind: string; help: string; inert?: string }[] {
  return Object.entries(FLAGS).map(([name, spec]) => ({ name, kind: spec.kind, help: spec.help, ...(spec.inert ? { inert: spec.inert } : {}) }));
}

export function usage(): string {
  const lines = [
    "Usage: nereid [options]",
    "       nereid --version",
    "       nereid devices [--self-test] [--cuda-library=<path>]",
    "       nereid health [--url=http://127.0.0.1:8000]   exit 0 when the server is live and ready (default: the HTTP port of this container's server)",
    "       nereid perf -m <model> [options]   (load generator, perf_analyzer's flags; nereid perf --help)",
    "",
    "Options (tritonserver's names):",
  ];
  for (const [name, spec] of Object.entries(FLAGS)) {
    const arg = spec.kind === "flag" ? "" : spec.kind === "bool" ? "=<bool>" : spec.kind === "int" ? "=<int>" : "=<string>";
    lines.push(`  --${name}${arg}`.padEnd(44) + spec.help);
  }
  lines.push("  --help".padEnd(44) + "Print this help.", "  --version".padEnd(44) + "Print the version.");
  return lines.join("\n");
}

export type ParsedArgs =
  | { kind: "run"; options: ServerOptions }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "devices"; cudaLibrary?: string; selfTest?: boolean; ipcOpen?: string }
  | { kind: "health"; url?: string }
  | { kind: "perf"; argv: string[] };

/** Parses tritonserver-style arguments; throws UsageError on anything it does not accept. */
export function parseArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): ParsedArgs {
  // `nereid perf ...`: the load generator, with perf_analyzer's flags (src/perf/options.ts).
  if (argv[0] === "perf") return { kind: "perf", argv: argv.slice(1) };
  // `nereid health [--url=<base>]`: exit 0 when a running server is live and ready.
  if (argv[0] === "health") {
    const out: ParsedArgs & { kind: "health" } = { kind: "health" };
    for (const a of argv.slice(1)) {
      if (a.startsWith("--url=")) out.url = a.slice("--url=".length);
      else throw new UsageError(`unexpected argument '${a}' for 'health' (expected --url=<http://host:port>)`);
    }
    return out;
  }
  // `nereid devices [--cuda-library=<path>]`: report the GPUs the CUDA driver sees.
  if (argv[0] === "devices") {
    const out: ParsedArgs & { kind: "devices" } = { kind: "devices" };
    for (const a of argv.slice(1)) {
      if (a.startsWith("--cuda-library=")) out.cudaLibrary = a.slice("--cuda-library=".length);
      else if (a === "--self-test") out.selfTest = true;
      else if (a.startsWith("--ipc-open="))
        out.ipcOpen = a.slice("--ipc-open=".length); // the self-test's second process
      else throw new UsageError(`unexpected argument '${a}' for 'devices' (expected --self-test or --cuda-library=<path>)`);
    }
    return out;
  }
  const o = defaultOptions();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") return { kind: "help" };
    if (arg === "--version") return { kind: "version" };
    if (!arg.startsWith("--")) throw new UsageError(`unexpected argument '${arg}'`);
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const spec = FLAGS[name];
    if (!spec) throw new UsageError(`unknown option '--${name}'`);
    let value: string;
    if (spec.kind === "flag") {
      if (eq >= 0) throw new UsageError(`option '--${name}' takes no value`);
      value = "";
    } else if (eq >= 0) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        if (spec.kind === "bool") value = "true";
        else throw new UsageError(`option '--${name}' requires a value`);
      } else {
        value = next;
        i++;
      }
    }
    if (spec.inert !== undefined) {
      spec.check?.(name, value);
      o.inertFlags.push({ flag: name, value, meaning: spec.inert });
    } else {
      spec.apply(o, value);
    }
  }
  // --disable-auto-complete-config wins over a --strict-model-config=false given anywhere, as in tritonserver.
  if (argv.includes("--disable-auto-complete-config")) {
    if (o.strictModelConfig === false)
      o.warnings.push("Warning: Overriding deprecated '--strict-model-config' from False to True in favor of '--disable-auto-complete-config'!");
    o.disableAutoCompleteConfig = true;
  }
  finishVertexAi(o, argv, env);
  if (o.modelRepositories.length === 0) throw new UsageError("--model-repository must be specified");
  finishRedisCacheConfig(o, env);
  finishSagemaker(o, env);
  if (o.loadModels.length > 0 && o.modelControlMode !== "explicit") {
    throw new UsageError("--load-model is only allowed with --model-control-mode=explicit");
  }
  if (o.loadModels.includes("*") && o.loadModels.length > 1) {
    throw new UsageError("--load-model=* must be the only --load-model");
  }
  if (o.modelControlMode !== "poll") o.repositoryPollSecs = 0;
  if (!o.metricsAddress) o.metricsAddress = o.httpAddress;
  if (!o.openaiAddress) o.openaiAddress = o.httpAddress;
  checkPortCollision(o);
  return { kind: "run", options: o };
}
