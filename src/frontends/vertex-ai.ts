/**
 * @module The Vertex AI frontend (`--allow-vertex-ai`, port `--vertex-ai-port`), as
 * Triton's vertex_ai_server.cc serves it: GET on AIP_HEALTH_ROUTE is the server's ready
 * check; POST on AIP_PREDICT_ROUTE infers on the default model (`--vertex-ai-default-model`,
 * or the repository's only model), with a binary body announced by the content type
 * `application/vnd.vertex-ai-triton.binary+json;json-header-size=<n>`. With the header
 * `X-Vertex-Ai-Triton-Redirect: <endpoint>`, a POST reaches one of the read-only protocol
 * endpoints Triton lets through (metadata, health, model ready/metadata/config/stats/infer,
 * shared-memory status, repository index, metrics); anything that changes state answers 403.
 * Everything goes through the HTTP frontend's routes (restricted APIs and the size limit).
 */
import type { HttpHandler } from "./http/routes.ts";
import { rewrittenRequest, type HttpRequest, type HttpResponse } from "./http/types.ts";
import { inferWithBinaryContentType } from "./binary-content-type.ts";

export interface VertexAiOptions {
  /** AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE, regular expressions matched against the whole path. */
  predictRoute: string;
  healthRoute: string;
  /** The model a predict request without a redirect goes to. */
  model: string;
  /** GET /metrics on the metrics port's handler, when metrics are on. */
  metrics?: HttpHandler;
}

const BINARY_MIME = "application/vnd.vertex-ai-triton.binary+json;json-header-size=";
const REDIRECT = "x-vertex-ai-triton-redirect";
const MODEL = /^\/v2\/models\/[^/]+(?:\/versions\/[0-9]+)?(?:\/(ready|infer|config|stats))?$/;
const HEALTH = /^\/v2\/health\/(?:live|ready)$/;
const SHM = /^\/v2\/(?:system|cuda)sharedmemory(?:\/region\/[^/]+)?\/(status|register|unregister)$/;
const REPOSITORY = /^\/v2\/repository(?:\/[^/]+)?\/(index|models\/[^/]+\/(?:load|unload))$/;

const bare = (status: number): HttpResponse => ({ status, headers: {} });

export function createVertexAiHandler(http: HttpHandler, o: VertexAiOptions): HttpHandler {
  const predict = new RegExp(`^(?:${o.predictRoute})$`);
  const health = new RegExp(`^(?:${o.healthRoute})$`);
  const model = encodeURIComponent(o.model);

  const infer = (req: HttpRequest, path: string) => inferWithBinaryContentType(http, req, path, BINARY_MIME);

  return async (req: HttpRequest): Promise<HttpResponse> => {
    if (health.test(req.path)) return http(rewrittenRequest(req, { path: "/v2/health/ready" }));
    if (!predict.test(req.path)) return bare(400);
    const redirect = req.header(REDIRECT);
    if (redirect === undefined) return infer(req, `/v2/models/${model}/infer`);
    if (req.method !== "POST") return bare(405);
    const endpoint = `/${redirect}`;
    const get = () => http(rewrittenRequest(req, { method: "GET", path: endpoint }));
    if (endpoint === "/metrics") return o.metrics ? o.metrics(rewrittenRequest(req, { method: "GET", path: "/metrics" })) : bare(400);
    if (endpoint === "/v2/models/stats" || endpoint === "/v2" || HEALTH.test(endpoint)) return get();
    const m = MODEL.exec(endpoint);
    if (m) return m[1] === "infer" ? infer(req, endpoint) : get();
    const shm = SHM.exec(endpoint);
    if (shm) return shm[1] === "status" ? get() : bare(403);
    const repo = REPOSITORY.exec(endpoint);
    if (repo) return repo[1] === "index" ? http(rewrittenRequest(req, { path: endpoint })) : bare(403);
    return bare(400);
  };
}
