/**
 * Issue #34: the openvino backend on REAL OpenVINO, not the test double. The pinned PyPI
 * wheel (openvino==2026.4.1, installed into a cached venv by venvPython) ships
 * libopenvino_c.so.<soname> with its CPU plugin and ONNX frontend in
 * site-packages/openvino/libs. The compiled binary serves the example ONNX models twice,
 * once through ONNX Runtime (`simple`, `simple_fp32_mlp`, `ocr_cls` as the repository has
 * them) and once through OpenVINO on CPU (`ov_*`: `backend: "openvino"`,
 * `default_model_filename: "model.onnx"`, the same file), and the answers are compared:
 * exact for the integer model, within float tolerance for the float ones. A model of
 * Identity nodes over every Triton datatype checks the ov_element_type_e values against
 * the real library byte for byte. A second server and `nereid devices` find the library
 * through $VIRTUAL_ENV alone (no library=). The double's tests (test/ffi/openvino.test.ts,
 * test/e2e/http/openvino.test.ts) stay for what real OpenVINO cannot be made to do.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { copyFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { inferJson as infer, serverCommand, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { venvPython } from "../../helpers/python-venv.ts";
import { LoadLoops } from "../../helpers/load-loops.ts";
import { modelCounts } from "../../helpers/model-counts.ts";
import { ElemType, encodeModel, type initializer, mulberry32, node, valueInfo } from "../../../scripts/lib/onnx-builder.ts";

const OPENVINO = { name: "openvino", packages: ["openvino==2026.4.1"], imports: ["openvino"], systemSitePackages: false };
/** No CUDA for these servers: the openvino backend needs none, and a GPU host must not change the answers. */
const NO_CUDA = { NEREID_CUDA_LIBRARY: "/nonexistent/libcuda.so.1", NEREID_OPENVINO_LIBRARY: "" };

/** An OpenVINO twin of a repository model's config: same tensors, the ONNX file read by OpenVINO on CPU. */
function openVinoConfig(name: string, body: string, parameters: Record<string, string> = {}): string {
  const params = Object.entries(parameters)
    .map(([k, v]) => `parameters { key: "${k}" value { string_value: "${v}" } }\n`)
    .join("");
  return `name: "${name}"\nbackend: "openvino"\ndefault_model_filename: "model.onnx"\n${body}instance_group [ { count: 1 kind: KIND_CPU } ]\n${params}`;
}

/** Every Triton datatype but BYTES, with its ONNX type and element size. */
const TYPES: [string, number, number][] = [
  ["BOOL", ElemType.BOOL, 1],
  ["UINT8", ElemType.UINT8, 1],
  ["UINT16", ElemType.UINT16, 2],
  ["UINT32", ElemType.UINT32, 4],
  ["UINT64", ElemType.UINT64, 8],
  ["INT8", ElemType.INT8, 1],
  ["INT16", ElemType.INT16, 2],
  ["INT32", ElemType.INT32, 4],
  ["INT64", ElemType.INT64, 8],
  ["FP16", ElemType.FLOAT16, 2],
  ["FP32", ElemType.FLOAT, 4],
  ["FP64", ElemType.DOUBLE, 8],
  ["BF16", ElemType.BFLOAT16, 2],
];

const random = (n: number, seed: number, scale = 1) => {
  const r = mulberry32(seed);
  return Array.from({ length: n }, () => Math.fround((r() * 2 - 1) * scale));
};

/** Largest |a - b| - rtol * |b| over the elements; <= atol means within tolerance. */
function worstExcess(a: number[], b: number[], rtol: number): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) - rtol * Math.abs(b[i]!));
  return worst;
}

/**
 * Eight elements of each datatype as bytes: integers from a seeded generator (BOOL 0/1),
 * floats as bit patterns of normal numbers (no NaN, whose payload a runtime may change).
 * INT64 stays within int32 unless `wideInt64`.
 */
