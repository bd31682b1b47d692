/**
 * Calls one GRPCInferenceService RPC with a JSON request and prints the JSON response,
 * using proto/grpc_service.proto (the grpcurl equivalent that needs nothing installed):
 *
 *   bun scripts/grpc-call.ts localhost:8001 ServerMetadata '{}'
 *   bun scripts/grpc-call.ts localhost:8001 ModelMetadata '{"name":"simple"}'
 */
import { credentials, makeGenericClientConstructor, type ServiceError } from "@grpc/grpc-js";
import { serviceDefinition } from "../src/frontends/grpc/protos.ts";

const [target = "localhost:8001", method = "ServerMetadata", body = "{}"] = process.argv.slice(2);
const definition = serviceDefinition("inference.GRPCInferenceService");
if (!(method in definition)) {
  console.error(`unknown method '${method}'; one of: ${Object.keys(definition).join(", ")}`);
  process.exit(2);
}
const Client = makeGenericClientConstructor(definition, "GRPCInferenceService");
const client = new Client(target, credentials.createInsecure()) as unknown as Record<
  string,
  (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void
>;
client[method]!(JSON.parse(body), (err, res) => {
  if (err) {
    console.error(`ERROR: ${err.code} ${err.details}`);
    process.exit(1);
  }
  console.log(JSON.stringify(res, (_, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("base64") : v), 2));
  process.exit(0);
});
