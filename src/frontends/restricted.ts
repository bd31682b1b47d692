/**
 * @module Triton's restricted API groups: `--http-restricted-api <apis>:<key>=<value>`
 * and `--grpc-restricted-protocol <protocols>:<key>=<value>`. A request to an API of a
 * restricted group must carry header `<key>` (gRPC metadata `triton-grpc-protocol-<key>`)
 * with `<value>`; otherwise HTTP answers 403 and gRPC UNAVAILABLE, with Triton's texts.
 */

export const API_CATEGORIES = [
  "health",
  "metadata",
  "inference",
  "shared-memory",
  "model-config",
  "model-repository",
  "statistics",
  "trace",
  "logging",
] as const;

export type ApiCategory = (typeof API_CATEGORIES)[number];

export interface Restriction {
  apis: ApiCategory[];
  key: string;
  value: string;
}

/** category → the header it needs. */
export type Restrictions = ReadonlyMap<ApiCategory, { key: string; value: string }>;

export function restrictionMap(list: readonly Restriction[]): Restrictions {
  const map = new Map<ApiCategory, { key: string; value: string }>();
  for (const r of list) for (const api of r.apis) map.set(api, { key: r.key, value: r.value });
  return map;
}

/** Parses `<apis>:<key>=<value>`; throws with a message for a bad spec. */
export function parseRestriction(flag: string, spec: string): Restriction {
  const m = /^([^:]+):([^=]+)=(.*)$/.exec(spec);
  if (!m) throw new Error(`--${flag} must be <apis>:<key>=<value>, got '${spec}'`);
  const apis = m[1]!.split(",").map((a) => a.trim());
  for (const a of apis) {
    if (!(API_CATEGORIES as readonly string[]).includes(a)) throw new Error(`--${flag}: unknown API '${a}' (expected one of ${API_CATEGORIES.join(", ")})`);
  }
  return { apis: apis as ApiCategory[], key: m[2]!, value: m[3]! };
}

/** The HTTP API category of a /v2/... path, or undefined for paths outside the groups. */
export function httpCategory(parts: readonly string[], method: string): ApiCategory | undefined {
  if (parts[0] !== "v2") return undefined;
  if (parts.length === 1) return "metadata";
  switch (parts[1]) {
    case "health":
      return "health";
    case "repository":
      return "model-repository";
    case "systemsharedmemory":
    case "cudasharedmemory":
      return "shared-memory";
    case "trace":
      return "trace";
    case "logging":
      return "logging";
    case "models": {
      if (parts.length === 3 && parts[2] === "stats") return "statistics";
      const last = parts[parts.length - 1];
      if (last === "infer" || last === "generate" || last === "generate_stream") return "inference";
      if (last === "ready") return "health";
      if (last === "config") return "model-config";
      if (last === "stats") return "statistics";
      if (last === "setting" && parts[parts.length - 2] === "trace") return "trace";
      return method === "GET" ? "metadata" : undefined;
    }
  }
  return undefined;
}

/** The category of each RPC of inference.GRPCInferenceService and grpc.health.v1.Health. */
export const GRPC_CATEGORY: Readonly<Record<string, ApiCategory>> = {
  ServerLive: "health",
  ServerReady: "health",
  ModelReady: "health",
  Check: "health",
  ServerMetadata: "metadata",
  ModelMetadata: "metadata",
  ModelInfer: "inference",
  ModelStreamInfer: "inference",
  ModelConfig: "model-config",
  ModelStatistics: "statistics",
  RepositoryIndex: "model-repository",
  RepositoryModelLoad: "model-repository",
  RepositoryModelUnload: "model-repository",
  SystemSharedMemoryStatus: "shared-memory",
  SystemSharedMemoryRegister: "shared-memory",
  SystemSharedMemoryUnregister: "shared-memory",
  CudaSharedMemoryStatus: "shared-memory",
  CudaSharedMemoryRegister: "shared-memory",
  CudaSharedMemoryUnregister: "shared-memory",
  TraceSetting: "trace",
  LogSettings: "logging",
};
