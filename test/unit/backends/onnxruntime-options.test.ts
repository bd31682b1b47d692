/**
 * The ONNX Runtime session options built from a model config (#30): the default intra-op
 * thread count leaves one core to the serving threads, Triton's intra_op_thread_count
 * overrides it, and spinning stays off unless allow_spinning or the session entry asks.
 */
import { describe, it, expect } from "vitest";
import { defaultIntraOpThreads, sessionConfig } from "../../../src/backends/onnxruntime/options.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const params = (p: Record<string, string>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { string_value: v }]));
const mlp: ModelConfig = { name: "mlp", max_batch_size: 32, instance_group: [{ count: 1, kind: "KIND_CPU" }] };

describe("defaultIntraOpThreads", () => {
  it("shares all cores but one among the instances, at least one thread each", () => {
    expect(defaultIntraOpThreads(2, 1)).toBe(1);
    expect(defaultIntraOpThreads(16, 1)).toBe(15);
    expect(defaultIntraOpThreads(16, 2)).toBe(7);
    expect(defaultIntraOpThreads(4, 2)).toBe(1);
    expect(defaultIntraOpThreads(8, 3)).toBe(2);
    expect(defaultIntraOpThreads(1, 1)).toBe(1);
    expect(defaultIntraOpThreads(2, 4)).toBe(1);
    // No instance group counts as one instance.
    expect(defaultIntraOpThreads(16, 0)).toBe(15);
  });
});

describe("sessionConfig threads and spinning", () => {
  it("takes Triton's intra_op_thread_count over the default, and 0 as the default", () => {
    expect(sessionConfig({ ...mlp, parameters: params({ intra_op_thread_count: "2" }) }).intraOpThreads).toBe(2);
    expect(sessionConfig({ ...mlp, parameters: params({ intra_op_thread_count: "7" }) }).intraOpThreads).toBe(7);
    const d = sessionConfig(mlp).intraOpThreads;
    expect(sessionConfig({ ...mlp, parameters: params({ intra_op_thread_count: "0" }) }).intraOpThreads).toBe(d);
  });

  it("leaves spinning off by default; allow_spinning turns it on; a session.intra_op.allow_spinning entry is passed as given", () => {
    expect(sessionConfig(mlp).allowSpinning).toBe(false);
    expect(sessionConfig(mlp).entries).toEqual({});
    expect(sessionConfig({ ...mlp, parameters: params({ allow_spinning: "true" }) }).allowSpinning).toBe(true);
    const entry = sessionConfig({ ...mlp, parameters: params({ "session.intra_op.allow_spinning": "1" }) });
    expect(entry.entries).toEqual({ "session.intra_op.allow_spinning": "1" });
  });
});
