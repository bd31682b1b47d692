/**
 * OrtEnvironment.preload() (#30): the library bound at once and CreateEnv run on koffi's
 * pool thread while the main thread goes on; get() then hands out the environment the
 * preload made. The order of the tests matters: the environment is the process's, and a
 * test file runs in a process of its own (onnxruntime-preload-race.test.ts has the other order).
 */
import { describe, it, expect } from "vitest";
import { OrtEnvironment } from "../../ffi/onnxruntime/handles.ts";
import { runsAddSub } from "./ort-helpers.ts";

describe("OrtEnvironment.preload", () => {
  it("a library that cannot be loaded throws as get() does, and leaves nothing behind", () => {
    expect(() => OrtEnvironment.preload("/nonexistent/libonnxruntime.so.1")).toThrow(/cannot load ONNX Runtime/);
    expect(() => OrtEnvironment.get("/nonexistent/libonnxruntime.so.1")).toThrow(/cannot load ONNX Runtime/);
  });

  it("once its CreateEnv has returned, get() hands out the environment it made, and sessions run on it", async () => {
    expect(OrtEnvironment.existing()).toBeUndefined();
    await OrtEnvironment.preload();
    // Made by the preload's callback, before any get().
    const made = OrtEnvironment.existing();
    expect(made).toBeDefined();
    const env = OrtEnvironment.get();
    expect(env).toBe(made);
    expect(env.handle).not.toBeNull();
    expect(OrtEnvironment.get()).toBe(env);
    // Another preload changes nothing.
    await OrtEnvironment.preload();
    expect(OrtEnvironment.get()).toBe(env);
    expect(await runsAddSub(env)).toEqual(new Int32Array(16).fill(7));
  });
});
