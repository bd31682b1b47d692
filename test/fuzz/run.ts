/**
 * The fuzz loops and their oracles, shared by the vitest suite (fixed seeds, bounded
 * counts) and scripts/fuzz.ts (longer, by time).
 *
 * HTTP: never 500 or a status outside Triton's map (P-08); every error body is exactly
 * {"error": "<non-empty string>"} of at most 4 KiB, and not the backend's (a request that
 * passes validation must run on these models); a 200 body parses; no case takes
 * longer than the timeout; the connection is not dropped; the server does not die; and
 * the known-good request keeps getting its exact answer every `checkEvery` cases.
 * gRPC: never INTERNAL or UNKNOWN (G-09), except grpc-js's own "Error deserializing
 * request" for bytes that are not the message (gRPC C++ answers Triton's clients the
 * same way); details of at most 4 KiB; an OK ModelInfer answer decodes; no drop, death
 * or hang, and the known-good ModelInfer keeps its answer.
 * pbtxt (in process): parsePbtxt → validateConfigFileNames → normalizeModelConfig →
 * validateModelConfig, and configFromJson on JSON configs, return or throw a ServerError,
 * never anything else, each within a second; a config that parses prints back to the
 * same config (C-02) and its /config JSON (P-16) reads back as a config.
 */
import http from "node:http";
import net from "node:net";
import { gunzipSync, inflateSync } from "node:zlib";
import { isDeepStrictEqual } from "node:util";
import { Rng } from "./rng.ts";
import { genInferCase, genRouteCase, genLoadCase, KNOWN_GOOD, KNOWN_GOOD_MODELS, type HttpCase, type LoadFiles } from "./http-gen.ts";
import { genGenerateCase, genSagemakerCase, genVertexCase } from "./gateway-gen.ts";
import { genGrpcCase, rawGrpcClient, type GrpcCase, type GrpcAnswer } from "./grpc-gen.ts";
import { genPbtxtCase, genConfigDoc, mutateConfigDoc } from "./pbtxt-gen.ts";
import { mutateStructure, mutateTokens } from "./mutate.ts";
import { toJsonText } from "./json-text.ts";
import { knownOpen } from "./known-open.ts";
import { ServerError } from "../../src/core/errors.ts";
import { parsePbtxt, printPbtxt } from "../../src/model-config/pbtxt.ts";
import { normalizeModelConfig } from "../../src/model-config/normalize.ts";
import { validateModelConfig, validateConfigFileNames } from "../../src/model-config/validate.ts";
import { configFromJson, configToJson } from "../../src/model-config/json.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import { messageType } from "../../src/frontends/grpc/protos.ts";

export type Target = "http" | "load" | "grpc" | "pbtxt" | "generate" | "sagemaker" | "vertex" | "cache-entry" | "listing";
/** cache-entry and listing: store-run.ts. */
export const TARGETS: readonly Target[] = ["http", "load", "grpc", "pbtxt", "generate", "sagemaker", "vertex", "cache-entry", "listing"];

export interface Finding {
  target: Target;
  seed: number;
  index: number;
  problem: string;
  /** What was sent, as a readable summary (method, path, headers) and the body bytes. */
  request: string;
  input: Uint8Array;
  answer?: string;
  /** The KNOWN_OPEN entry it matches, when it is a known issue (#14) not fixed on this branch. */
  known?: string;
}

export interface TargetStats {
  target: Target;
  cases: number;
  outcomes: Map<string, number>;
  findings: Finding[];
  ms: number;
}

/** A running server as the loops see it; `restart` (scripts only) replaces one that died. */
export interface FuzzServer {
  url: string;
  grpcTarget: string;
  /** The SageMaker and Vertex AI listeners, when the server runs them. */
  sagemakerUrl?: string;
  vertexUrl?: string;
  alive(): boolean;
  /** The first line the server logged since the last call that says a worker thread failed or ended, if any (the process lives on and starts another). */
  threadFailed?(): string | undefined;
  restart?(): Promise<FuzzServer>;
}

/** The problem of a case after which the server died or one of its worker threads failed, with what else was wrong. */
function deathOf(server: FuzzServer, problem: string | undefined): string | undefined {
  const also = problem ? ` (${problem})` : "";
  if (!server.alive()) return `server died${also}`;
  const failed = server.threadFailed?.();
  return failed ? `${failed.trim().slice(0, 300)}${also}` : problem;
}

