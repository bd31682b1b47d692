/**
 * @module GRPCInferenceService and grpc.health.v1.Health handlers: each translates a
 * request message into a call on the core and the result (or ServerError) back.
 */
import type { ServerUnaryCall, sendUnaryData, ServerDuplexStream, UntypedServiceImplementation, Metadata } from "@grpc/grpc-js";
import { currentLogSettings, updateLogSettings } from "../../core/log-settings.ts";
import { GRPC_CATEGORY, type Restrictions } from "../restricted.ts";
import { healthCheckReply, serverLiveReply, serverReadyReply } from "./health-replies.ts";
import { ServerError } from "../../core/errors.ts";
import { toGrpcError } from "./status.ts";
import { toInferenceRequest, fromInferenceResponse, type WireInferRequest } from "./convert.ts";
import { exactInteger } from "./parameters.ts";
import { streamInfer } from "./stream.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { InferenceResponse } from "../../core/request.ts";
import { forwardHeaders, type HeaderForwarder } from "../header-forward.ts";

export interface GrpcServiceOptions {
  /** --grpc-restricted-protocol groups. */
  restricted?: Restrictions;
  /** --grpc-header-forward-pattern: matching metadata becomes request parameters. */
  headerForward?: RegExp;
}

/** The call's text metadata as [name, value] pairs (binary `-bin` entries are not forwarded). */
export function metadataEntries(metadata: Metadata): [string, string][] {
  return Object.entries(metadata.getMap()).flatMap(([k, v]) => (typeof v === "string" ? [[k, v] as [string, string]] : []));
}

/**
 * Wraps each handler of `service` so that an RPC of a restricted group without metadata
 * `triton-grpc-protocol-<key>: <value>` fails with UNAVAILABLE, as Triton does.
 */
export function restrict(service: UntypedServiceImplementation, restricted: Restrictions | undefined): UntypedServiceImplementation {
  if (!restricted?.size) return service;
  const out: UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(service)) {
    const category = GRPC_CATEGORY[name];
    const need = category ? restricted.get(category) : undefined;
    if (!need) {
      out[name] = handler;
      continue;
    }
    const denied = () => toGrpcError(new ServerError("UNAVAILABLE", `This protocol is restricted, expecting header '${need.key}'`));
    const allowed = (md: Metadata) => md.get(`triton-grpc-protocol-${need.key}`).some((v) => String(v) === need.value);
    out[name] = ((call: { metadata: Metadata; emit?: unknown; end?: () => void; destroy?: (e: Error) => void }, callback?: (err: unknown) => void) => {
      if (allowed(call.metadata)) return (handler as (c: unknown, cb?: unknown) => void)(call, callback);
      if (callback) callback(denied());
      else (call as unknown as { emit(event: string, e: unknown): void }).emit("error", denied());
    }) as never;
  }
  return out;
}

type Handler = (request: any) => unknown | Promise<unknown>;

interface RepositoryControlRequest {
  repository_name?: string;
  model_name?: string;
  parameters?: Record<string, { parameter_choice?: string; bool_param?: boolean; int64_param?: bigint; string_param?: string; bytes_param?: Uint8Array }>;
}

/** ModelRepositoryParameter map → plain values (bytes stay bytes, int64 exact). */
function repositoryParameters(map: RepositoryControlRequest["parameters"]): Record<string, string | number | boolean | bigint | Uint8Array> {
  const out: Record<string, string | number | boolean | bigint | Uint8Array> = {};
  for (const [k, p] of Object.entries(map ?? {})) {
    const v = p.parameter_choice ? p[p.parameter_choice as keyof typeof p] : undefined;
    if (typeof v === "bigint") out[k] = exactInteger(v);
    else if ((v !== undefined && typeof v !== "object") || v instanceof Uint8Array) out[k] = v as string | boolean | Uint8Array;
  }
  return out;
}

