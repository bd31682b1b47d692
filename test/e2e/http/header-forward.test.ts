/**
 * Header forwarding (P-30, #17) through the server binary: with
 * --http-header-forward-pattern / --grpc-header-forward-pattern, matching request headers
 * and gRPC metadata reach the model as string request parameters (a TypeScript model
 * echoes its parameters); matching is case-insensitive unless the pattern starts with
 * (?-i); a matching reserved or triton_ name fails the request with Triton's message.
 * Beyond Triton, /generate and /generate_stream forward headers too.
 *
 * The keys Triton consumes (P-29: sequence_id, sequence_start, sequence_end, priority,
 * timeout, binary_data_output) do not reach the model over either protocol; `headers`, a
 * key no Triton frontend treats specially, reaches it over both.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Metadata, type ServiceError } from "@grpc/grpc-js";
import { spawnSync } from "node:child_process";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

const PARAMS = `
export default class Params {
  execute(requests) {
    return requests.map((r) => ({ outputs: [{ name: "PARAMS", datatype: "BYTES", shape: [1], data: [JSON.stringify(r.parameters)] }] }));
  }
}
`;
const CONFIG = `name: "params"
backend: "typescript"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] } ]
`;

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;

beforeAll(() => {
  repo = makeRepository([]);
  repo.add("params/config.pbtxt", CONFIG);
  repo.add("params/1/model.js", PARAMS);
});

afterAll(() => repo?.remove());

/** The same checks on one thread and with both frontends on worker threads (#19), where the workers match headers and metadata. */
const MODES: [string, string[]][] = [
  ["one thread", []],
  ["frontends on worker threads", ["--http-thread-count=2", "--grpc-infer-thread-count=2"]],
];

const body = (parameters: object = {}) => JSON.stringify({ parameters, inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [1] }] });

async function httpParams(headers: Record<string, string>, parameters: object = {}) {
  const res = await fetch(`${server.url}/v2/models/params/infer`, { method: "POST", headers, body: body(parameters) });
  const json = (await res.json()) as { error?: string; outputs?: { data: string[] }[] };
  return { status: res.status, error: json.error, params: json.outputs ? JSON.parse(json.outputs[0]!.data[0]!) : undefined };
}

function grpcParams(md: Record<string, string>, parameters: object = {}): Promise<Record<string, unknown>> {
  const { client } = inferenceClient(server.grpcTarget!);
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return new Promise((resolve, reject) =>
    (client as any).ModelInfer(
      {
        model_name: "params",
        parameters,
        inputs: [{ name: "X", datatype: "INT32", shape: [1] }],
        raw_input_contents: [Buffer.from(new Int32Array([1]).buffer)],
      },
      metadata,
      (err: ServiceError | null, res: { raw_output_contents: Uint8Array[] }) => {
        client.close();
        if (err) return reject(err);
        const bytes = Buffer.from(res.raw_output_contents[0]!);
        resolve(JSON.parse(bytes.subarray(4, 4 + bytes.readUInt32LE(0)).toString()));
      },
    ),
  );
}

describe.each(MODES)("%s", (_mode, flags) => {
  beforeAll(async () => {
    server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--http-header-forward-pattern=^x-fwd-",
      "--grpc-header-forward-pattern=(?-i)^x-grpc-|^triton_",
      "--allow-metrics=false",
      ...flags,
    ]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  describe("HTTP header forwarding", () => {
    it("forwards matching headers (case-insensitively) as string parameters beside the request's own", async () => {
      const r = await httpParams({ "X-Fwd-User": "alice", "x-fwd-trace": "t-1", "x-other": "no" }, { mine: 3 });
      expect(r.status).toBe(200);
      expect(r.params).toEqual({ mine: 3, "x-fwd-user": "alice", "x-fwd-trace": "t-1" });
    });

    it("forwards nothing without a matching header", async () => {
      expect((await httpParams({ "x-other": "no" })).params).toEqual({});
    });
  });

  describe("generate endpoints (beyond Triton)", () => {
    it("/generate forwards matching headers beside the body's parameters", async () => {
      const res = await fetch(`${server.url}/v2/models/params/generate`, {
        method: "POST",
        headers: { "x-fwd-user": "carol", "x-other": "no" },
        body: JSON.stringify({ X: 1, mine: "m" }),
      });
      expect(res.status).toBe(200);
      const json = (await res.json()) as { PARAMS: string };
      expect(JSON.parse(json.PARAMS)).toEqual({ mine: "m", "x-fwd-user": "carol" });
    });

    it("/generate_stream forwards them too", async () => {
      const res = await fetch(`${server.url}/v2/models/params/generate_stream`, {
        method: "POST",
        headers: { "X-Fwd-Trace": "t-2" },
        body: JSON.stringify({ X: 1 }),
      });
      expect(res.status).toBe(200);
      const events = (await res.text()).split("\n").filter((l) => l.startsWith("data: "));
      expect(events.map((l) => JSON.parse(JSON.parse(l.slice(6)).PARAMS))).toEqual([{ "x-fwd-trace": "t-2" }]);
    });
  });

  describe("reserved request parameters (P-29)", () => {
    const reserved = { sequence_id: 0, sequence_start: false, sequence_end: false, priority: 0, timeout: 0, binary_data_output: false };

    it("HTTP: the keys Triton consumes do not reach the model; custom keys and `headers` do", async () => {
      const r = await httpParams({}, { ...reserved, custom: "c", headers: "h" });
      expect(r.status).toBe(200);
      expect(r.params).toEqual({ custom: "c", headers: "h" });
    });

    it("gRPC: the same keys are consumed; custom keys and `headers` reach the model", async () => {
      const params = await grpcParams(
        {},
        {
          sequence_id: { int64_param: 0 },
          sequence_start: { bool_param: false },
          sequence_end: { bool_param: false },
          priority: { int64_param: 0 },
          timeout: { int64_param: 0 },
          binary_data_output: { bool_param: true },
          triton_enable_empty_final_response: { bool_param: true },
          custom: { int64_param: 7 },
          headers: { string_param: "h" },
        },
      );
      expect(params).toEqual({ custom: 7, headers: "h" });
    });

    it("/generate: a reserved key in the body is consumed too", async () => {
      const res = await fetch(`${server.url}/v2/models/params/generate`, {
        method: "POST",
        body: JSON.stringify({ X: 1, priority: 0, timeout: 0, other: true }),
      });
      expect(res.status).toBe(200);
      expect(JSON.parse(((await res.json()) as { PARAMS: string }).PARAMS)).toEqual({ other: true });
    });
  });

  describe("gRPC metadata forwarding", () => {
    it("forwards matching metadata; (?-i) keeps the pattern case-sensitive", async () => {
      expect(await grpcParams({ "x-grpc-user": "bob", "x-other": "no" })).toEqual({ "x-grpc-user": "bob" });
    });

    it("a matching triton_ name fails the request with Triton's message", async () => {
      await expect(grpcParams({ triton_x: "1" })).rejects.toMatchObject({
        code: 3,
        details: "Header 'triton_x' is reserved for Triton usage and cannot be forwarded.",
      });
    });
  });
});

describe("a pattern that is not a regular expression", () => {
  it("stops the start with exit 1 and the flag's name", () => {
    const { cmd, args } = serverCommand();
    const r = spawnSync(
      cmd,
      [...args, `--model-repository=${repo.dir}`, "--http-port=0", "--allow-grpc=false", "--allow-metrics=false", "--http-header-forward-pattern=x-(["],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain("--http-header-forward-pattern: invalid regular expression 'x-(['");
  });
});
