/**
 * The one model runner (#31): the repository and the backends get it before the server
 * exists; it forwards to the server once bound, exactly once, and refuses calls before.
 */
import { describe, expect, it } from "vitest";
import { LateRunner, type ModelRunner } from "../../../src/core/runner.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { InferenceRequest, InferenceResponse, StreamedResponse } from "../../../src/core/request.ts";

const request: InferenceRequest = { modelName: "m", parameters: {}, inputs: [] };
const response: InferenceResponse = { modelName: "m", modelVersion: "1", outputs: [] };

/** A runner that records what it was asked and answers `response`, streamed as two responses. */
function recordingRunner() {
  const calls: [string, InferenceRequest][] = [];
  const runner: ModelRunner = {
    inferStep: async (r) => {
      calls.push(["inferStep", r]);
      return response;
    },
    async *inferStepStream(r): AsyncGenerator<StreamedResponse> {
      calls.push(["inferStepStream", r]);
      yield { response, final: false };
      yield { final: true };
    },
  };
  return { runner, calls };
}

describe("LateRunner", () => {
  it("refuses a call before it is bound, UNAVAILABLE", async () => {
    const late = new LateRunner();
    const err = await late.inferStep(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).code).toBe("UNAVAILABLE");
    expect((err as ServerError).message).toBe("the server is not running yet: no model may call another before it starts");
    expect(() => late.inferStepStream(request)).toThrow("the server is not running yet: no model may call another before it starts");
  });

  it("forwards both entries to the runner it is bound to, the request as given", async () => {
    const late = new LateRunner();
    const { runner, calls } = recordingRunner();
    late.bind(runner);
    expect(await late.inferStep(request)).toBe(response);
    const streamed: StreamedResponse[] = [];
    for await (const r of late.inferStepStream(request)) streamed.push(r);
    expect(streamed).toEqual([{ response, final: false }, { final: true }]);
    expect(calls).toEqual([
      ["inferStep", request],
      ["inferStepStream", request],
    ]);
    expect(calls[0]![1]).toBe(request);
  });

  it("is bound once: a second bind throws and the first target stays", async () => {
    const late = new LateRunner();
    const first = recordingRunner();
    const second = recordingRunner();
    late.bind(first.runner);
    expect(() => late.bind(second.runner)).toThrow("the model runner is already bound");
    await late.inferStep(request);
    expect(first.calls.length).toBe(1);
    expect(second.calls.length).toBe(0);
  });
});