function unary(fn: Handler) {
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    let result: unknown;
    try {
      result = fn(call.request);
    } catch (err) {
      callback(toGrpcError(err));
      return;
    }
    if (result instanceof Promise)
      result.then(
        (r) => callback(null, r),
        (err) => callback(toGrpcError(err)),
      );
    else callback(null, result);
  };
}

/**
 * A unary handler whose work is cancelled with its call (S-20): grpc-js emits 'cancelled'
 * when the client cancels, the connection drops or the deadline passes (then it has sent
 * DEADLINE_EXCEEDED itself), as Triton's handler learns from IsCancelled(). It also emits it
 * once the status is sent, so the listener goes before the answer: an abort then would
 * change nothing and cost each request its abort event (4% of a gRPC request's CPU).
 */
function cancellable(fn: (request: any, signal: AbortSignal, metadata: Metadata) => Promise<unknown>) {
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    const controller = new AbortController();
    const cancel = () => controller.abort();
    call.once("cancelled", cancel);
    const failed = (err: unknown) => {
      call.removeListener("cancelled", cancel);
      callback(toGrpcError(err));
    };
    let result: Promise<unknown>;
    try {
      result = fn(call.request, controller.signal, call.metadata);
    } catch (err) {
      failed(err);
      return;
    }
    result.then((r) => {
      call.removeListener("cancelled", cancel);
      callback(null, r);
    }, failed);
  };
}