function typeBytes(wideInt64: boolean): Record<string, Uint8Array> {
  const r = mulberry32(wideInt64 ? 9 : 3);
  const ints = (n: number, size: number) => Uint8Array.from({ length: n * size }, () => Math.floor(r() * 256));
  const int64 = new BigInt64Array(8).map((_, i) =>
    wideInt64 ? BigInt(Math.floor(r() * 2 ** 52)) * 4099n * (i % 2 ? -1n : 1n) : BigInt(Math.floor(r() * 2 ** 32) - 2 ** 31),
  );
  const u16 = (bits: number[]) => new Uint8Array(new Uint16Array(bits).buffer);
  const out: Record<string, Uint8Array> = {
    BOOL: Uint8Array.from({ length: 8 }, () => (r() < 0.5 ? 1 : 0)),
    UINT8: ints(8, 1),
    UINT16: ints(8, 2),
    UINT32: ints(8, 4),
    UINT64: ints(8, 8),
    INT8: ints(8, 1),
    INT16: ints(8, 2),
    INT32: ints(8, 4),
    INT64: new Uint8Array(int64.buffer),
    // 0, 1, -2, 0.5, 65504 (the largest), -0.25, 1024, 3
    FP16: u16([0x0000, 0x3c00, 0xc000, 0x3800, 0x7bff, 0xb400, 0x6400, 0x4200]),
    FP32: new Uint8Array(new Float32Array(random(8, 4, 1000)).buffer),
    FP64: new Uint8Array(new Float64Array(Array.from({ length: 8 }, () => (r() - 0.5) * 1e10)).buffer),
    // 0, 1, -2, 0.5, 256, -0.25, 1024, 3
    BF16: u16([0x0000, 0x3f80, 0xc000, 0x3f00, 0x4380, 0xbe80, 0x4480, 0x4040]),
  };
  return out;
}

/** One request with every input as binary data, every output asked for as binary. */
async function inferBinary(
  server: ServerProcess,
  model: string,
  inputs: Record<string, Uint8Array>,
): Promise<{ status: number; outputs: Record<string, { datatype: string; shape: number[]; data: Uint8Array }> }> {
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: TYPES.map(([t]) => ({ name: `IN_${t}`, datatype: t, shape: [2, 4], parameters: { binary_data_size: inputs[t]!.length } })),
      outputs: TYPES.map(([t]) => ({ name: `OUT_${t}`, parameters: { binary_data: true } })),
    }),
  );
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "Inference-Header-Content-Length": String(header.length) },
    body: Buffer.concat([header, ...TYPES.map(([t]) => inputs[t]!)]),
  });
  const body = new Uint8Array(await res.arrayBuffer());
  const length = Number(res.headers.get("inference-header-content-length") ?? body.length);
  const json = JSON.parse(new TextDecoder().decode(body.subarray(0, length)));
  const outputs: Record<string, { datatype: string; shape: number[]; data: Uint8Array }> = {};
  let at = length;
  for (const o of json.outputs ?? []) {
    const size = o.parameters.binary_data_size as number;
    outputs[o.name] = { datatype: o.datatype, shape: o.shape, data: body.slice(at, at + size) };
    at += size;
  }
  return { status: res.status, outputs };
}

let libDir = "";
let library = "";
let venv = "";
let repo: ReturnType<typeof makeRepository>;

