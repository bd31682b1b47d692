/**
 * @module The /v2 route table and the handler behind both HTTP server adapters: parse
 * the path, call the core, and write Triton's JSON and error shapes.
 */
import { inferTarget } from "./infer-path.ts";
import { ServerError } from "../../core/errors.ts";
import { getLogger, logFailure } from "../../core/logger.ts";
import { httpStatus } from "./status.ts";
import { currentLogSettings, updateLogSettings } from "../../core/log-settings.ts";
import { httpCategory, type Restrictions } from "../restricted.ts";
import { handleInfer } from "./infer.ts";
import { healthAnswer } from "./health-route.ts";
import { handleGenerate } from "./generate.ts";
import { readBody } from "./body.ts";
import { checkJsonDepth } from "./json-parse.ts";
import { statusRoute } from "./status-page.ts";
import { changesState, crossOrigin } from "./cross-origin.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { StatusBoard } from "../../server/status-board.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

const log = getLogger("src/frontends/http/routes.ts");

export interface HttpFrontendOptions {
  maxInputSize: number;
  /** --http-restricted-api groups. */
  restricted?: Restrictions;
  /** The status page's data; the page is served only with one (--allow-status-page). */
  statusBoard?: StatusBoard;
  /** --http-header-forward-pattern: matching headers become request parameters. */
  headerForward?: RegExp;
}

const JSON_HEADERS = { "content-type": "application/json" };
const EMPTY_OK: HttpResponse = { status: 200, headers: {} };

const json = (status: number, value: unknown): HttpResponse => ({ status, headers: JSON_HEADERS, body: JSON.stringify(value) });
export const errorResponse = (status: number, message: string, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { ...JSON_HEADERS, ...headers },
  body: JSON.stringify({ error: message }),
});

const METHOD_NOT_ALLOWED = () => errorResponse(405, "Method Not Allowed");
const NOT_FOUND = () => errorResponse(404, "Not Found");

/**
 * A path segment with its %-escapes decoded (model, region and repository names); a `%`
 * not followed by two hex digits, or escapes that are not UTF-8, are INVALID_ARG (400).
 */
function decodeSegment(s: string): string {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    throw new ServerError(
      "INVALID_ARG",
      `malformed percent-encoding in URL path segment '${s.length > 64 ? `${s.slice(0, 64)}...` : s}': '%' must be followed by two hex digits and encode UTF-8`,
    );
  }
}

/** A JSON body (not infer) parsed with JSON.parse, after the nesting-depth check. */
export function parseJsonText(body: Uint8Array): unknown {
  checkJsonDepth(body);
  try {
    return JSON.parse(new TextDecoder().decode(body));
  } catch (err) {
    throw new ServerError("INVALID_ARG", `failed to parse the request JSON buffer: ${(err as Error).message}`);
  }
}