/** Handlers for inference.GRPCInferenceService. */
export function inferenceService(server: InferenceServer, opts: GrpcServiceOptions): UntypedServiceImplementation {
  const repositoryControl = (action: "load" | "unload") => async (req: RepositoryControlRequest) => {
    if (action === "unload") await server.repositoryUnload(req.model_name ?? "", repositoryParameters(req.parameters), req.repository_name);
    else await server.repositoryLoad(req.model_name ?? "", repositoryParameters(req.parameters), req.repository_name);
    return {};
  };
  return {
    ServerLive: unary(() => serverLiveReply({ live: server.isLive() })),
    ServerReady: unary(() => serverReadyReply({ ready: server.isReady() })),
    ModelReady: unary((r: { name?: string; version?: string }) => {
      try {
        return { ready: server.modelReady(r.name ?? "", r.version || undefined) };
      } catch (err) {
        if (ServerError.from(err).code === "UNAVAILABLE") return { ready: false };
        throw err;
      }
    }),
    ServerMetadata: unary(() => server.serverMetadata()),
    ModelMetadata: unary((r: { name?: string; version?: string }) => server.modelMetadata(r.name ?? "", r.version || undefined)),
    ModelInfer: cancellable(async (r: WireInferRequest, signal, metadata) =>
      fromInferenceResponse(await infer(server, r, signal, forwarded(opts.headerForward, metadata))),
    ),
    ModelStreamInfer: (call: ServerDuplexStream<WireInferRequest, unknown>) => streamInfer(server, call, forwarded(opts.headerForward, call.metadata)),
    ModelConfig: unary((r: { name?: string; version?: string }) => ({ config: server.modelConfig(r.name ?? "", r.version || undefined) })),
    ModelStatistics: unary(async (r: { name?: string; version?: string }) => {
      await server.statisticsSettled();
      return server.modelStatistics(r.name || undefined, r.version || undefined);
    }),
    RepositoryIndex: unary((r: { repository_name?: string; ready?: boolean }) => {
      return {
        models: server
          .repositoryIndex(r.ready === true, r.repository_name)
          .map((m) => ({ name: m.name, version: m.version ?? "", state: m.state ?? "", reason: m.reason ?? "" })),
      };
    }),
    RepositoryModelLoad: unary(repositoryControl("load")),
    RepositoryModelUnload: unary(repositoryControl("unload")),
    SystemSharedMemoryStatus: unary((r: { name?: string }) => ({
      regions: Object.fromEntries(server.sharedMemoryStatus("system", r.name || undefined).map((x) => [x.name, x])),
    })),
    SystemSharedMemoryRegister: unary((r: { name?: string; key?: string; offset?: bigint; byte_size?: bigint }) => {
      server.registerSharedMemory("system", r.name ?? "", {
        key: r.key ?? "",
        offset: exactInteger(r.offset ?? 0n),
        byteSize: exactInteger(r.byte_size ?? 0n),
      });
      return {};
    }),
    SystemSharedMemoryUnregister: unary((r: { name?: string }) => {
      server.unregisterSharedMemory("system", r.name || undefined);
      return {};
    }),
    CudaSharedMemoryStatus: unary((r: { name?: string }) => ({
      regions: Object.fromEntries(server.sharedMemoryStatus("cuda", r.name || undefined).map((x) => [x.name, x])),
    })),
    CudaSharedMemoryRegister: unary((r: { name?: string; raw_handle?: Uint8Array; device_id?: bigint; byte_size?: bigint }) => {
      server.registerSharedMemory("cuda", r.name ?? "", {
        rawHandle: r.raw_handle ?? new Uint8Array(0),
        deviceId: exactInteger(r.device_id ?? 0n),
        byteSize: exactInteger(r.byte_size ?? 0n),
      });
      return {};
    }),
    CudaSharedMemoryUnregister: unary((r: { name?: string }) => {
      server.unregisterSharedMemory("cuda", r.name || undefined);
      return {};
    }),
    TraceSetting: unary((r: { settings?: Record<string, { value?: string[] }>; model_name?: string }) => {
      const model = r.model_name || undefined;
      // An entry with no values clears a model's override, as JSON null does over HTTP.
      const update = Object.fromEntries(
        Object.entries(r.settings ?? {}).map(([k, v]) => [k, !v.value?.length ? null : k === "trace_level" ? v.value : v.value[0]]),
      );
      const current = server.traceSetting(model, Object.keys(update).length > 0 ? update : undefined);
      return { settings: Object.fromEntries(Object.entries(current).map(([k, v]) => [k, { value: Array.isArray(v) ? v : [v] }])) };
    }),
    LogSettings: unary(
      (r: { settings?: Record<string, { parameter_choice?: string; bool_param?: boolean; uint32_param?: number; string_param?: string }> }) => {
        const update = Object.fromEntries(
          Object.entries(r.settings ?? {}).map(([k, v]) => [
            k,
            v.parameter_choice ? v[v.parameter_choice as "bool_param" | "uint32_param" | "string_param"] : undefined,
          ]),
        );
        const current = Object.keys(update).length > 0 ? updateLogSettings(update) : currentLogSettings();
        return {
          settings: Object.fromEntries(
            Object.entries(current).map(([k, v]) => [
              k,
              typeof v === "boolean" ? { bool_param: v } : typeof v === "number" ? { uint32_param: v } : { string_param: v },
            ]),
          ),
        };
      },
    ),
  };
}

/** What a call's metadata adds to each of its requests' parameters, by --grpc-header-forward-pattern. */
export function forwarded(pattern: RegExp | undefined, metadata: Metadata): HeaderForwarder {
  if (!pattern) return undefined;
  const entries = metadataEntries(metadata);
  return (parameters) => forwardHeaders(pattern, entries, parameters);
}

/** As in Triton (and over HTTP), the model is resolved before the request is decoded: an unknown model is reported first. */
function infer(server: InferenceServer, msg: WireInferRequest, signal?: AbortSignal, forward?: HeaderForwarder): Promise<InferenceResponse> {
  const model = server.resolve(msg.model_name ?? "", msg.model_version || undefined, {
    unary: "ModelInfer RPC doesn't support models with decoupled transaction policy",
  });
  const request = toInferenceRequest(msg);
  forward?.(request.parameters);
  if (signal) request.signal = signal;
  return server.inferAsync(request, model);
}

/** grpc.health.v1.Health: SERVING iff the server is ready (Triton's rule). */
export function healthService(server: InferenceServer): UntypedServiceImplementation {
  return { Check: unary(() => healthCheckReply({ ready: server.isReady() })) };
}
