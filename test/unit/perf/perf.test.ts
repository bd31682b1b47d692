/**
 * `nereid perf`'s pieces without a server (#18): perf_analyzer's flags, the tensors it
 * sends, and its CSV.
 */
import { describe, expect, it } from "vitest";
import { parsePerfArgs, rangeValues, PerfUsageError } from "../../../src/perf/options.ts";
import { makeRequestData } from "../../../src/perf/inputs.ts";
import { csvText } from "../../../src/perf/report.ts";
import type { Measurement } from "../../../src/perf/measure.ts";

describe("perf flags", () => {
  it("takes perf_analyzer's names and defaults", () => {
    const o = parsePerfArgs(["-m", "simple"]);
    expect(o).toMatchObject({
      model: "simple",
      version: "",
      protocol: "http",
      url: "localhost:8000",
      batchSize: 1,
      concurrency: { start: 1, end: 1, step: 1 },
      measurementIntervalMs: 5000,
      stabilityPercentage: 10,
      maxTrials: 10,
      inputData: "random",
    });
    expect(parsePerfArgs(["-m", "m", "-i", "grpc"]).url).toBe("localhost:8001");
    const p = parsePerfArgs([
      "-m",
      "m",
      "-x",
      "2",
      "--concurrency-range=2:8:2",
      "-p",
      "250",
      "-s",
      "5",
      "--percentile=95",
      "--shape",
      "IN:3,4",
      "-b",
      "4",
      "-f",
      "out.csv",
      "--verbose-csv",
      "-v",
    ]);
    expect(p).toMatchObject({
      version: "2",
      concurrency: { start: 2, end: 8, step: 2 },
      measurementIntervalMs: 250,
      stabilityPercentage: 5,
      percentile: 95,
      batchSize: 4,
      csvFile: "out.csv",
      verboseCsv: true,
      verbose: true,
    });
    expect(p.shapes.get("IN")).toEqual([3, 4]);
    expect(rangeValues(p.concurrency)).toEqual([2, 4, 6, 8]);
    expect(rangeValues(parsePerfArgs(["-m", "m", "--request-rate-range", "50:100:25"]).requestRate!)).toEqual([50, 75, 100]);
  });

  it("refuses what perf_analyzer refuses, saying which flag", () => {
    const err = (args: string[]) => {
      try {
        parsePerfArgs(args);
      } catch (e) {
        expect(e).toBeInstanceOf(PerfUsageError);
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(err([])).toBe("-m <model> is required");
    expect(err(["-m", "m", "-i", "tcp"])).toBe("invalid value 'tcp' for -i: expected http or grpc");
    expect(err(["-m", "m", "--concurrency-range", "0"])).toBe("invalid value '0' for --concurrency-range: expected <start>[:<end>[:<step>]] with integers > 0");
    expect(err(["-m", "m", "--percentile", "100"])).toBe("invalid value '100' for --percentile: expected 1 to 99");
    expect(err(["-m", "m", "--shape", "IN"])).toBe("invalid value 'IN' for --shape: expected <input>:<d1>,<d2>,...");
    expect(err(["-m", "m", "--nope"])).toBe("unknown option '--nope'");
    expect(err(["-m"])).toBe("option '-m' needs a value");
  });
});

describe("perf inputs", () => {
  const simple = [
    { name: "INPUT0", datatype: "INT32", shape: [-1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [-1, 16] },
  ];

  it("zero data repeated over the batch dimension", () => {
    const [req] = makeRequestData(simple, 8, 4, "zero", new Map());
    expect(req!.map((t) => [t.name, t.datatype, t.shape, t.bytes.byteLength, t.bytes.every((b) => b === 0)])).toEqual([
      ["INPUT0", "INT32", [4, 16], 256, true],
      ["INPUT1", "INT32", [4, 16], 256, true],
    ]);
  });

  it("random data: the same item in every batch row, BYTES length-prefixed", () => {
    const [req] = makeRequestData([{ name: "S", datatype: "BYTES", shape: [-1, 2] }], 4, 3, "random", new Map());
    const t = req![0]!;
    expect(t.shape).toEqual([3, 2]);
    const view = new DataView(t.bytes.buffer, t.bytes.byteOffset);
    const first = 4 + view.getUint32(0, true);
    const item = first + 4 + view.getUint32(first, true);
    expect(t.bytes.byteLength).toBe(3 * item);
    expect(t.bytes.subarray(item, 2 * item)).toEqual(t.bytes.subarray(0, item));
  });

  it("JSON data in perf_analyzer's format, with --shape for variable dims", async () => {
    const { writeFileSync, mkdtempSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const file = join(mkdtempSync(join(tmpdir(), "perf-unit-")), "d.json");
    writeFileSync(file, JSON.stringify({ data: [{ X: [1.5, -2] }, { X: { content: [[0.25], [4]], shape: [2] } }] }));
    const reqs = makeRequestData([{ name: "X", datatype: "FP32", shape: [-1] }], 0, 1, file, new Map([["X", [2]]]));
    expect(reqs.map((r) => [r[0]!.shape, [...new Float32Array(r[0]!.bytes.slice().buffer)]])).toEqual([
      [[2], [1.5, -2]],
      [[2], [0.25, 4]],
    ]);
    expect(() => makeRequestData([{ name: "X", datatype: "FP32", shape: [-1] }], 0, 1, "random", new Map())).toThrow(
      "input 'X' has variable dims [-1]: give them with --shape X:<d1>,<d2>,...",
    );
    expect(() => makeRequestData(simple, 8, 9, "zero", new Map())).toThrow("batch size 9 is more than the model's max_batch_size 8");
    expect(() => makeRequestData([{ name: "X", datatype: "FP32", shape: [2] }], 0, 2, "zero", new Map())).toThrow(
      "batch size 2 given for a model that does not batch (max_batch_size 0)",
    );
  });

  it("FP16 values are IEEE half floats", async () => {
    const { writeFileSync, mkdtempSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const file = join(mkdtempSync(join(tmpdir(), "perf-unit-")), "h.json");
    writeFileSync(file, JSON.stringify({ data: [{ H: [1, -2, 0.5, 65504, 0] }] }));
    const [req] = makeRequestData([{ name: "H", datatype: "FP16", shape: [5] }], 0, 1, file, new Map());
    expect([...new Uint16Array(req![0]!.bytes.slice().buffer)]).toEqual([0x3c00, 0xc000, 0x3800, 0x7bff, 0]);
  });
});

describe("perf CSV", () => {
  const m = (setting: number, throughput: number): Measurement => ({
    setting,
    requests: 100,
    failures: 0,
    durationMs: 1000,
    throughput,
    avgLatencyUs: 1000,
    stdLatencyUs: 10,
    percentilesUs: { 50: 900, 90: 1100, 95: 1200, 99: 1500 },
    avgSendUs: 20,
    avgWaitUs: 960,
    avgRecvUs: 20,
    server: {
      success: { count: 100, ns: 60_000_000 },
      queue: { count: 100, ns: 10_000_000 },
      compute_input: { count: 100, ns: 5_000_000 },
      compute_infer: { count: 100, ns: 40_000_000 },
      compute_output: { count: 100, ns: 2_000_000 },
      inference_count: 100,
      execution_count: 100,
    },
  });

  it("writes perf_analyzer's columns, rows in increasing throughput", () => {
    const o = parsePerfArgs(["-m", "m"]);
    expect(csvText([m(2, 200.5), m(1, 100.25)], o)).toBe(
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n" +
        // network = 1000 - 20 - 20 - (100 + 50 + 400 + 20) = 390
        "1,100.25,20,390,100,50,400,20,20,900,1100,1200,1500\n" +
        "2,200.5,20,390,100,50,400,20,20,900,1100,1200,1500\n",
    );
    const v = parsePerfArgs(["-m", "m", "--verbose-csv", "--request-rate-range", "10"]);
    expect(csvText([m(10, 10)], v)).toBe(
      "Request Rate,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,response wait\n" +
        "10,10,20,390,100,50,400,20,20,900,1100,1200,1500,1000,40,960\n",
    );
  });
});
