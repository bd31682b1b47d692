/**
 * A grpc-js client for tests, built from the same proto files as the server
 * (proto/*.proto through src/frontends/grpc/protos.ts), calling with plain objects.
 */
import {
  type Client,
  type ClientDuplexStream,
  credentials,
  makeGenericClientConstructor,
  type ChannelCredentials,
  type ServiceError,
  Metadata,
} from "@grpc/grpc-js";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";

export type Call = (request: object) => Promise<any>;

export function inferenceClient(target: string) {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, credentials.createInsecure(), { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 }) as Client &
    Record<string, (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void>;
  const call =
    (name: string): Call =>
    (req) =>
      new Promise((resolve, reject) => client[name]!.call(client, req, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
  return { client, call };
}

/**
 * One ModelInfer call to the `simple` model (INPUT0 0..15, INPUT1 all 5) on a client of its
 * own, closed afterwards; resolves with OUTPUT0 (INPUT0 + 5), rejects with the call's error.
 */
export function inferSimple(target: string, creds: ChannelCredentials = credentials.createInsecure(), deadlineMs = 10_000): Promise<number[]> {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  // A connection of its own, not one another client in this process already holds.
  const client = new Ctor(target, creds, { "grpc.use_local_subchannel_pool": 1 }) as Client &
    Record<string, (req: object, opts: object, cb: (err: ServiceError | null, res: any) => void) => void>;
  return new Promise((resolve, reject) =>
    client.ModelInfer!(SIMPLE_REQUEST, { deadline: Date.now() + deadlineMs }, (err, res) => {
      client.close();
      if (err) return reject(err);
      resolve(simpleOutput(res));
    }),
  );
}

/** The request inferSimple sends, and the OUTPUT0 of its response. */
export const SIMPLE_REQUEST = {
  model_name: "simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [Buffer.from(new Int32Array(Array.from({ length: 16 }, (_, i) => i)).buffer), Buffer.from(new Int32Array(16).fill(5).buffer)],
};

export function simpleOutput(res: { raw_output_contents: Uint8Array[] }): number[] {
  const b = Buffer.from(res.raw_output_contents[0]!);
  return [...new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))];
}

/**
 * `requests` written on one ModelStreamInfer stream of a client of its own (with `metadata`),
 * which then ends the stream; resolves with the responses as they came (each
 * `{ error_message, infer_response }`). A stream the server ends with a status rejects
 * with the call's error, carrying the responses that came before it as `responses`.
 */
export function streamInfer(
  target: string,
  requests: object[],
  metadata: Record<string, string> = {},
): Promise<{ error_message: string; infer_response?: any }[]> {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: (md: Metadata) => ClientDuplexStream<object, any> };
  const md = new Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  const stream = client.ModelStreamInfer(md);
  const responses: { error_message: string; infer_response?: any }[] = [];
  const done = new Promise<typeof responses>((resolve, reject) => {
    stream.on("data", (r) => responses.push(r));
    stream.on("end", () => resolve(responses));
    stream.on("error", (err) => reject(Object.assign(err, { responses })));
  });
  for (const r of requests) stream.write(r);
  stream.end();
  return done.finally(() => client.close());
}

/**
 * A model no repository has. A frontend worker serves a stream itself while its requests
 * are for models it runs; from the first request naming another model (this one, say) the
 * main thread's stream handler serves it: the tests' way to the main thread's route.
 */
export const MAIN_THREAD_ROUTE = "nereid-test-main-thread-route";

/** streamInfer on the main thread's route: `requests` after one naming MAIN_THREAD_ROUTE, whose answer (an unknown model) is checked and dropped. */
export async function streamInferOnMain(target: string, requests: object[]): Promise<{ error_message: string; infer_response?: any }[]> {
  const [first, ...rest] = await streamInfer(target, [{ model_name: MAIN_THREAD_ROUTE }, ...requests]);
  if (!first?.error_message.includes(MAIN_THREAD_ROUTE)) throw new Error(`expected an unknown-model answer first, got ${JSON.stringify(first)}`);
  return rest;
}

export function healthClient(target: string) {
  const Ctor = makeGenericClientConstructor(serviceDefinition("grpc.health.v1.Health"), "Health");
  const client = new Ctor(target, credentials.createInsecure()) as Client &
    Record<string, (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void>;
  return (req: object) => new Promise<any>((resolve, reject) => client.Check!(req, (err, res) => (err ? reject(err) : resolve(res))));
}

/** A serialized message in gRPC's length-prefixed framing (for raw HTTP/2 clients): no compression flag, its length, its bytes. */
export function grpcFrame(message: Uint8Array): Buffer {
  const f = Buffer.alloc(5 + message.length);
  f.writeUInt32BE(message.length, 1);
  f.set(message, 5);
  return f;
}

/** The messages of a body in gRPC's length-prefixed framing, each deserialized. */
export function grpcMessages<T>(body: Buffer, deserialize: (b: Buffer) => T): T[] {
  const out: T[] = [];
  for (let at = 0; at < body.length; ) {
    const len = body.readUInt32BE(at + 1);
    out.push(deserialize(body.subarray(at + 5, at + 5 + len)));
    at += 5 + len;
  }
  return out;
}

export type { ServiceError, Metadata };
