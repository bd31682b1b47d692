/**
 * @module The reflected gRPC protos (grpc_service.proto with model_config.proto, and
 * health.proto) and grpc-js service definitions built from them: each method's path,
 * streaming flags and protobufjs (de)serializers.
 */
import protobuf from "protobufjs";
import type { ServiceDefinition } from "@grpc/grpc-js";
import { MODEL_CONFIG_DESCRIPTOR } from "../../model-config/model-config-descriptor.generated.ts";
import { GRPC_DESCRIPTOR } from "./grpc-descriptor.generated.ts";

let root: protobuf.Root | undefined;

/** grpc_service.proto, health.proto and the model_config.proto they import, from their generated descriptors (scripts/gen-proto.ts). */
export function grpcRoot(): protobuf.Root {
  if (!root) {
    const r = protobuf.Root.fromJSON(MODEL_CONFIG_DESCRIPTOR);
    r.addJSON(GRPC_DESCRIPTOR.nested!);
    r.resolveAll();
    root = r;
  }
  return root;
}

export function messageType(name: string): protobuf.Type {
  return grpcRoot().lookupType(name);
}

/** Plain-object view of a decoded message: 64-bit integers as numbers, enums as names, oneof names set. */
export const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, oneofs: true, defaults: false, arrays: true };

/**
 * How the server reads requests: like TO_OBJECT, but every 64-bit integer is a bigint, so
 * that sequence ids, int64 contents and shapes arrive exact; convert.ts and the handlers
 * turn each into a number where it is safe to.
 */
export const REQUEST_DECODE: protobuf.IConversionOptions = { ...TO_OBJECT, longs: BigInt };

// Without long.js protobufjs decodes 64-bit fields into doubles before toObject sees them.
if (!protobuf.util.Long) throw new Error("protobufjs has no 64-bit integer support (the 'long' package is missing)");

/**
 * What a stream's message that does not decode is read as (grpc-js's status for it would
 * end the call at once, dropping the answers of the messages before it that are still being
 * made; gRPC C++ decodes each message as the handler reads it). The stream handlers end the
 * call with that status once those answers are written (StreamCall.undecodable).
 */
export interface Undecodable {
  nereid_undecodable: true;
}

export const isUndecodable = (m: unknown): m is Undecodable => (m as Partial<Undecodable> | undefined)?.nereid_undecodable === true;

/** grpc-js's details for a request message that does not decode. */
export const UNDECODABLE_DETAILS = "Error deserializing request";

interface MethodDescriptor {
  requestType: string;
  responseType: string;
  requestStream?: boolean;
  responseStream?: boolean;
}

/** `serviceName`'s methods as the generated descriptor lists them (no reflection needed). */
function methodsOf(serviceName: string): Record<string, MethodDescriptor> {
  let ns: { nested?: Record<string, unknown>; methods?: Record<string, MethodDescriptor> } | undefined = GRPC_DESCRIPTOR;
  for (const part of serviceName.split(".")) ns = ns?.nested?.[part] as typeof ns;
  if (!ns?.methods) throw new Error(`no gRPC service '${serviceName}'`);
  return ns.methods;
}

/**
 * A grpc-js ServiceDefinition for `serviceName` whose handlers take and return plain
 * objects. Its paths and streaming flags come from the generated descriptor; the protos are
 * reflected (grpcRoot, 15-25 ms) at the first call that needs a (de)serializer, not while
 * the server starts (#30: start to ready); a gRPC worker thread reflects them just after it
 * starts listening.
 */
export function serviceDefinition(serviceName: string): ServiceDefinition {
  const def: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(methodsOf(serviceName))) {
    let types: { req: protobuf.Type; res: protobuf.Type } | undefined;
    const resolved = () => {
      if (!types) {
        const method = grpcRoot().lookupService(serviceName).methods[name]!;
        method.resolve();
        types = { req: method.resolvedRequestType!, res: method.resolvedResponseType! };
      }
      return types;
    };
    def[name] = {
      path: `/${serviceName}/${name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: (obj: object) => {
        const { req } = resolved();
        return Buffer.from(req.encode(req.fromObject(obj)).finish());
      },
      requestDeserialize: (buf: Buffer) => {
        const { req } = resolved();
        try {
          return req.toObject(req.decode(buf), REQUEST_DECODE);
        } catch (err) {
          if (!m.requestStream) throw err;
          return { nereid_undecodable: true } satisfies Undecodable;
        }
      },
      responseSerialize: (obj: object) => {
        const { res } = resolved();
        const bytes = res.encode(res.fromObject(obj)).finish();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      responseDeserialize: (buf: Buffer) => {
        const { res } = resolved();
        return res.toObject(res.decode(buf), TO_OBJECT);
      },
      originalName: name,
    };
  }
  return def as ServiceDefinition;
}
