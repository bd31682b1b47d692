/**
 * S-15: ensembles through the server binary: data flows between steps by their input
 * and output maps, independent steps run, composing models keep their own statistics,
 * and a broken data flow or a max_batch_size beyond a batching step's keeps the ensemble
 * from loading with the reason.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const io = (names: string[], dir: "input" | "output") => `${dir} [ ${names.map((n) => `{ name: "${n}" data_type: TYPE_INT32 dims: [ 16 ] }`).join(", ")} ]`;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  // A = simple(IN_A, IN_B) → SUM, DIFF; then simple(SUM, DIFF) → 2a, 2b; beside it simple(IN_A, IN_A) → 2a'.
  repo.add(
    "simple_chain/config.pbtxt",
    `name: "simple_chain"
platform: "ensemble"
max_batch_size: 8
${io(["IN_A", "IN_B"], "input")}
${io(["TWICE_A", "TWICE_B", "A_PLUS_A"], "output")}
ensemble_scheduling {
  step [
    { model_name: "simple" model_version: -1 input_map { key: "INPUT0" value: "IN_A" } input_map { key: "INPUT1" value: "IN_B" }
      output_map { key: "OUTPUT0" value: "SUM" } output_map { key: "OUTPUT1" value: "DIFF" } },
    { model_name: "simple" model_version: 1 input_map { key: "INPUT0" value: "SUM" } input_map { key: "INPUT1" value: "DIFF" }
      output_map { key: "OUTPUT0" value: "TWICE_A" } output_map { key: "OUTPUT1" value: "TWICE_B" } },
    { model_name: "simple" input_map { key: "INPUT0" value: "IN_A" } input_map { key: "INPUT1" value: "IN_A" }
      output_map { key: "OUTPUT0" value: "A_PLUS_A" } }
  ]
}
`,
  );
  repo.add("simple_chain/1/.keep", "");
  repo.add(
    "broken_chain/config.pbtxt",
    `name: "broken_chain"
platform: "ensemble"
max_batch_size: 8
${io(["IN_A"], "input")}
${io(["OUT"], "output")}
ensemble_scheduling { step [ { model_name: "simple" input_map { key: "INPUT0" value: "IN_A" } input_map { key: "INPUT1" value: "NOWHERE" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
`,
  );
  repo.add("broken_chain/1/.keep", "");
  repo.add(
    "orphan_chain/config.pbtxt",
    `name: "orphan_chain"\nplatform: "ensemble"\nmax_batch_size: 8\n${io(["IN_A"], "input")}\n${io(["OUT"], "output")}\n` +
      `ensemble_scheduling { step [ { model_name: "ghost" input_map { key: "X" value: "IN_A" } output_map { key: "Y" value: "OUT" } } ] }\n`,
  );
  repo.add("orphan_chain/1/.keep", "");
  // Batches of up to 16 through simple, which takes 8 at most: refused at load (S-15).
  repo.add(
    "wide_chain/config.pbtxt",
    `name: "wide_chain"\nplatform: "ensemble"\nmax_batch_size: 16\n${io(["IN_A", "IN_B"], "input")}\n${io(["OUT"], "output")}\n` +
      `ensemble_scheduling { step [ { model_name: "simple" input_map { key: "INPUT0" value: "IN_A" } input_map { key: "INPUT1" value: "IN_B" } output_map { key: "OUTPUT0" value: "OUT" } } ] }\n`,
  );
  repo.add("wide_chain/1/.keep", "");
  // One thread: the main thread runs the ensembles (frontend-direct-ensemble.test.ts has the workers run them).
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false", "--http-thread-count=1"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("ensembles", () => {
  it("runs the steps in data-flow order and returns the ensemble outputs", async () => {
    const a = Array.from({ length: 32 }, (_, i) => i);
    const b = Array.from({ length: 32 }, (_, i) => 100 - i);
    const res = await fetch(`${server.url}/v2/models/simple_chain/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "IN_A", shape: [2, 16], datatype: "INT32", data: a },
          { name: "IN_B", shape: [2, 16], datatype: "INT32", data: b },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model_name: string; outputs: { name: string; shape: number[]; data: number[] }[] };
    expect(body.model_name).toBe("simple_chain");
    const out = Object.fromEntries(body.outputs.map((o) => [o.name, o]));
    expect(out.TWICE_A!.shape).toEqual([2, 16]);
    expect(out.TWICE_A!.data).toEqual(a.map((x) => 2 * x));
    expect(out.TWICE_B!.data).toEqual(b.map((x) => 2 * x));
    expect(out.A_PLUS_A!.data).toEqual(a.map((x) => 2 * x));
    const meta = (await (await fetch(`${server.url}/v2/models/simple_chain`)).json()) as { platform: string };
    expect(meta.platform).toBe("ensemble");
    const stats = (await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as {
      model_stats: { execution_count: number; inference_count: number }[];
    };
    // Empty, as Triton reports it unless its opt-in CUDA memory tracker is built in and enabled (P-21).
    expect(stats.model_stats[0]).toMatchObject({ execution_count: 3, inference_count: 6, memory_usage: [] });
    type Duration = { count: number; ns: number };
    type Stats = {
      execution_count: number;
      inference_count: number;
      inference_stats: Record<"success" | "queue" | "compute_input" | "compute_infer" | "compute_output", Duration>;
      batch_stats: { batch_size: number; compute_input: Duration; compute_infer: Duration; compute_output: Duration }[];
    };
    const ens = ((await (await fetch(`${server.url}/v2/models/simple_chain/stats`)).json()) as { model_stats: Stats[] }).model_stats[0]!;
    const steps = ((await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as { model_stats: Stats[] }).model_stats[0]!;
    expect(ens.inference_stats.success.count).toBe(1);
    // As Triton's ensemble reports its request (its steps' statistics aggregated into it):
    // one execution of the request's batch size, and the steps' compute durations summed.
    expect([ens.execution_count, ens.inference_count]).toEqual([1, 2]);
    for (const d of ["compute_input", "compute_infer", "compute_output"] as const) {
      expect(ens.inference_stats[d]).toEqual({ count: 1, ns: steps.inference_stats[d].ns });
    }
    expect(ens.inference_stats.compute_infer.ns).toBeGreaterThan(0);
    expect(ens.batch_stats).toEqual([
      {
        batch_size: 2,
        compute_input: ens.inference_stats.compute_input,
        compute_infer: ens.inference_stats.compute_infer,
        compute_output: ens.inference_stats.compute_output,
      },
    ]);
  });

  it("validates a request against the ensemble's own config before any step runs", async () => {
    const res = await fetch(`${server.url}/v2/models/simple_chain/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "IN_A", shape: [9, 16], datatype: "INT32", data: Array(144).fill(1) },
          { name: "IN_B", shape: [9, 16], datatype: "INT32", data: Array(144).fill(1) },
        ],
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "inference request batch-size must be <= 8 for 'simple_chain'" });
  });

  it("keeps an ensemble with a broken data flow UNAVAILABLE with the reason", async () => {
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state?: string; reason?: string }[];
    expect(index.find((e) => e.name === "broken_chain")).toEqual({
      name: "broken_chain",
      state: "UNAVAILABLE",
      reason: "ensemble 'broken_chain': step 'simple' reads tensor 'NOWHERE', which is neither an ensemble input nor a step output",
    });
    expect(index.find((e) => e.name === "simple_chain")?.state).toBe("READY");
    expect(index.find((e) => e.name === "orphan_chain")).toEqual({
      name: "orphan_chain",
      version: "1",
      state: "UNAVAILABLE",
      reason: "ensemble 'orphan_chain': step model(s) 'ghost' not in any model repository",
    });
  });

  it("refuses at load an ensemble whose max_batch_size exceeds a batching step's, with Triton's reason", async () => {
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state?: string; reason?: string }[];
    expect(index.find((e) => e.name === "wide_chain")).toEqual({
      name: "wide_chain",
      state: "UNAVAILABLE",
      reason: "ensemble wide_chain allows maximum batch size 16, but it contains model simple which only allows maximum batch size to be 8",
    });
    expect((await fetch(`${server.url}/v2/models/wide_chain/ready`)).status).toBe(503);
  });
});
