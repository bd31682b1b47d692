/**
 * HTTP cases for the routes beside /infer (#29): the generate extension's flat JSON bodies
 * (P-31, `/generate` and `/generate_stream`), and the SageMaker (`/ping`, `/invocations`,
 * `/models/...`) and Vertex AI (health, predict, predict with a redirect header) frontends'
 * requests, with their binary content types. Mostly well formed for the fuzz repository's
 * models, then mutated at the structure, token or byte level as the infer cases are.
 */
import type { Rng } from "./rng.ts";
import { MODELS } from "./models.ts";
import { raw, setMember, toJsonText, edgeValue, ODD_STRINGS, type Doc } from "./json-text.ts";
import { mutateStructure, mutateTokens, mutateBytes, concat } from "./mutate.ts";
import { genInferCase, type HttpCase } from "./http-gen.ts";

const utf8 = new TextEncoder();

/** The Vertex AI routes the fuzz server is started with (`AIP_PREDICT_ROUTE`, `AIP_HEALTH_ROUTE`). */
export const VERTEX_ROUTES = { predict: "/predict", health: "/health" };

/** A generate value for an input of `datatype`: a scalar, a flat list, or something odd. */
function generateValue(datatype: string, r: Rng): Doc {
  const one = (): Doc => {
    if (r.chance(0.1)) return edgeValue(r);
    switch (datatype) {
      case "BYTES":
        return r.chance(0.8) ? r.pick(["", "hello", "é", "\u{1F600}", "x".repeat(r.pick([1, 100, 5000]))]) : raw(r.pick(ODD_STRINGS));
      case "INT64":
        return r.chance(0.2) ? raw(r.pick(["9007199254740993", "-9223372036854775808", "18446744073709551616"])) : r.int(2001) - 1000;
      default:
        return r.int(255) - 127;
    }
  };
  return r.weighted([
    [3, () => one()],
    [5, () => Array.from({ length: r.pick([1, 2, 16, 17, 0, 300]) }, one)],
    [1, () => [[one(), one()], [one()]]],
    [0.5, () => ({ b64: "AAAA" })],
    [0.3, () => null],
  ] as const)();
}

/** A flat generate body: `id`, the model's inputs as keys, request parameters, `parameters`. */
function generateDoc(r: Rng): { model: string; doc: Doc } {
  const m = r.pick(MODELS);
  const doc: Record<string, Doc> = {};
  if (r.chance(0.3)) doc.id = r.pick<Doc>(["g", "", "a".repeat(300), 5, null, raw('"\\ud800"')]);
  for (const t of m.inputs) if (r.chance(0.9)) doc[t.name] = generateValue(t.datatype, r);
  if (m.sequence || r.chance(0.05)) {
    doc.sequence_id = r.chance(0.8) ? r.int(4) + 1 : r.pick<Doc>(["s", 2n ** 64n - 1n, -1, 1.5, "a\nb\u001b[31m"]);
    doc.sequence_start = r.chance(0.9) ? true : r.pick<Doc>([false, "true", 1]);
    doc.sequence_end = r.chance(0.95) ? true : r.pick<Doc>([false, null]);
  }
  if (r.chance(0.2)) {
    const p: Record<string, Doc> = {};
    for (let i = r.range(1, 3); i > 0; i--) {
      setMember(
        p,
        r.pick(["temperature", "max_tokens", "stream", "INPUT0", "triton_x", "priority", "timeout", "__proto__", "binary_data_output"]),
        edgeValue(r),
      );
    }
    doc.parameters = r.chance(0.9) ? p : r.pick<Doc>([[], "x", null, 5]);
  }
  if (r.chance(0.1)) setMember(doc, r.pick(["stream", "text_input", "__proto__", "constructor", "outputs", "inputs"]), edgeValue(r));
  return { model: m.name, doc };
}

/** The JSON of `doc`, mutated at the level the Rng picks. */
function mutatedJson(doc: Doc, r: Rng, words: readonly string[]): Uint8Array {
  for (let i = r.chance(0.2) ? r.range(1, 3) : 0; i > 0; i--) doc = mutateStructure(doc, r);
  let text = toJsonText(doc, r.chance(0.1));
  if (r.chance(0.1)) text = mutateTokens(text, r, words);
  let bytes: Uint8Array = utf8.encode(text);
  if (r.chance(0.08)) bytes = mutateBytes(bytes, r);
  return bytes;
}

const GENERATE_WORDS = ["id", "INPUT0", "INPUT1", "INPUT", "parameters", "sequence_id", "sequence_start", "sequence_end", "priority", "timeout"];