export interface RunOptions {
  seed: number;
  /** The first case's index (a replay starts where the finding was). */
  first?: number;
  /** Stop after this many cases… */
  count?: number;
  /** …or at this Date.now(). */
  deadline?: number;
  /** Known-good request every this many cases. */
  checkEvery?: number;
  timeoutMs?: number;
  /** Called for each finding as it happens (the script writes it out). */
  onFinding?: (f: Finding) => void;
}

const MAX_ERROR = 4096;
/** The fuzz repository's models are plain: a request that passed validation runs, so a backend error means validation let a bad one through. */
const BACKEND_REFUSED = /^onnxruntime:/;
const ALLOWED_HTTP = new Set([200, 400, 404, 405, 501, 503]);

export function stats(target: Target): TargetStats {
  return { target, cases: 0, outcomes: new Map(), findings: [], ms: 0 };
}

export function count(s: TargetStats, key: string) {
  s.outcomes.set(key, (s.outcomes.get(key) ?? 0) + 1);
}

export const more = (i: number, o: RunOptions) =>
  (o.count === undefined || i < (o.first ?? 0) + o.count) && (o.deadline === undefined || Date.now() < o.deadline);

export function record(s: TargetStats, o: RunOptions, f: Omit<Finding, "known">) {
  const finding: Finding = { ...f, known: knownOpen(f) };
  s.findings.push(finding);
  o.onFinding?.(finding);
}

// ------------------------------------------------------------------------------- HTTP

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  ms: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/**
 * How a case's body is framed on the wire: with Content-Length (what most clients send),
 * chunked, or not at all, which sends no body (`curl -X POST` with no data sends that).
 */
export type Framing = "length" | "chunked" | "none";

/** node:http chunks a body without a Content-Length only for these methods; for the others it would send it unframed. */
const CHUNKED_BY_DEFAULT = new Set(["POST", "PUT", "PATCH"]);

/**
 * The framing of the loops' case `i`: mostly Content-Length; every eighth case with no
 * body at all, and every eighth (of those node:http chunks) chunked. A function of the
 * index only, so a replayed case is framed as it was.
 */
export function framingOf(i: number, c: HttpCase): Framing {
  if (i % 8 === 5) return "none";
  if (i % 8 === 2 && c.body.length > 0 && CHUNKED_BY_DEFAULT.has(c.method)) return "chunked";
  return "length";
}

/** Sends `c` as is (the path unnormalized) and reads the whole answer. `none` drops the body (see Framing). */
export function sendHttp(url: string, c: HttpCase, timeoutMs = 10_000, framing: Framing = "length"): Promise<HttpAnswer> {
  if (framing === "none") return sendBodiless(url, c, timeoutMs);
  const { hostname, port } = new URL(url);
  const t0 = performance.now();
  const headers = framing === "length" ? { ...c.headers, "content-length": String(c.body.length) } : c.headers;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method: c.method, path: c.path, agent, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - t0 }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(c.body);
  });
}

/**
 * `c` with no body and neither Content-Length nor Transfer-Encoding, on a connection of
 * its own that the server closes after its answer (node:http always frames a request).
 */
