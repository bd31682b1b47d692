/**
 * @module The OpenAI-compatible routes (--openai-port), as Triton's OpenAI frontend
 * serves them: GET /v1/models, GET /v1/models/{model}, POST /v1/completions, POST
 * /v1/chat/completions and GET /health/ready. Bodies are bounded by
 * --http-max-input-size (413 beyond it, as Triton's frontend answers). No route changes
 * the server's state, so no cross-origin request is refused (as inference on the HTTP
 * frontend), and no CORS header is sent: a page of another origin cannot read an answer.
 */
import { ServerError } from "../../core/errors.ts";
import { getLogger, logFailure } from "../../core/logger.ts";
import { readBody } from "../http/body.ts";
import { parseJsonText } from "../http/routes.ts";
import { handleCompletion } from "./completions.ts";
import { FieldError, errorAnswer } from "./errors.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { HttpRequest, HttpResponse } from "../http/types.ts";

const log = getLogger("src/frontends/openai/routes.ts");

export interface OpenAiFrontendOptions {
  /** --http-max-input-size. */
  maxInputSize: number;
}

/** Triton's frontend names itself the owner of every model. */
const OWNED_BY = "Triton Inference Server";

const json = (value: unknown): HttpResponse => ({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(value) });

export function createOpenAiHandler(server: InferenceServer, opts: OpenAiFrontendOptions): (req: HttpRequest) => Promise<HttpResponse> {
  /** When each model was first listed: OpenAI's `created` (Triton's frontend gives the time it found the model). */
  const created = new Map<string, number>();
  const models = () =>
    [...new Set(server.repositoryIndex(true).map((m) => m.name))].map((id) => {
      if (!created.has(id)) created.set(id, Math.floor(Date.now() / 1000));
      return { id, object: "model", created: created.get(id)!, owned_by: OWNED_BY };
    });

  async function body(req: HttpRequest): Promise<Record<string, unknown>> {
    let bytes: Uint8Array;
    try {
      bytes = await readBody(req, opts.maxInputSize);
    } catch (err) {
      const e = ServerError.from(err);
      if (e.message.startsWith("Request JSON size of")) throw new FieldError(e.message, undefined, { status: 413 });
      throw e;
    }
    const doc = parseJsonText(bytes);
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new FieldError("the request body must be a JSON object");
    return doc as Record<string, unknown>;
  }

  async function route(req: HttpRequest): Promise<HttpResponse> {
    const { method, path } = req;
    const only = (m: string) => {
      if (method !== m) throw new FieldError("Method Not Allowed", undefined, { status: 405 });
    };
    if (path === "/v1/completions" || path === "/v1/chat/completions") {
      only("POST");
      return handleCompletion(server, req, await body(req), path === "/v1/chat/completions");
    }
    if (path === "/v1/models") {
      only("GET");
      return json({ object: "list", data: models() });
    }
    if (path.startsWith("/v1/models/")) {
      only("GET");
      let id: string;
      try {
        id = decodeURIComponent(path.slice("/v1/models/".length));
      } catch {
        throw new FieldError("malformed percent-encoding in the model name", "model");
      }
      const model = models().find((m) => m.id === id);
      if (!model) throw new FieldError(`Unknown model: ${id}`, "model", { code: "NOT_FOUND" });
      return json(model);
    }
    if (path === "/health/ready") {
      only("GET");
      if (!server.isReady())
        throw new FieldError("Attached inference engine is not ready for inference requests.", undefined, { code: "UNAVAILABLE", status: 400 });
      return { status: 200, headers: {} };
    }
    throw new FieldError("Not Found", undefined, { code: "NOT_FOUND" });
  }

  return async (req) => {
    try {
      return await route(req);
    } catch (err) {
      const e = ServerError.from(err);
      logFailure(log, `${req.method} ${req.path}`, e.code, e.message);
      return errorAnswer(e);
    }
  };
}