/** A `/generate` or `/generate_stream` request. */
export function genGenerateCase(r: Rng): HttpCase {
  const { model, doc } = generateDoc(r);
  const body = mutatedJson(doc, r, GENERATE_WORDS);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (r.chance(0.05)) headers["content-encoding"] = r.pick(["gzip", "br", "identity", ""]);
  const version = r.weighted([
    [9, ""],
    [1, "/versions/1"],
    [0.3, "/versions/9"],
    [0.2, "/versions/%zz"],
  ] as const);
  const name = r.chance(0.95) ? model : r.pick(["nope", "%zz", "..%2fx", "x".repeat(300)]);
  const route = r.chance(0.5) ? "generate" : "generate_stream";
  return { method: r.chance(0.97) ? "POST" : r.pick(["GET", "PUT"]), path: `/v2/models/${name}${version}/${route}`, headers, body };
}

/**
 * The infer case's JSON and binary part with the binary length moved from
 * Inference-Header-Content-Length into a frontend's content type (`mime` + the length),
 * as SageMaker and Vertex AI clients announce it; sometimes wrongly.
 */
function withBinaryContentType(c: HttpCase, mime: string, r: Rng): HttpCase {
  const headers = { ...c.headers };
  const declared = headers["inference-header-content-length"];
  delete headers["inference-header-content-length"];
  if (declared !== undefined || r.chance(0.05)) {
    const n = declared ?? String(r.int(c.body.length + 2));
    headers["content-type"] = mime + (r.chance(0.9) ? n : r.pick(["", "-1", "abc", "1e3", String(c.body.length + 1), "2147483648"]));
  } else if (r.chance(0.5)) {
    headers["content-type"] = r.pick(["application/json", "text/plain", mime.replace(/=$/, ""), ""]);
  }
  return { ...c, headers };
}

const SAGEMAKER_MIME = "application/vnd.sagemaker-triton.binary+json;json-header-size=";
const VERTEX_MIME = "application/vnd.vertex-ai-triton.binary+json;json-header-size=";

/**
 * A request to the SageMaker listener, started with SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=simple:
 * mostly `/invocations` with an infer body (for any model: only `simple` fits), the rest
 * `/ping`, the multi-model routes Nereid never serves, and odd paths.
 */
export function genSagemakerCase(r: Rng): HttpCase {
  return r.weighted([
    [8, () => ({ ...withBinaryContentType(genInferCase(r), SAGEMAKER_MIME, r), path: "/invocations" })],
    [1, () => ({ method: r.pick(["GET", "POST"]), path: "/ping", headers: {}, body: new Uint8Array(0) })],
    [
      1,
      () => ({
        method: r.pick(["GET", "POST", "DELETE"]),
        path: r.pick(["/models", "/models/", "/models/simple", "/models/simple/invoke", "/models/%2e%2e%2fetc/invoke", "/x", "/invocations/x", "/%zz"]),
        headers: { "content-type": "application/json" },
        body: utf8.encode(toJsonText({ model_name: r.pick(["simple", "../x"]), url: r.pick(["/opt/ml/models/x", "../../etc", "s3://b/k"]) })),
      }),
    ],
  ] as const)();
}

/** The redirect targets a Vertex AI client may name: every protocol endpoint, allowed or not, and odd ones. */
const REDIRECTS = [
  "v2",
  "v2/health/live",
  "v2/health/ready",
  "v2/models/simple",
  "v2/models/simple/ready",
  "v2/models/simple/config",
  "v2/models/simple/stats",
  "v2/models/stats",
  "v2/models/simple/versions/1/infer",
  "v2/models/simple/infer",
  "v2/models/nope/infer",
  "v2/repository/index",
  "v2/repository/models/simple/load",
  "v2/repository/models/simple/unload",
  "v2/systemsharedmemory/status",
  "v2/systemsharedmemory/region/r0/register",
  "v2/cudasharedmemory/region/r0/unregister",
  "v2/trace/setting",
  "v2/logging",
  "metrics",
  "",
  "/",
  "../v2/health/ready",
  "v2/models/%zz/infer",
  "v2/models/simple/generate",
  "x".repeat(300),
];

/**
 * A request to the Vertex AI listener (default model `simple`): predict with an infer body,
 * predict with a redirect header to any endpoint, health, and odd paths and methods.
 */
export function genVertexCase(r: Rng): HttpCase {
  const c = withBinaryContentType(genInferCase(r), VERTEX_MIME, r);
  return r.weighted([
    [5, () => ({ ...c, path: VERTEX_ROUTES.predict })],
    [
      4,
      () => {
        const redirect = r.pick(REDIRECTS);
        const body = /infer$/.test(redirect) ? c.body : r.chance(0.5) ? new Uint8Array(0) : concat(utf8.encode(toJsonText(edgeValue(r))));
        return {
          ...c,
          method: r.chance(0.9) ? "POST" : "GET",
          path: VERTEX_ROUTES.predict,
          headers: { ...c.headers, "x-vertex-ai-triton-redirect": redirect },
          body,
        };
      },
    ],
    [
      1,
      () => ({
        method: r.pick(["GET", "POST"]),
        path: r.pick([VERTEX_ROUTES.health, "/", "/predict/x", "/v2/health/ready", "/%zz"]),
        headers: {},
        body: new Uint8Array(0),
      }),
    ],
  ] as const)();
}