beforeAll(() => {
  const python = venvPython(OPENVINO);
  venv = dirname(dirname(python));
  libDir = execFileSync(python, ["-c", "import openvino, os; print(os.path.join(os.path.dirname(openvino.__file__), 'libs'))"], { encoding: "utf8" }).trim();
  const c = readdirSync(libDir).filter((n) => /^libopenvino_c\.so\.\d+$/.test(n));
  expect(c, `libopenvino_c.so.<soname> in ${libDir}`).toHaveLength(1);
  library = join(libDir, c[0]!);

  repo = makeRepository(["simple", "simple_fp32_mlp", "ocr_cls"]);
  const copy = (from: string, to: string) => {
    repo.add(`${to}/1/.keep`, "");
    copyFileSync(join(repo.dir, from, "1", "model.onnx"), join(repo.dir, to, "1", "model.onnx"));
  };
  copy("simple", "ov_simple");
  repo.add(
    "ov_simple/config.pbtxt",
    openVinoConfig(
      "ov_simple",
      `max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
`,
      { INFERENCE_NUM_THREADS: "1" },
    ),
  );
  // f32 on every CPU: OpenVINO's CPU plugin computes in bf16 by default where the CPU has AMX.
  // No inputs or outputs in the config: auto-complete reads them from OpenVINO's ports.
  copy("simple", "ov_auto");
  repo.add("ov_auto/config.pbtxt", openVinoConfig("ov_auto", "max_batch_size: 8\n"));
  // The same graph under a config looser than its ports ([-1] for [16]): OpenVINO, not Nereid, refuses a wrong length.
  copy("simple", "ov_loose");
  repo.add(
    "ov_loose/config.pbtxt",
    openVinoConfig(
      "ov_loose",
      `max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ -1 ] } ]
`,
    ),
  );
  // A property value OpenVINO refuses: proof that the parameters reach ov_core_compile_model.
  copy("simple", "ov_bad_property");
  repo.add("ov_bad_property/config.pbtxt", openVinoConfig("ov_bad_property", "max_batch_size: 8\n", { INFERENCE_NUM_THREADS: "lots" }));
  // ONNX external data naming a file outside the model's folder (a repository file here).
  repo.add(
    "ov_outside/1/model.onnx",
    encodeModel({
      name: "ov_outside",
      inputs: [valueInfo("X", ElemType.UINT8, [16])],
      outputs: [valueInfo("Y", ElemType.UINT8, [16])],
      nodes: [node("Add", ["X", "W"], ["Y"])],
      initializers: [
        {
          name: "W",
          dataType: ElemType.UINT8,
          dims: [16],
          dataLocation: 1, // EXTERNAL
          externalData: [
            { key: "location", value: "../../simple/config.pbtxt" },
            { key: "length", value: "16" },
          ],
        } as unknown as ReturnType<typeof initializer>,
      ],
    }),
  );
  repo.add("ov_outside/config.pbtxt", openVinoConfig("ov_outside", "max_batch_size: 0\n"));
  copy("simple_fp32_mlp", "ov_mlp");
  repo.add(
    "ov_mlp/config.pbtxt",
    openVinoConfig(
      "ov_mlp",
      `max_batch_size: 32
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 512 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 512 ] } ]
`,
      { INFERENCE_PRECISION_HINT: "f32" },
    ),
  );
  copy("ocr_cls", "ov_ocr_cls");
  repo.add(
    "ov_ocr_cls/config.pbtxt",
    openVinoConfig(
      "ov_ocr_cls",
      `max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 3, 48, 192 ] } ]
output [ { name: "softmax_0.tmp_0" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]
`,
      { INFERENCE_PRECISION_HINT: "f32" },
    ),
  );
  repo.add(
    "ov_types/1/model.onnx",
    encodeModel({
      name: "ov_types",
      inputs: TYPES.map(([t, e]) => valueInfo(`IN_${t}`, e, [2, 4])),
      outputs: TYPES.map(([t, e]) => valueInfo(`OUT_${t}`, e, [2, 4])),
      nodes: TYPES.map(([t]) => node("Identity", [`IN_${t}`], [`OUT_${t}`])),
    }),
  );
  repo.add(
    "ov_types/config.pbtxt",
    openVinoConfig(
      "ov_types",
      `max_batch_size: 0
input [ ${TYPES.map(([t]) => `{ name: "IN_${t}" data_type: TYPE_${t} dims: [ 2, 4 ] }`).join(", ")} ]
output [ ${TYPES.map(([t]) => `{ name: "OUT_${t}" data_type: TYPE_${t} dims: [ 2, 4 ] }`).join(", ")} ]
`,
    ),
  );
}, 900_000);

afterAll(() => repo?.remove());

