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
import type { HttpRequest, HttpResponse } from "./http/types.ts";

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
const MODEL = /^\/v2\/models\/[^/]+(?:\/versions\/[^/]+)?(?:\/(ready|infer|config|stats))?$/;
const HEALTH = /^\/v2\/health\/(?:live|ready)$/;
const SHM = /^\/v2\/(?:system|cuda)sharedmemory(?:\/region\/[^/]+)?\/(status|register|unregister)$/;
const REPOSITORY = /^\/v2\/repository(?:\/[^/]+)?\/(index|models\/[^/]+\/(?:load|unload))$/;

const error = (status: number, message: string): HttpResponse => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: message }) });
const bare = (status: number): HttpResponse => ({ status, headers: {} });

function headerLength(contentType: string | undefined, contentLength: number): string | undefined {
  if (!contentType) return undefined;
  const at = contentType.indexOf(BINARY_MIME);
  if (at < 0) return undefined;
  if (at !== 0) throw error(400, `expect MIME type for binary data starts with '${BINARY_MIME}', got: ${contentType}`);
  const raw = contentType.slice(BINARY_MIME.length);
  if (!/^\s*[-+]?\d/.test(raw)) throw error(400, `Unable to parse inference header size, got: ${raw}`);
  const n = Number.parseInt(raw, 10);
  if (n < 0 || n > contentLength) throw error(400, `inference header size should be in range (0, ${contentLength}), got: ${raw}`);
  return String(n);
}

export function createVertexAiHandler(http: HttpHandler, o: VertexAiOptions): HttpHandler {
  const predict = new RegExp(`^(?:${o.predictRoute})$`);
  const health = new RegExp(`^(?:${o.healthRoute})$`);
  const model = encodeURIComponent(o.model);

  const infer = async (req: HttpRequest, path: string): Promise<HttpResponse> => {
    let length: string | undefined;
    try {
      const declared = req.header("content-length");
      length = headerLength(req.header("content-type"), declared === undefined ? Number.MAX_SAFE_INTEGER : Number(declared));
    } catch (answer) {
      return answer as HttpResponse;
    }
    const header = (name: string) => (name.toLowerCase() === "inference-header-content-length" ? length : req.header(name));
    const r = await http({ ...req, path, header });
    const binary = r.headers["inference-header-content-length"];
    if (binary === undefined) return r;
    const { "inference-header-content-length": _, ...headers } = r.headers;
    return { ...r, headers: { ...headers, "content-type": BINARY_MIME + binary } };
  };

  return async (req: HttpRequest): Promise<HttpResponse> => {
    if (health.test(req.path)) return http({ ...req, path: "/v2/health/ready" });
    if (!predict.test(req.path)) return bare(400);
    const redirect = req.header(REDIRECT);
    if (redirect === undefined) return infer(req, `/v2/models/${model}/infer`);
    if (req.method !== "POST") return bare(405);
    const endpoint = `/${redirect}`;
    const get = () => http({ ...req, method: "GET", path: endpoint });
    if (endpoint === "/metrics") return o.metrics ? o.metrics({ ...req, method: "GET", path: "/metrics" }) : bare(400);
    if (endpoint === "/v2/models/stats" || endpoint === "/v2" || HEALTH.test(endpoint)) return get();
    const m = MODEL.exec(endpoint);
    if (m) return m[1] === "infer" ? infer(req, endpoint) : get();
    const shm = SHM.exec(endpoint);
    if (shm) return shm[1] === "status" ? get() : bare(403);
    const repo = REPOSITORY.exec(endpoint);
    if (repo) return repo[1] === "index" ? http({ ...req, path: endpoint }) : bare(403);
    return bare(400);
  };
}
