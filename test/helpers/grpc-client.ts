/**
 * A grpc-js client for tests, built from the same proto files as the server
 * (proto/*.proto through src/frontends/grpc/protos.ts), calling with plain objects.
 */
import { Client, credentials, makeGenericClientConstructor, type ServiceError, type Metadata } from "@grpc/grpc-js";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";

export type Call = (request: object) => Promise<any>;

export function inferenceClient(target: string) {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, credentials.createInsecure(), { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 }) as Client &
    Record<string, (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void>;
  const call = (name: string): Call => (req) =>
    new Promise((resolve, reject) => client[name]!.call(client, req, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
  return { client, call };
}

export function healthClient(target: string) {
  const Ctor = makeGenericClientConstructor(serviceDefinition("grpc.health.v1.Health"), "Health");
  const client = new Ctor(target, credentials.createInsecure()) as Client & Record<string, (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void>;
  return (req: object) => new Promise<any>((resolve, reject) => client.Check!(req, (err, res) => (err ? reject(err) : resolve(res))));
}

export type { ServiceError, Metadata };