describe("real OpenVINO (the openvino==2026.4.1 wheel) beside ONNX Runtime, one server", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false", `--backend-config=openvino,library=${library}`], {
      env: NO_CUDA,
      timeoutMs: 120_000,
    });
  }, 150_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("loads every model; a config without tensors is completed from OpenVINO's ports", async () => {
    for (const m of ["simple", "simple_fp32_mlp", "ocr_cls", "ov_simple", "ov_auto", "ov_loose", "ov_mlp", "ov_ocr_cls", "ov_types"]) {
      expect(server.log()).toContain(`successfully loaded '${m}' version 1`);
    }
    const meta = (await (await fetch(`${server.url}/v2/models/ov_auto`)).json()) as any;
    expect(meta.inputs).toEqual([
      { name: "INPUT0", datatype: "INT32", shape: [-1, 16] },
      { name: "INPUT1", datatype: "INT32", shape: [-1, 16] },
    ]);
    expect(meta.outputs).toEqual([
      { name: "OUTPUT0", datatype: "INT32", shape: [-1, 16] },
      { name: "OUTPUT1", datatype: "INT32", shape: [-1, 16] },
    ]);
    const config = (await (await fetch(`${server.url}/v2/models/ov_auto/config`)).json()) as any;
    expect(config.backend).toBe("openvino");
    expect(config.input.map((t: any) => [t.name, t.data_type, t.dims])).toEqual([
      ["INPUT0", "TYPE_INT32", [16]],
      ["INPUT1", "TYPE_INT32", [16]],
    ]);
  });

  it("model parameters that are OpenVINO properties reach the compile: a value OpenVINO refuses keeps the model UNAVAILABLE with its message", async () => {
    const res = await fetch(`${server.url}/v2/models/ov_bad_property/ready`);
    expect(res.status).toBe(503);
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as {
      name: string;
      state: string;
      reason: string;
    }[];
    const entry = index.find((m) => m.name === "ov_bad_property");
    expect(entry?.state).toBe("UNAVAILABLE");
    expect(entry?.reason).toMatch(/^model 'ov_bad_property': compiling for OpenVINO device 'CPU': openvino: ov_core_compile_model\(CPU\): GENERAL_ERROR: /);
    expect(entry?.reason).toContain("Wrong value for property key INFERENCE_NUM_THREADS. Expected only non negative integer numbers");
  });

  it("OpenVINO refuses ONNX external data outside the model's folder: the model is UNAVAILABLE and reads nothing", async () => {
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as {
      name: string;
      state: string;
      reason: string;
    }[];
    const entry = index.find((m) => m.name === "ov_outside");
    expect(entry?.state).toBe("UNAVAILABLE");
    expect(entry?.reason).toContain("ov_core_read_model(");
    expect(entry?.reason).toContain("Path '../../simple/config.pbtxt' resolves to ");
    expect(entry?.reason).toContain("which is outside the base directory");
    expect(entry?.reason).not.toContain(repo.dir); // a client sees no server paths (#29)
  });

  it("simple: OpenVINO's INT32 sums and differences equal ONNX Runtime's exactly", async () => {
    const r = mulberry32(7);
    const a = Array.from({ length: 48 }, () => Math.floor(r() * 2 ** 31) - 2 ** 30);
    const b = Array.from({ length: 48 }, () => Math.floor(r() * 2 ** 31) - 2 ** 30);
    const body = {
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [3, 16], data: a },
        { name: "INPUT1", datatype: "INT32", shape: [3, 16], data: b },
      ],
    };
    const ort = await infer(server, "simple", body);
    const ov = await infer(server, "ov_simple", body);
    expect(ort.status).toBe(200);
    expect(ov.status).toBe(200);
    expect(ov.json.outputs).toEqual(ort.json.outputs);
    expect(ov.json.outputs[0].data).toEqual(a.map((x, i) => x + b[i]!));
    expect(ov.json.outputs[1].data).toEqual(a.map((x, i) => x - b[i]!));
  });

  it("simple_fp32_mlp: OpenVINO's outputs equal ONNX Runtime's within float tolerance, batch 1 and 4", async () => {
    for (const batch of [1, 4]) {
      const body = { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [batch, 512], data: random(batch * 512, 11 + batch) }] };
      const ort = await infer(server, "simple_fp32_mlp", body);
      const ov = await infer(server, "ov_mlp", body);
      expect(ov.status).toBe(200);
      expect(ov.json.outputs[0].shape).toEqual([batch, 512]);
      expect(ov.json.outputs[0].datatype).toBe("FP32");
      expect(new Set(ov.json.outputs[0].data).size).toBeGreaterThan(batch * 400); // a real answer, not zeros
      expect(worstExcess(ov.json.outputs[0].data, ort.json.outputs[0].data, 1e-4)).toBeLessThanOrEqual(1e-5);
    }
  });

  it("ocr_cls (PP-OCR's angle classifier, a convolutional net): OpenVINO's softmax equals ONNX Runtime's within float tolerance", async () => {
    const body = { inputs: [{ name: "x", datatype: "FP32", shape: [2, 3, 48, 192], data: random(2 * 3 * 48 * 192, 5) }] };
    const ort = await infer(server, "ocr_cls", body);
    const ov = await infer(server, "ov_ocr_cls", body);
    expect(ort.status).toBe(200);
    expect(ov.status).toBe(200);
    expect(ov.json.outputs[0].shape).toEqual([2, 2]);
    const sums = [0, 1].map((i) => ov.json.outputs[0].data[2 * i] + ov.json.outputs[0].data[2 * i + 1]);
    for (const s of sums) expect(s).toBeCloseTo(1, 5);
    expect(worstExcess(ov.json.outputs[0].data, ort.json.outputs[0].data, 1e-4)).toBeLessThanOrEqual(1e-5);
  });

  it("every Triton datatype crosses as the same element type: Identity gives the bytes back (INT64 within int32 range)", async () => {
    const sent = typeBytes(false);
    const { status, outputs } = await inferBinary(server, "ov_types", sent);
    expect(status).toBe(200);
    for (const [t] of TYPES) {
      expect({ datatype: outputs[`OUT_${t}`]?.datatype, shape: outputs[`OUT_${t}`]?.shape }, t).toEqual({ datatype: t, shape: [2, 4] });
      expect(Buffer.from(outputs[`OUT_${t}`]!.data).toString("hex"), t).toBe(Buffer.from(sent[t]!).toString("hex"));
    }
  });

  it("INT64 beyond int32 comes back as its low 32 bits sign-extended: OpenVINO's CPU plugin computes i64 as i32 (docs/models/openvino.md)", async () => {
    const sent = typeBytes(true);
    const { status, outputs } = await inferBinary(server, "ov_types", sent);
    expect(status).toBe(200);
    const back = new BigInt64Array(outputs.OUT_INT64!.data.slice().buffer);
    expect([...back]).toEqual([...new BigInt64Array(sent.INT64!.buffer)].map((v) => BigInt.asIntN(32, v)));
    expect(back[0]).not.toBe(new BigInt64Array(sent.INT64!.buffer)[0]); // truncated indeed
  });

  it("an input OpenVINO refuses at run time is an error in Triton's shape, and the models keep serving", async () => {
    const fifteen = Array(15).fill(1);
    const bad = await infer(server, "ov_loose", {
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 15], data: fifteen },
        { name: "INPUT1", datatype: "INT32", shape: [1, 15], data: fifteen },
      ],
    });
    expect(bad.status).toBe(500); // Triton's openvino backend reports OpenVINO's exceptions as INTERNAL too
    expect(Object.keys(bad.json)).toEqual(["error"]);
    expect(bad.json.error).toMatch(/^openvino: ov_infer_request_set_input_tensor_by_index\(INPUT0\): GENERAL_ERROR: /);
    expect(bad.json.error).toContain("are incompatible");
    const again = await infer(server, "ov_simple", {
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: Array(16).fill(2) },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array(16).fill(3) },
      ],
    });
    expect(again.json.outputs[0].data).toEqual(Array(16).fill(5));
  });
});

