/**
 * Bad input never breaks the server: 600 seeded mutations of valid JSON and binary
 * infer requests (truncation, byte flips, field deletion and type swaps) each get a
 * 200 (the mutation left a valid request) or an error status with Triton's
 * `{"error": ...}` body, never a 500, and the server keeps answering good requests exactly.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const A = Array.from({ length: 16 }, (_, i) => i);
const good = {
  id: "x",
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
  outputs: [{ name: "OUTPUT0" }],
};

/** A structural mutation of the request object. */
function mutateObject(r: () => number): unknown {
  const doc = structuredClone(good) as any;
  const pick = <T,>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const values = [null, true, -1, 1.5, "", "x", [], {}, [1, 2], 2 ** 53, "INT32", [1, 16], [-1, 16], [16]];
  const input = doc.inputs[Math.floor(r() * 2)];
  switch (Math.floor(r() * 6)) {
    case 0: delete input[pick(["name", "shape", "datatype", "data"])]; break;
    case 1: input[pick(["name", "shape", "datatype", "data", "parameters"])] = pick(values); break;
    case 2: doc[pick(["inputs", "outputs", "id", "parameters"])] = pick(values); break;
    case 3: input.data = input.data.slice(0, Math.floor(r() * 17)); break;
    case 4: input.data[Math.floor(r() * 16)] = pick(values); break;
    case 5: doc.outputs = [{ name: pick(["OUTPUT0", "OUTPUT9", "", 5]), parameters: pick(values) }]; break;
  }
  return doc;
}

/** A byte-level mutation of the serialized request. */
function mutateBytes(r: () => number): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(good));
  const out = bytes.slice(0, r() < 0.3 ? Math.floor(r() * bytes.length) : bytes.length);
  const flips = 1 + Math.floor(r() * 4);
  for (let i = 0; i < flips && out.length > 0; i++) out[Math.floor(r() * out.length)] = Math.floor(r() * 256);
  return out;
}

async function checkGood() {
  const res = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify(good) });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { outputs: { data: number[] }[] };
  expect(body.outputs[0]!.data).toEqual(A.map((a) => 2 * a));
}

describe("fuzzed infer requests", () => {
  it("600 mutations: each answered 200 or with an error in Triton's shape, none 500; good requests keep working", async () => {
    const r = rng(20261122);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 600; i++) {
      const useBinaryHeader = r() < 0.15;
      const body = r() < 0.5 ? JSON.stringify(mutateObject(r)) : mutateBytes(r);
      const size = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
      const headers: Record<string, string> = useBinaryHeader ? { "Inference-Header-Content-Length": String(Math.floor(r() * (size + 10))) } : {};
      const res = await fetch(`${server.url}/v2/models/${r() < 0.9 ? "simple" : "simple_identity"}/infer`, { method: "POST", body, headers });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      if (res.status === 200) continue;
      expect([400, 404, 413, 500, 501, 503]).toContain(res.status);
      const err = JSON.parse(text) as { error?: unknown };
      expect(typeof err.error).toBe("string");
      expect((err.error as string).length).toBeGreaterThan(0);
      if (i % 100 === 99) await checkGood();
    }
    await checkGood();
    // Most mutations must be refused, and refused as client errors.
    expect(statuses.get(400) ?? 0).toBeGreaterThan(300);
    expect(statuses.get(500) ?? 0).toBe(0);
  });

  it("300 mutated gRPC ModelInfer requests: OK or a client-side status, never INTERNAL; good calls keep working", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    const r = rng(7);
    const pick = <T,>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
    const raw = () => Buffer.from(Int32Array.from(A).buffer);
    const codes = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const req: any = {
        model_name: pick(["simple", "simple", "simple", "nope", ""]),
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [raw(), raw()],
      };
      const input = req.inputs[Math.floor(r() * 2)];
      switch (Math.floor(r() * 6)) {
        case 0: input.datatype = pick(["FP32", "BYTES", "int32", "", "INT64"]); break;
        case 1: input.shape = pick([[1], [16], [1, 15], [2, 16], [], [0, 16], [1, 16, 1]]); break;
        case 2: req.raw_input_contents = pick([[raw()], [raw(), Buffer.alloc(3)], [], [raw(), raw(), raw()]]); break;
        case 3: input.name = pick(["INPUT9", "", "INPUT0"]); break;
        case 4: req.outputs = [{ name: pick(["OUTPUT0", "X", ""]), parameters: { classification: { int64_param: pick([0, 1, -3, 99]) } } }]; break;
        case 5: req.parameters = { [pick(["priority", "timeout", "sequence_id", "triton_x"])]: pick([{ int64_param: -1 }, { string_param: "x" }, { bool_param: true }, { double_param: 0.5 }]) }; break;
      }
      try {
        await call("ModelInfer")(req);
        codes.set(0, (codes.get(0) ?? 0) + 1);
      } catch (err) {
        const code = (err as { code: number }).code;
        codes.set(code, (codes.get(code) ?? 0) + 1);
        expect([3, 5, 12, 14]).toContain(code); // INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED, UNAVAILABLE
      }
    }
    const ok = await call("ModelInfer")({ model_name: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16] }, { name: "INPUT1", datatype: "INT32", shape: [1, 16] }], raw_input_contents: [raw(), raw()] });
    expect(Array.from(new Int32Array(Uint8Array.from(ok.raw_output_contents[0]).buffer))).toEqual(A.map((a) => 2 * a));
    expect(codes.get(13) ?? 0).toBe(0);
    client.close();
  });
});