/** Builds the request handler for one server. */
export function createHttpHandler(server: InferenceServer, opts: HttpFrontendOptions) {
  async function route(req: HttpRequest): Promise<HttpResponse> {
    const parts = req.path.split("/").filter((p) => p.length > 0);
    if (parts[0] === "nereid" && opts.statusBoard) return statusRoute(req, opts.statusBoard, opts.restricted) ?? NOT_FOUND();
    if (parts[0] !== "v2") return NOT_FOUND();
    // A bad escape is refused wherever it is, not only in the segments read as names.
    if (req.path.includes("%")) for (const p of parts) decodeSegment(p);
    const method = req.method;
    const cross = changesState(method, parts) ? crossOrigin(req) : undefined;
    if (cross)
      return errorResponse(
        403,
        `cross-origin request refused (${cross}): this request changes the server's state and may come only from a client that is not a browser, or a page of the server's own origin`,
      );
    if (opts.restricted?.size) {
      const category = httpCategory(parts, method);
      const need = category && opts.restricted.get(category);
      if (need && req.header(need.key.toLowerCase()) !== need.value) {
        return errorResponse(403, `This API is restricted, expecting header '${need.key}'`);
      }
    }

    if (parts.length === 1) {
      if (method !== "GET") return METHOD_NOT_ALLOWED();
      return json(200, server.serverMetadata());
    }

    if (parts[1] === "health" && parts.length === 3) {
      if (method !== "GET") return METHOD_NOT_ALLOWED();
      return healthAnswer(parts[2]!, { live: server.isLive(), ready: server.isReady(), exiting: server.state === "EXITING" }) ?? NOT_FOUND();
    }

    if (parts[1] === "models") return modelRoute(req, parts.slice(2));
    if (parts[1] === "repository") return repositoryRoute(req, parts.slice(2));
    if (parts[1] === "trace" && parts[2] === "setting" && parts.length === 3) return traceRoute(req, undefined);
    if (parts[1] === "logging" && parts.length === 2) {
      if (method === "GET") return json(200, currentLogSettings());
      if (method !== "POST") return METHOD_NOT_ALLOWED();
      return json(200, updateLogSettings(await jsonObjectBody(req, "the logging settings")));
    }
    if (parts[1] === "systemsharedmemory") return sharedMemoryRoute(req, parts.slice(2), "system");
    if (parts[1] === "cudasharedmemory") return sharedMemoryRoute(req, parts.slice(2), "cuda");
    return NOT_FOUND();
  }

  /**
   * [region/<r>/]status (GET), region/<r>/register (POST; system: {key, offset,
   * byte_size}, CUDA: {raw_handle: {b64}, device_id, byte_size}), [region/<r>/]unregister (POST).
   */
  async function sharedMemoryRoute(req: HttpRequest, rest: string[], kind: "system" | "cuda"): Promise<HttpResponse> {
    let region: string | undefined;
    if (rest[0] === "region" && rest.length === 3) region = decodeSegment(rest[1]!);
    else if (rest.length !== 1) return NOT_FOUND();
    const action = rest[rest.length - 1];
    if (action === "status") {
      if (req.method !== "GET") return METHOD_NOT_ALLOWED();
      return json(200, server.sharedMemoryStatus(kind, region));
    }
    if (req.method !== "POST") return METHOD_NOT_ALLOWED();
    if (action === "unregister") {
      server.unregisterSharedMemory(kind, region);
      return EMPTY_OK;
    }
    if (action === "register" && region !== undefined) {
      const doc = (await jsonObjectBody(req, "a shared memory register request")) as {
        key?: unknown;
        offset?: unknown;
        byte_size?: unknown;
        device_id?: unknown;
        raw_handle?: { b64?: unknown };
      };
      const b64 = doc.raw_handle?.b64;
      server.registerSharedMemory(kind, region, {
        key: doc.key,
        offset: doc.offset,
        byteSize: doc.byte_size,
        deviceId: doc.device_id,
        rawHandle: typeof b64 === "string" ? Buffer.from(b64, "base64") : undefined,
      });
      return EMPTY_OK;
    }
    return NOT_FOUND();
  }

  /** The request body as a JSON object; `what` names it in the error. */
  async function jsonObjectBody(req: HttpRequest, what: string): Promise<Record<string, unknown>> {
    const doc = parseJsonText(await readBody(req, opts.maxInputSize));
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new ServerError("INVALID_ARG", `${what} must be a JSON object`);
    return doc as Record<string, unknown>;
  }

  /** GET|POST /v2/trace/setting and /v2/models/<m>/trace/setting. */
  async function traceRoute(req: HttpRequest, model: string | undefined): Promise<HttpResponse> {
    if (req.method === "GET") return json(200, server.traceSetting(model));
    if (req.method !== "POST") return METHOD_NOT_ALLOWED();
    server.traceSetting(model); // trace enabled and the model known, before the body is read
    return json(200, server.traceSetting(model, await jsonObjectBody(req, "the trace settings")));
  }

  async function modelRoute(req: HttpRequest, rest: string[]): Promise<HttpResponse> {
    const method = req.method;
    if (rest.length === 1 && rest[0] === "stats") {
      if (method !== "GET") return METHOD_NOT_ALLOWED();
      await server.statisticsSettled();
      return json(200, server.modelStatistics());
    }
    if (rest.length === 0) return NOT_FOUND();
    const model = decodeSegment(rest[0]!);
    let i = 1;
    let version: string | undefined;
    if (rest[i] === "versions") {
      version = rest[i + 1];
      if (version === undefined || !/^[0-9]+$/.test(version)) return NOT_FOUND();
      i += 2;
    }
    const action = rest[i];
    if (action === "trace" && rest[i + 1] === "setting" && rest.length === i + 2 && version === undefined) return traceRoute(req, model);
    if (rest.length > i + 1) return NOT_FOUND();
    switch (action) {
      case undefined:
        if (method !== "GET") return METHOD_NOT_ALLOWED();
        return json(200, server.modelMetadata(model, version));
      case "ready":
        if (method !== "GET") return METHOD_NOT_ALLOWED();
        return server.modelReady(model, version) ? EMPTY_OK : errorResponse(400, "Model version not ready");
      case "config":
        if (method !== "GET") return METHOD_NOT_ALLOWED();
        return json(200, server.modelConfig(model, version));
      case "stats":
        if (method !== "GET") return METHOD_NOT_ALLOWED();
        await server.statisticsSettled();
        return json(200, server.modelStatistics(model, version));
      case "infer":
        if (method !== "POST") return METHOD_NOT_ALLOWED();
        return handleInfer(server, req, model, version, opts.maxInputSize, opts.headerForward);
      case "generate":
      case "generate_stream":
        if (method !== "POST") return METHOD_NOT_ALLOWED();
        return handleGenerate(server, req, model, version, opts.maxInputSize, action === "generate_stream", opts.headerForward);
      default:
        return NOT_FOUND();
    }
  }

  async function repositoryRoute(req: HttpRequest, rest: string[]): Promise<HttpResponse> {
    if (req.method !== "POST") return METHOD_NOT_ALLOWED();
    if ((rest.length === 1 || rest.length === 2) && rest[rest.length - 1] === "index") {
      const repositoryName = rest.length === 2 ? decodeSegment(rest[0]!) : undefined;
      const body = await readBody(req, opts.maxInputSize);
      let readyOnly = false;
      if (body.byteLength > 0) {
        const parsed = parseJsonText(body);
        const ready = (parsed as { ready?: unknown } | null)?.ready;
        if (ready !== undefined && typeof ready !== "boolean") throw new ServerError("INVALID_ARG", "'ready' must be a boolean");
        readyOnly = ready === true;
      }
      return json(200, server.repositoryIndex(readyOnly, repositoryName));
    }
    if (rest.length === 3 && rest[0] === "models" && (rest[2] === "load" || rest[2] === "unload")) {
      server.checkRepositoryControl(); // before the body is read
      const params = repositoryParameters(await readBody(req, opts.maxInputSize));
      const model = decodeSegment(rest[1]!);
      if (rest[2] === "unload") await server.repositoryUnload(model, params);
      else await server.repositoryLoad(model, params);
      return EMPTY_OK;
    }
    if (rest.length === 4 && rest[1] === "models") {
      server.checkRepositoryControl(decodeSegment(rest[0]!));
    }
    return NOT_FOUND();
  }

  return async function handle(req: HttpRequest): Promise<HttpResponse> {
    try {
      // The common request, inference on a plain path, goes straight to its handler: it
      // is what route() would do for it (no restrictions set, no escapes in the path).
      const infer = req.method === "POST" && !opts.restricted?.size ? inferTarget(req.path) : undefined;
      if (infer) return await handleInfer(server, req, infer.model, infer.version, opts.maxInputSize, opts.headerForward);
      return await route(req);
    } catch (err) {
      const e = ServerError.from(err);
      logFailure(log, `${req.method} ${req.path}`, e.code, e.message);
      const extra: Record<string, string> = e.code === "UNSUPPORTED" && /Content-Encoding/.test(e.message) ? { "accept-encoding": "gzip, deflate" } : {};
      const res = errorResponse(httpStatus(e.code), e.message, extra);
      if (e.inResponse) res.inResponse = true;
      return res;
    }
  };
}

export type HttpHandler = ReturnType<typeof createHttpHandler>;

/** The `parameters` object of a load/unload body (an empty body means none). */
function repositoryParameters(body: Uint8Array): Record<string, string | number | boolean> {
  if (body.byteLength === 0) return {};
  const parsed = parseJsonText(body);
  const params = (parsed as { parameters?: unknown } | null)?.parameters;
  if (params === undefined) return {};
  if (typeof params !== "object" || params === null || Array.isArray(params)) throw new ServerError("INVALID_ARG", "'parameters' must be a JSON object");
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(params)) {
    if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") {
      throw new ServerError("INVALID_ARG", `repository parameter '${k}' must be a string, number or boolean`);
    }
    out[k] = v;
  }
  return out;
}