/** An ov_simple request of `batch` rows and its exact answer. */
function simpleCase(seed: number, batch: number) {
  const r = mulberry32(seed);
  const a = Array.from({ length: 16 * batch }, () => Math.floor(r() * 2 ** 20) - 2 ** 19);
  const b = Array.from({ length: 16 * batch }, () => Math.floor(r() * 2 ** 20) - 2 ** 19);
  return {
    body: {
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [batch, 16], data: a },
        { name: "INPUT1", datatype: "INT32", shape: [batch, 16], data: b },
      ],
    },
    answer: [a.map((x, i) => x + b[i]!), a.map((x, i) => x - b[i]!)],
  };
}

describe("frontend worker threads run OpenVINO models themselves (#30): infer requests of their own over the owner's compiled model", () => {
  const start = (threads: number, extra: string[] = []) =>
    startServerProcess(
      [
        `--model-repository=${repo.dir}`,
        "--exit-on-error=false",
        "--log-verbose=1",
        `--http-thread-count=${threads}`,
        `--grpc-infer-thread-count=${threads}`,
        `--backend-config=openvino,library=${library}`,
        ...extra,
      ],
      { env: NO_CUDA, timeoutMs: 120_000 },
    );

  it("the same requests on one thread and on two worker threads: the workers take the OpenVINO versions, and answers, statistics and metrics are the same", async () => {
    const [one, two] = await Promise.all([start(1), start(2)]);
    try {
      const line = /frontend worker threads run these model versions themselves: (.*)/.exec(two.log())?.[1] ?? "";
      for (const v of ["ov_simple:1", "ov_mlp:1", "ov_loose:1", "ov_types:1"]) expect(line.split(", "), line).toContain(v);
      expect(one.log()).not.toMatch(/frontend worker threads run/);
      const run = async (server: ServerProcess) => {
        const answers: unknown[] = [];
        // 48 requests of 1-3 rows, 8 at a time (each worker's turns on its infer request), every answer exact.
        for (let round = 0; round < 6; round++) {
          const cases = Array.from({ length: 8 }, (_, k) => simpleCase(round * 8 + k, 1 + (k % 3)));
          const results = await Promise.all(cases.map((c) => infer(server, "ov_simple", c.body)));
          results.forEach((res, k) => {
            expect(res.status).toBe(200);
            expect(res.json.outputs.map((o: { data: number[] }) => o.data)).toEqual(cases[k]!.answer);
            answers.push(res.json);
          });
        }
        const mlp = await infer(server, "ov_mlp", { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [2, 512], data: random(1024, 3) }] });
        expect(mlp.status).toBe(200);
        answers.push(mlp.json);
        // OpenVINO refuses a row of 15 at run time: an error in Triton's shape, counted as one failure.
        const fifteen = Array(15).fill(1);
        const bad = await infer(server, "ov_loose", {
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 15], data: fifteen },
            { name: "INPUT1", datatype: "INT32", shape: [1, 15], data: fifteen },
          ],
        });
        expect(bad.status).toBe(500);
        answers.push(bad.json);
        const { status, outputs } = await inferBinary(server, "ov_types", typeBytes(false));
        expect(status).toBe(200);
        answers.push(Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, Buffer.from(o.data).toString("hex")])));
        return answers;
      };
      const [a1, a2] = [await run(one), await run(two)];
      expect(a2).toEqual(a1);
      for (const m of ["ov_simple", "ov_mlp", "ov_loose", "ov_types"]) {
        const [c1, c2] = [await modelCounts(one, m), await modelCounts(two, m)];
        expect(c2, m).toEqual(c1);
      }
      const simple = await modelCounts(two, "ov_simple");
      expect([simple.success, simple.executionCount, simple.inferenceCount, simple.fail]).toEqual([48, 48, 90, 0]);
      expect((await modelCounts(two, "ov_loose")).fail).toBe(1);
    } finally {
      expect(await one.stop(), one.log().slice(-3000)).toBe(0);
      expect(await two.stop(), two.log().slice(-3000)).toBe(0);
    }
  }, 240_000);

  it("unload, load and a version swap of ov_simple under load from four client loops on two worker threads: every answer exact or a clean refusal, no crash", async () => {
    const server = await start(2, ["--model-control-mode=explicit", "--load-model=ov_simple"]);
    try {
      const REFUSAL = /Request for unknown model: 'ov_simple'|is not at ready state|unloaded|stopped accepting/;
      const run = new LoadLoops(REFUSAL);
      const loop = (seed: number) => async () => {
        for (let i = 0; !run.stop; i++) {
          const c = simpleCase(seed * 100_000 + i, 1 + (i % 2));
          const res = await infer(server, "ov_simple", c.body);
          if (res.status === 200) {
            if (JSON.stringify(res.json.outputs.map((o: { data: number[] }) => o.data)) === JSON.stringify(c.answer)) run.tally.ok++;
            else run.tally.wrong.push(JSON.stringify(res.json).slice(0, 300));
          } else if (REFUSAL.test(JSON.stringify(res.json))) run.tally.refused++;
          else run.tally.wrong.push(`${res.status} ${JSON.stringify(res.json)}`);
        }
      };
      const loops = [1, 2, 3, 4].map((seed) => run.guard(loop(seed)));
      await run.churnModel(loops, server.url, repo.dir, "ov_simple");
      expect(run.tally.wrong, server.log().slice(-4000)).toEqual([]);
      expect(run.tally.ok).toBeGreaterThan(0);
      expect(run.tally.refused).toBeGreaterThan(0);
      const after = simpleCase(99, 2);
      const res = await infer(server, "ov_simple", after.body);
      expect(res.json.outputs.map((o: { data: number[] }) => o.data)).toEqual(after.answer);
      expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic|double free|core dumped|is closed/);
    } finally {
      expect(await server.stop(), server.log().slice(-3000)).toBe(0);
    }
  }, 240_000);
});

