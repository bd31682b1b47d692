/**
 * OrtEnvironment.preload() (#30) overtaken: a get() before the pool thread's CreateEnv has
 * returned creates the environment itself. ORT keeps one OrtEnv per process and counts its
 * references, so get() takes a second reference to the same OrtEnv, and the preload's own
 * is released exactly once when its CreateEnv returns.
 */
import { describe, it, expect, vi } from "vitest";
import { OrtEnvironment } from "../../ffi/onnxruntime/handles.ts";
import { runsAddSub } from "./ort-helpers.ts";

describe("OrtEnvironment.preload, overtaken by get()", () => {
  it("one environment; the preload's reference to the same OrtEnv is released once", async () => {
    const done = OrtEnvironment.preload();
    // The preload's callback cannot run before this synchronous get().
    const env = OrtEnvironment.get();
    const released = vi.spyOn(env.api, "ReleaseEnv");
    await done;
    expect(released).toHaveBeenCalledTimes(1);
    expect(released.mock.calls[0]![0]).toBe(env.handle);
    expect(OrtEnvironment.get()).toBe(env);
    released.mockRestore();
    expect(await runsAddSub(env)).toEqual(new Int32Array(16).fill(7));
  });
});