function sendBodiless(url: string, c: HttpCase, timeoutMs: number): Promise<HttpAnswer> {
  const { hostname, port } = new URL(url);
  const t0 = performance.now();
  const lines = [`${c.method} ${c.path} HTTP/1.1`, `host: ${hostname}:${port}`, "connection: close"];
  for (const [k, v] of Object.entries(c.headers)) lines.push(`${k}: ${v}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    socket.on("connect", () => socket.write(`${lines.join("\r\n")}\r\n\r\n`));
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", reject);
    socket.on("close", () => {
      const a = parseAnswer(Buffer.concat(chunks));
      if (typeof a === "string") reject(new Error(a));
      else resolve({ ...a, ms: performance.now() - t0 });
    });
  });
}

/** One HTTP/1.1 answer read to the connection's end, or what is wrong with it. */
function parseAnswer(bytes: Buffer): Omit<HttpAnswer, "ms"> | string {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0)
    return bytes.length === 0
      ? "the connection closed without an answer"
      : `an answer without a header's end: ${JSON.stringify(bytes.subarray(0, 200).toString())}`;
  const [statusLine, ...fields] = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? "")?.[1];
  if (status === undefined) return `an answer whose status line is ${JSON.stringify(statusLine)}`;
  const headers: http.IncomingHttpHeaders = {};
  for (const f of fields) {
    const colon = f.indexOf(":");
    headers[f.slice(0, colon).trim().toLowerCase()] = f.slice(colon + 1).trim();
  }
  let body = bytes.subarray(end + 4);
  if (headers["transfer-encoding"] === "chunked") {
    const parts: Buffer[] = [];
    for (let at = 0; ; ) {
      const eol = body.indexOf("\r\n", at);
      const size = eol < 0 ? Number.NaN : Number.parseInt(body.subarray(at, eol).toString(), 16);
      if (!(size >= 0)) return "a chunked answer that does not parse";
      if (size === 0) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (headers["content-length"] !== undefined) {
    body = body.subarray(0, Number(headers["content-length"]));
  }
  return { status: Number(status), headers, body };
}

function decoded(a: HttpAnswer): Buffer {
  const enc = a.headers["content-encoding"];
  if (enc === "gzip") return gunzipSync(a.body);
  if (enc === "deflate") return inflateSync(a.body);
  return a.body;
}

/** What is wrong with answer `a` to an HTTP case, if anything. */
export function httpProblem(a: HttpAnswer, timeoutMs: number): string | undefined {
  if (a.ms > timeoutMs) return `slow: answered after ${Math.round(a.ms)} ms`;
  if (a.status === 500) return `HTTP 500: ${a.body.subarray(0, 300).toString()}`;
  if (!ALLOWED_HTTP.has(a.status)) return `HTTP ${a.status} is not a status Triton answers with`;
  let body: Buffer;
  try {
    body = decoded(a);
  } catch (err) {
    return `HTTP ${a.status} body does not decompress as ${a.headers["content-encoding"]}: ${(err as Error).message}`;
  }
  if (a.status === 200 && String(a.headers["content-type"] ?? "").startsWith("text/event-stream")) return sseProblem(body.toString());
  if (a.status === 200) {
    const head = a.headers["inference-header-content-length"];
    const json = head === undefined ? body : body.subarray(0, Number(head));
    if (head !== undefined && !(Number(head) >= 0 && Number(head) <= body.length))
      return `200 with Inference-Header-Content-Length ${head} for a ${body.length}-byte body`;
    if (json.length === 0) return undefined;
    try {
      JSON.parse(json.toString());
    } catch {
      return `200 whose JSON does not parse: ${json.subarray(0, 200).toString()}`;
    }
    return undefined;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString());
  } catch {
    return `HTTP ${a.status} without a JSON error body: ${JSON.stringify(body.subarray(0, 200).toString())}`;
  }
  const keys = doc && typeof doc === "object" && !Array.isArray(doc) ? Object.keys(doc) : [];
  const error = (doc as { error?: unknown })?.error;
  if (keys.length !== 1 || typeof error !== "string" || error.length === 0)
    return `HTTP ${a.status} error body is not {"error": "<message>"}: ${body.subarray(0, 200).toString()}`;
  if (error.length > MAX_ERROR) return `HTTP ${a.status} error message of ${error.length} characters (over ${MAX_ERROR})`;
  if (BACKEND_REFUSED.test(error)) return `the backend, not request validation, refused it: ${error.slice(0, 300)}`;
  return undefined;
}

/** A `generate_stream` answer: `data: <json>` events, each a response object or `{"error": ...}` of at most 4 KiB. */
function sseProblem(text: string): string | undefined {
  const events = text.split("\n\n").filter((e) => e !== "");
  if (events.length === 0) return "200 event stream with no event";
  for (const e of events) {
    if (!e.startsWith("data: ")) return `event stream with an event that is not 'data: ': ${JSON.stringify(e.slice(0, 200))}`;
    let doc: unknown;
    try {
      doc = JSON.parse(e.slice(6));
    } catch {
      return `event stream with an event whose JSON does not parse: ${e.slice(0, 200)}`;
    }
    if (!doc || typeof doc !== "object" || Array.isArray(doc)) return `event stream with an event that is not an object: ${e.slice(0, 200)}`;
    const error = (doc as { error?: unknown }).error;
    if (error !== undefined && (typeof error !== "string" || error.length === 0 || error.length > MAX_ERROR || Object.keys(doc).length !== 1)) {
      return `event stream with a malformed error event: ${e.slice(0, 300)}`;
    }
  }
  return undefined;
}

/**
 * The cloud frontends' oracle: as httpProblem, except that an unknown route, a refused
 * redirect or a wrong method may answer with a bare status and no body, as Triton's
 * sagemaker_server.cc and vertex_ai_server.cc do.
 */
export function cloudProblem(a: HttpAnswer, timeoutMs: number): string | undefined {
  if ([400, 403, 405].includes(a.status) && a.body.length === 0 && a.ms <= timeoutMs) return undefined;
  const type = String(a.headers["content-type"] ?? "");
  // Metrics through a Vertex AI redirect are Prometheus text.
  if (a.status === 200 && type.startsWith("text/plain")) return a.ms > timeoutMs ? `slow: answered after ${Math.round(a.ms)} ms` : undefined;
  // A binary answer announces its JSON header's length in the content type, not in Inference-Header-Content-Length.
  const header = /json-header-size=(\d+)$/.exec(type)?.[1];
  if (a.status === 200 && header !== undefined) {
    if (a.headers["inference-header-content-length"] !== undefined) return "a binary answer with both json-header-size and Inference-Header-Content-Length";
    return httpProblem({ ...a, headers: { ...a.headers, "inference-header-content-length": header } }, timeoutMs);
  }
  return httpProblem(a, timeoutMs);
}

function describeHttp(c: HttpCase, framing: Framing = "length"): string {
  const how = { length: "", chunked: "\n(the body chunked)", none: "\n(no body: neither Content-Length nor Transfer-Encoding)" }[framing];
  return `${c.method} ${c.path}\n${Object.entries(c.headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\n")}${how}`;
}

/** The model of the known-good check after case `i`, checked every `every` cases: each of KNOWN_GOOD_MODELS in turn. */
const knownGoodModel = (i: number, every: number) => KNOWN_GOOD_MODELS[Math.floor(i / every) % KNOWN_GOOD_MODELS.length]!;

/** The known-good request's answer from `model`, or what is wrong with it. */
export async function checkKnownGoodHttp(url: string, model = "simple"): Promise<string | undefined> {
  try {
    const path = `/v2/models/${model}/infer`;
    const a = await sendHttp(url, { method: "POST", path, headers: {}, body: new TextEncoder().encode(KNOWN_GOOD.body) });
    if (a.status !== 200) return `known-good request to ${model} answered ${a.status}: ${a.body.subarray(0, 300).toString()}`;
    const out = (JSON.parse(a.body.toString()) as { outputs: { data: number[] }[] }).outputs[0]?.data;
    if (!isDeepStrictEqual(out, KNOWN_GOOD.output)) return `known-good request to ${model} answered ${JSON.stringify(out)}`;
    return undefined;
  } catch (err) {
    return `known-good request failed: ${(err as Error).message}`;
  }
}

/**
 * The HTTP loop over one kind of case (`make`): infer requests and other routes
 * (target "http") or explicit-mode loads (target "load").
 */
async function httpLoop(
  target: Target,
  server: FuzzServer,
  o: RunOptions,
  make: (r: Rng) => HttpCase,
  urlOf: (s: FuzzServer) => string | undefined = (s) => s.url,
  problemOf: (a: HttpAnswer, timeoutMs: number) => string | undefined = httpProblem,
): Promise<TargetStats> {
  const s = stats(target);
  const t0 = Date.now();
  const timeoutMs = o.timeoutMs ?? 10_000;
  const every = o.checkEvery ?? 50;
  for (let i = o.first ?? 0; more(i, o); i++) {
    const c = make(Rng.forCase(o.seed, target, i));
    const framing = framingOf(i, c);
    s.cases++;
    const base = { target, seed: o.seed, index: i, request: describeHttp(c, framing), input: framing === "none" ? new Uint8Array(0) : c.body };
    let problem: string | undefined;
    let answer: string | undefined;
    try {
      const url = urlOf(server);
      if (url === undefined) throw new Error(`the server runs no listener for the ${target} target`);
      const a = await sendHttp(url, c, timeoutMs, framing);
      count(s, String(a.status));
      problem = problemOf(a, timeoutMs);
      answer = `${a.status} ${a.body.subarray(0, 500).toString()}`;
    } catch (err) {
      count(s, "no answer");
      problem = `no answer: ${(err as Error).message}`;
    }
    problem = deathOf(server, problem);
    if (problem) record(s, o, { ...base, problem, answer });
    if (!server.alive()) {
      if (!server.restart) break;
      server = await server.restart();
    }
    if (i % every === every - 1) {
      const bad = await checkKnownGoodHttp(server.url, knownGoodModel(i, every));
      if (bad) record(s, o, { ...base, problem: `after this case: ${bad}` });
    }
  }
  s.ms = Date.now() - t0;
  return s;
}

/** Infer requests (85%) and other /v2 routes. */
export function fuzzHttp(server: FuzzServer, o: RunOptions) {
  return httpLoop("http", server, o, (r) => (r.chance(0.85) ? genInferCase(r) : genRouteCase(r)));
}

/** Explicit-mode loads of LOAD_TARGET with mutated JSON config overrides. */
export function fuzzLoad(server: FuzzServer, files: LoadFiles, o: RunOptions) {
  return httpLoop("load", server, o, (r) => genLoadCase(r, files));
}

/** The generate extension's flat bodies on `/generate` and `/generate_stream` (#29). */
export function fuzzGenerate(server: FuzzServer, o: RunOptions) {
  return httpLoop("generate", server, o, genGenerateCase);
}

/** SageMaker's `/invocations`, `/ping` and refused multi-model routes (#29). */
export function fuzzSagemaker(server: FuzzServer, o: RunOptions) {
  return httpLoop("sagemaker", server, o, genSagemakerCase, (s) => s.sagemakerUrl, cloudProblem);
}

/** Vertex AI's predict route, with and without a redirect header, and its health route (#29). */
export function fuzzVertex(server: FuzzServer, o: RunOptions) {
  return httpLoop("vertex", server, o, genVertexCase, (s) => s.vertexUrl, cloudProblem);
}

// ------------------------------------------------------------------------------- gRPC

const DESERIALIZE = "Error deserializing request";
/** OK and the codes Triton's status map gives client errors: CANCELLED, INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, UNIMPLEMENTED, UNAVAILABLE. */
const ALLOWED_GRPC = new Set([0, 1, 3, 5, 6, 12, 14]);
const DROPPED = /Connection dropped|No connection established|ECONNRESET|ECONNREFUSED|socket|Stream refused/i;
const RESET = /RST_STREAM|connection dropped|server died/i;

/** What is wrong with a gRPC answer, if anything. */
export function grpcProblem(c: GrpcCase, a: GrpcAnswer, ms: number, timeoutMs: number): string | undefined {
  if (a.code === 4 || ms > timeoutMs) return `no answer in ${timeoutMs} ms (${a.code}: ${a.details})`;
  if (a.code === 13 && a.details === DESERIALIZE) return undefined;
  if (a.code === 13 || a.code === 2) return `status ${a.code === 13 ? "INTERNAL" : "UNKNOWN"}: ${a.details.slice(0, 300)}`;
  if (a.code === 14 && DROPPED.test(a.details)) return `connection dropped: ${a.details}`;
  if (!ALLOWED_GRPC.has(a.code)) return `status ${a.code} is not one Triton's status map gives: ${a.details.slice(0, 300)}`;
  if (BACKEND_REFUSED.test(a.details)) return `the backend, not request validation, refused it: ${a.details.slice(0, 300)}`;
  if (a.details.length > MAX_ERROR) return `status ${a.code} details of ${a.details.length} characters (over ${MAX_ERROR})`;
  if (a.code === 0 && c.method === "ModelInfer") {
    try {
      messageType("inference.ModelInferResponse").decode(a.body!);
    } catch (err) {
      return `OK answer that is not a ModelInferResponse: ${(err as Error).message}`;
    }
  }
  for (const b of a.stream ?? []) {
    let res: { error_message?: string };
    try {
      res = messageType("inference.ModelStreamInferResponse").decode(b) as { error_message?: string };
    } catch (err) {
      return `stream response that is not a ModelStreamInferResponse: ${(err as Error).message}`;
    }
    const error = res.error_message ?? "";
    if (error.length > MAX_ERROR) return `stream error_message of ${error.length} characters (over ${MAX_ERROR})`;
    if (BACKEND_REFUSED.test(error)) return `the backend, not request validation, refused it: ${error.slice(0, 300)}`;
  }
  return undefined;
}

/** The known-good ModelInfer request's bytes, for `model`. */
const knownGoodGrpc = (model: string) => {
  const raw = (xs: number[]) => Buffer.from(Int32Array.from(xs).buffer);
  const t = messageType("inference.ModelInferRequest");
  return t
    .encode(
      t.fromObject({
        model_name: model,
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        outputs: [{ name: "OUTPUT0" }],
        raw_input_contents: [raw(Array.from({ length: 16 }, (_, i) => i)), raw(Array(16).fill(1))],
      }),
    )
    .finish();
};

export async function checkKnownGoodGrpc(client: ReturnType<typeof rawGrpcClient>, model = "simple"): Promise<string | undefined> {
  const a = await client.call("ModelInfer", knownGoodGrpc(model), 10_000);
  if (a.code !== 0) return `known-good ModelInfer to ${model} answered ${a.code}: ${a.details}`;
  const res = messageType("inference.ModelInferResponse").toObject(messageType("inference.ModelInferResponse").decode(a.body!)) as {
    raw_output_contents?: Uint8Array[];
  };
  const bytes = res.raw_output_contents?.[0];
  const out = bytes ? Array.from(new Int32Array(Uint8Array.from(bytes).buffer)) : undefined;
  return isDeepStrictEqual(out, KNOWN_GOOD.output) ? undefined : `known-good ModelInfer to ${model} answered ${JSON.stringify(out)}`;
}

export async function fuzzGrpc(server: FuzzServer, o: RunOptions): Promise<TargetStats> {
  const s = stats("grpc");
  const t0 = Date.now();
  const timeoutMs = o.timeoutMs ?? 10_000;
  const every = o.checkEvery ?? 50;
  let client = rawGrpcClient(server.grpcTarget);
  try {
    for (let i = o.first ?? 0; more(i, o); i++) {
      const c = genGrpcCase(Rng.forCase(o.seed, "grpc", i));
      s.cases++;
      const t = performance.now();
      const a = c.more ? await client.stream([c.body, ...c.more], timeoutMs) : await client.call(c.method, c.body, timeoutMs);
      const ms = performance.now() - t;
      count(s, `${c.more ? "stream " : ""}${a.code === 13 && a.details === DESERIALIZE ? "13 (undecodable)" : String(a.code)}`);
      const problem = deathOf(server, grpcProblem(c, a, ms, timeoutMs));
      const base = {
        target: "grpc" as const,
        seed: o.seed,
        index: i,
        request: c.more ? `${c.method} (${c.more.length + 1} messages; input.bin is the first)` : c.method,
        input: c.body,
      };
      if (problem) record(s, o, { ...base, problem, answer: `${a.code} ${a.details.slice(0, 500)}` });
      if (!server.alive()) {
        if (!server.restart) break;
        server = await server.restart();
      }
      if (problem && (!server.alive() || RESET.test(problem))) {
        // A fresh connection, so that the next case is not answered by this one's broken one.
        client.close();
        client = rawGrpcClient(server.grpcTarget);
      }
      if (i % every === every - 1) {
        const bad = await checkKnownGoodGrpc(client, knownGoodModel(i, every));
        if (bad) record(s, o, { ...base, problem: `after this case: ${bad}` });
      }
    }
  } finally {
    client.close();
  }
  s.ms = Date.now() - t0;
  return s;
}

// ------------------------------------------------------------------------------ pbtxt

const SLOW_MS = 1000;

export interface ConfigCheck {
  /** How far the config got: refused by the parser, refused by validation, or valid. */
  outcome: "syntax" | "invalid" | "valid";
  problem?: string;
}

function notServerError(what: string, err: unknown): string | undefined {
  if (err instanceof ServerError) return undefined;
  return `${what} threw ${(err as Error)?.name ?? typeof err}: ${(err as Error)?.message ?? String(err)}`;
}

function timed(check: ConfigCheck, t0: number): ConfigCheck {
  const ms = performance.now() - t0;
  return ms > SLOW_MS && !check.problem ? { ...check, problem: `slow: ${Math.round(ms)} ms` } : check;
}

/** Runs one config.pbtxt text through the load-time pipeline and the round trips. */
export function checkPbtxt(text: string): ConfigCheck {
  const t0 = performance.now();
  let config: ReturnType<typeof parsePbtxt>;
  try {
    config = parsePbtxt(text);
  } catch (err) {
    return timed({ outcome: "syntax", problem: notServerError("parsePbtxt", err) }, t0);
  }
  try {
    const printed = printPbtxt(config);
    const again = parsePbtxt(printed);
    if (!isDeepStrictEqual(again, config))
      return { outcome: "invalid", problem: `printPbtxt round trip: the printed config reads back different:\n${printed}` };
  } catch (err) {
    return { outcome: "invalid", problem: `printPbtxt round trip threw ${(err as Error).name}: ${(err as Error).message}` };
  }
  try {
    configFromJson(JSON.parse(JSON.stringify(configToJson(config))));
  } catch (err) {
    return { outcome: "invalid", problem: `the /config JSON of a parsed config does not read back: ${(err as Error).name}: ${(err as Error).message}` };
  }
  return timed(pipeline(config), t0);
}

/** The load-time checks, for a model folder named as the config says (a mismatch is one refusal among many). */
function pipeline(config: ModelConfig): ConfigCheck {
  const name = config.name || "fz";
  try {
    validateConfigFileNames(config, name);
    validateModelConfig(normalizeModelConfig(config, { modelName: name, gpuCount: 0 }), name);
    return { outcome: "valid" };
  } catch (err) {
    return { outcome: "invalid", problem: notServerError("validation", err) };
  }
}

/** A JSON config (the load override's form) through configFromJson and the pipeline. */
export function checkConfigJson(text: string): ConfigCheck {
  const t0 = performance.now();
  let config: ModelConfig;
  try {
    config = configFromJson(JSON.parse(text));
  } catch (err) {
    return timed({ outcome: "syntax", problem: err instanceof SyntaxError ? undefined : notServerError("configFromJson", err) }, t0);
  }
  return timed(pipeline(config), t0);
}

/** In-process: config.pbtxt texts (3 in 4) and JSON configs. */
export function fuzzPbtxt(o: RunOptions): TargetStats {
  const s = stats("pbtxt");
  const t0 = Date.now();
  const utf8 = new TextEncoder();
  for (let i = o.first ?? 0; more(i, o); i++) {
    const r = Rng.forCase(o.seed, "pbtxt", i);
    s.cases++;
    let text: string;
    let check: ConfigCheck;
    let kind: string;
    if (r.chance(0.75)) {
      kind = "pbtxt";
      text = genPbtxtCase(r);
      check = checkPbtxt(text);
    } else {
      kind = "json";
      let doc = genConfigDoc(r, "fz");
      for (
        let n = r.weighted([
          [1, 0],
          [3, 1],
          [2, 2],
          [1, 4],
        ] as const);
        n > 0;
        n--
      )
        doc = mutateConfigDoc(doc, r);
      if (r.chance(0.25)) doc = mutateStructure(doc, r);
      text = toJsonText(doc);
      if (r.chance(0.1)) text = mutateTokens(text, r);
      check = checkConfigJson(text);
    }
    const problem = check.problem;
    count(s, `${kind} ${check.outcome}`);
    if (problem)
      record(s, o, { target: "pbtxt", seed: o.seed, index: i, problem, request: kind === "pbtxt" ? "config.pbtxt" : "config JSON", input: utf8.encode(text) });
  }
  s.ms = Date.now() - t0;
  return s;
}

/** One line per target: cases, outcomes, findings (new and known). */
export function summary(s: TargetStats): string {
  const outcomes = [...s.outcomes.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k}×${v}`)
    .join(" ");
  const known = s.findings.filter((f) => f.known).length;
  return `${s.target}: ${s.cases} cases in ${(s.ms / 1000).toFixed(1)} s; ${outcomes}; findings: ${s.findings.length - known} new, ${known} known-open`;
}
