/**
 * `nereid perf`'s pieces added for #33 item 4, without a server: perf_analyzer's sequence
 * manager (ids, starts, ends, lengths, closing requests), the failure log (every failure
 * counted, a few distinct errors kept, escaped), the server's error text, the new flags,
 * b64 and per-input-file data, and the metrics summary.
 */
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sequencer } from "../../../src/perf/sequence.ts";
import { FailureLog, httpErrorText } from "../../../src/perf/errors.ts";
import { parsePerfArgs, PerfUsageError } from "../../../src/perf/options.ts";
import { makeRequestData } from "../../../src/perf/inputs.ts";
import { gpuSamples } from "../../../src/perf/metrics.ts";
import { metricsText } from "../../../src/perf/report.ts";

const tmp = () => mkdtempSync(join(tmpdir(), "perf-unit-"));

describe("perf sequences", () => {
  it("runs sequences of the given length per slot: start on the first request, end on the last, ids in turn", () => {
    const s = new Sequencer({ length: 3, variation: 0, idStart: 1, idRange: 2 ** 32 });
    s.reset(2);
    const flags = [0, 1, 0, 1, 0, 1, 0, 1].map((slot) => s.next(slot));
    expect(flags).toEqual([
      { id: 1, start: true, end: false },
      { id: 2, start: true, end: false },
      { id: 1, start: false, end: false },
      { id: 2, start: false, end: false },
      { id: 1, start: false, end: true },
      { id: 2, start: false, end: true },
      { id: 3, start: true, end: false },
      { id: 4, start: true, end: false },
    ]);
    // Closing: the open sequences get one request with sequence_end, the others none.
    expect(s.finish(0)).toEqual({ id: 3, start: false, end: true });
    expect(s.finish(0)).toBeUndefined();
    expect(s.next(0)).toEqual({ id: 5, start: true, end: false });
  });

  it("wraps ids within --sequence-id-range and skips an id another slot still uses", () => {
    const s = new Sequencer({ length: 1, variation: 0, idStart: 10, idRange: 2 });
    s.reset(1);
    expect([s.next(0), s.next(0), s.next(0)].map((f) => [f.id, f.start, f.end])).toEqual([
      [10, true, true],
      [11, true, true],
      [10, true, true],
    ]);
    const busy = new Sequencer({ length: 5, variation: 0, idStart: 1, idRange: 2 });
    busy.reset(2);
    expect(busy.next(0).id).toBe(1);
    expect(busy.next(1).id).toBe(2);
    busy.finish(0);
    expect(busy.next(0).id).toBe(1); // the range wraps to 1 again
    busy.finish(0);
    // The range gives 2, which slot 1's sequence still holds: slot 0 keeps its previous id.
    expect(busy.next(0).id).toBe(1);
    expect(busy.next(1).id).toBe(2);
  });

  it("varies lengths by up to ±variation percent, never below 1", () => {
    const lengths = (random: number, variation: number, length = 10) => {
      const s = new Sequencer({ length, variation, idStart: 1, idRange: 100 }, () => random);
      s.reset(1);
      let n = 0;
      do n++;
      while (!s.next(0).end);
      return n;
    };
    expect(lengths(0, 20)).toBe(8);
    expect(lengths(1, 20)).toBe(12);
    expect(lengths(0.5, 20)).toBe(10);
    expect(lengths(0, 100, 1)).toBe(1);
  });
});

describe("perf failures", () => {
  it("counts every failure and keeps the first three distinct errors, escaped and cut", () => {
    const log = new FailureLog();
    for (let i = 0; i < 5; i++) log.add("unexpected shape");
    log.add("line one\nforged line \u001b[31m");
    log.add("x".repeat(600));
    log.add("a fourth kind, counted only");
    expect(log.total).toBe(8);
    expect(log.text(10)).toBe(
      "Failed to retrieve results from inference request: 8 of 10 requests failed. The server answered:\n" +
        "  5x unexpected shape\n" +
        "  1x line one\\nforged line \\x1b[31m\n" +
        `  1x ${"x".repeat(500)}...\n`,
    );
  });

  it('reads Triton\'s {"error"} body, or shows the status and body as they came', () => {
    expect(httpErrorText(400, Buffer.from('{"error":"bad input"}'))).toBe("bad input");
    expect(httpErrorText(502, Buffer.from("Bad Gateway"))).toBe("HTTP 502: Bad Gateway");
    expect(httpErrorText(500, new Uint8Array())).toBe("HTTP 500");
  });
});

