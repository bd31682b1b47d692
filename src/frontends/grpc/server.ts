/**
 * @module The gRPC listener (@grpc/grpc-js): GRPCInferenceService and the health
 * service on --grpc-address:--grpc-port, with Triton's message limits and keepalive
 * settings.
 */
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { serviceDefinition } from "./protos.ts";
import { inferenceService, healthService, restrict, type GrpcServiceOptions } from "./service.ts";
import type { InferenceServer } from "../../core/server.ts";

export interface GrpcListenOptions extends GrpcServiceOptions {
  address: string;
  port: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  keepalivePermitWithoutCalls: boolean;
  http2MaxPingsWithoutData: number;
  http2MinRecvPingIntervalWithoutDataMs: number;
  http2MaxPingStrikes: number;
}

export interface GrpcListener {
  readonly port: number;
  close(): Promise<void>;
}

const INT32_MAX = 2 ** 31 - 1;

export async function listenGrpc(core: InferenceServer, opts: GrpcListenOptions): Promise<GrpcListener> {
  const server = new Server({
    "grpc.max_receive_message_length": INT32_MAX,
    "grpc.max_send_message_length": INT32_MAX,
    "grpc.keepalive_time_ms": opts.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": opts.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": opts.keepalivePermitWithoutCalls ? 1 : 0,
    "grpc.http2.max_pings_without_data": opts.http2MaxPingsWithoutData,
    "grpc.http2.min_ping_interval_without_data_ms": opts.http2MinRecvPingIntervalWithoutDataMs,
    "grpc.http2.max_ping_strikes": opts.http2MaxPingStrikes,
  });
  server.addService(serviceDefinition("inference.GRPCInferenceService"), restrict(inferenceService(core, opts), opts.restricted));
  server.addService(serviceDefinition("grpc.health.v1.Health"), restrict(healthService(core), opts.restricted));
  const host = opts.address.includes(":") && !opts.address.startsWith("[") ? `[${opts.address}]` : opts.address;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${opts.port}`, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000).unref();
      }),
  };
}