describe("a pip-installed OpenVINO found through $VIRTUAL_ENV alone (no library=)", () => {
  it("`nereid devices` names the wheel's library, its release and element-type table", () => {
    const { cmd, args } = serverCommand();
    const out = execFileSync(cmd, [...args, "devices"], {
      encoding: "utf8",
      env: { ...process.env, ...NO_CUDA, VIRTUAL_ENV: venv, LD_LIBRARY_PATH: "" },
      timeout: 60_000,
    });
    expect(out).toContain(`OpenVINO 2026.4.1-`);
    expect(out).toMatch(new RegExp(`OpenVINO 2026\\.4\\.1-\\S+ \\(${library.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\), element types of 2025\\.1 and later`));
  });

  it("the server loads and answers ov_simple through the discovered library, also after an unload and a reload (every handle freed and made again)", async () => {
    const server = await startServerProcess(
      [`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=ov_simple", "--load-model=simple"],
      { env: { ...NO_CUDA, VIRTUAL_ENV: venv, LD_LIBRARY_PATH: "" }, timeoutMs: 120_000 },
    );
    try {
      expect(server.log()).toContain("successfully loaded 'ov_simple' version 1");
      const { status, json } = await infer(server, "ov_simple", {
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array(16).fill(1) },
        ],
      });
      expect(status).toBe(200);
      expect(json.outputs[0].data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
      expect(json.outputs[1].data).toEqual(Array.from({ length: 16 }, (_, i) => i - 1));
      for (const action of ["unload", "load", "unload", "load"]) {
        const res = await fetch(`${server.url}/v2/repository/models/ov_simple/${action}`, { method: "POST", body: "{}" });
        expect(res.status, action).toBe(200);
      }
      const again = await infer(server, "ov_simple", {
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [2, 16], data: Array(32).fill(7) },
          { name: "INPUT1", datatype: "INT32", shape: [2, 16], data: Array(32).fill(-3) },
        ],
      });
      expect(again.json.outputs[0].data).toEqual(Array(32).fill(4));
      expect(server.log()).not.toMatch(/Segmentation|double free|core dumped/);
    } finally {
      await server.stop();
    }
  });
});