describe("perf flags added for perf_analyzer users", () => {
  const err = (args: string[]) => {
    try {
      parsePerfArgs(["-m", "m", ...args]);
    } catch (e) {
      expect(e).toBeInstanceOf(PerfUsageError);
      return (e as Error).message;
    }
    return "accepted";
  };

  it("takes the sequence, header, streaming, shared-memory and metrics flags with perf_analyzer's defaults", () => {
    expect(parsePerfArgs(["-m", "m"])).toMatchObject({
      sequenceLength: 20,
      sequenceLengthVariation: 20,
      sequenceIdStart: 1,
      sequenceIdRange: 2 ** 32,
      numOfSequences: 4,
      headers: [],
      async: false,
      streaming: false,
      sharedMemory: "none",
      collectMetrics: false,
      metricsUrl: "localhost:8002/metrics",
      metricsIntervalMs: 1000,
    });
    const o = parsePerfArgs([
      "-m",
      "m",
      "-i",
      "grpc",
      "--sequence-length",
      "7",
      "--sequence-length-variation=0",
      "--sequence-id-range",
      "5:9",
      "--num-of-sequences",
      "2",
      "-H",
      "A-Key: v:1",
      "-H",
      "b:2",
      "--async",
      "--streaming",
      "--shared-memory=system",
      "--collect-metrics",
      "--metrics-url",
      "h:1/metrics",
      "--metrics-interval",
      "250",
      "--latency-report-file",
      "r.csv",
    ]);
    expect(o).toMatchObject({
      sequenceLength: 7,
      sequenceLengthVariation: 0,
      sequenceIdStart: 5,
      sequenceIdRange: 4,
      numOfSequences: 2,
      headers: [
        ["A-Key", "v:1"],
        ["b", "2"],
      ],
      async: true,
      streaming: true,
      sharedMemory: "system",
      collectMetrics: true,
      metricsUrl: "h:1/metrics",
      metricsIntervalMs: 250,
      csvFile: "r.csv",
    });
    expect(parsePerfArgs(["-m", "m", "--sequence-id-range", "3"])).toMatchObject({ sequenceIdStart: 3, sequenceIdRange: 2 ** 32 });
  });

  it("refuses bad values and unknown options clearly", () => {
    expect(err(["--sequence-length", "0"])).toBe("invalid value '0' for --sequence-length: expected an integer >= 1");
    expect(err(["--sequence-id-range", "9:5"])).toBe("invalid value '9:5' for --sequence-id-range: expected <start>[:<end>] with 0 < start < end");
    expect(err(["-H", "no-colon"])).toBe("invalid value 'no-colon' for -H: expected <name>:<value>");
    expect(err(["--shared-memory", "cuda"])).toBe("--shared-memory cuda is not supported by nereid perf: use system or none");
    expect(err(["--shared-memory", "gpu"])).toBe("invalid value 'gpu' for --shared-memory: expected none or system");
    expect(err(["--streaming"])).toBe("--streaming needs -i grpc");
    expect(err(["--ssl-grpc-use-ssl"])).toBe("unknown option '--ssl-grpc-use-ssl'");
  });
});

describe("perf input data: b64 and a directory", () => {
  const simple = [
    { name: "INPUT0", datatype: "INT32", shape: [-1, 4] },
    { name: "S", datatype: "BYTES", shape: [-1, 1] },
  ];
  const ints = Buffer.from(new Int32Array([1, 2, 3, -4]).buffer);

  it("b64 gives an item's raw bytes; for BYTES, length-prefixed elements or one element's bytes", () => {
    const file = join(tmp(), "d.json");
    const prefixed = Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from("hi")]);
    writeFileSync(
      file,
      JSON.stringify({
        data: [
          { INPUT0: { b64: ints.toString("base64") }, S: { b64: prefixed.toString("base64") } },
          { INPUT0: { content: { b64: ints.toString("base64") }, shape: [4] }, S: { b64: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64") } },
        ],
      }),
    );
    const reqs = makeRequestData(simple, 8, 2, file, new Map());
    expect(reqs.map((r) => r.map((t) => [t.shape, [...t.bytes]]))).toEqual([
      [
        [
          [2, 4],
          [...ints, ...ints],
        ],
        [
          [2, 1],
          [...prefixed, ...prefixed],
        ],
      ],
      [
        [
          [2, 4],
          [...ints, ...ints],
        ],
        [
          [2, 1],
          [4, 0, 0, 0, 0x89, 0x50, 0x4e, 0x47, 4, 0, 0, 0, 0x89, 0x50, 0x4e, 0x47],
        ],
      ],
    ]);
    writeFileSync(file, JSON.stringify({ data: [{ INPUT0: { b64: 5 }, S: ["a"] }] }));
    expect(() => makeRequestData(simple, 8, 1, file, new Map())).toThrow(
      `--input-data ${file}: input 'INPUT0' of entry 0: the value of "b64" must be a string`,
    );
  });

  it("a directory: one file per input, named after it; BYTES of several elements one per line", () => {
    const dir = tmp();
    writeFileSync(join(dir, "INPUT0"), ints);
    writeFileSync(join(dir, "S"), "one\ntwo\n");
    const [req] = makeRequestData([simple[0]!, { name: "S", datatype: "BYTES", shape: [-1, 2] }], 8, 1, dir, new Map());
    expect(req!.map((t) => [t.name, t.shape, [...t.bytes]])).toEqual([
      ["INPUT0", [1, 4], [...ints]],
      ["S", [1, 2], [3, 0, 0, 0, ...Buffer.from("one"), 3, 0, 0, 0, ...Buffer.from("two")]],
    ]);
    writeFileSync(join(dir, "OTHER"), "x");
    expect(() => makeRequestData(simple, 8, 1, dir, new Map())).toThrow(`--input-data ${dir}: file 'OTHER' is not named after an input of the model`);
    const short = tmp();
    mkdirSync(join(short, "sub"));
    expect(() => makeRequestData([{ name: "sub", datatype: "INT32", shape: [4] }], 0, 1, short, new Map())).toThrow(
      `--input-data ${short}: input 'sub': EISDIR`,
    );
  });
});

describe("perf metrics", () => {
  it("reads per-GPU samples and prints perf_analyzer's block", () => {
    const text =
      '# HELP nv_gpu_utilization x\nnv_gpu_utilization{gpu_uuid="GPU-a"} 0.5\nnv_gpu_utilization{gpu_uuid="GPU-b"} 0.25\nnv_gpu_power_usage{gpu_uuid="GPU-a"} 70.5\n';
    expect([...gpuSamples(text, "nv_gpu_utilization")]).toEqual([
      ["GPU-a", 0.5],
      ["GPU-b", 0.25],
    ]);
    expect(
      metricsText({
        scrapes: 2,
        error: undefined,
        utilization: new Map([["GPU-a", 0.5]]),
        power: new Map([["GPU-a", 70.5]]),
        memoryUsed: new Map([["GPU-a", 1024]]),
        memoryTotal: new Map([["GPU-a", 4096]]),
      }),
    ).toBe(
      "  Server Prometheus Metrics: \n    Avg GPU Utilization:\n      GPU-a : 50%\n    Avg GPU Power Usage:\n      GPU-a : 70.5 watts\n    Max GPU Memory Usage:\n      GPU-a : 1024 bytes\n    Total GPU Memory:\n      GPU-a : 4096 bytes\n    Scrapes: 2\n\n",
    );
  });
});
