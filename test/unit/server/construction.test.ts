/**
 * The InferenceServer is built from one options object (#31); what changes later has a
 * method of its own: its state, the metrics registry's observer, the statistics held by
 * other threads. It is the model runner the repository and the backends call.
 */
import { describe, expect, it, vi } from "vitest";
import { InferenceServer, type InferenceServerOptions, type RequestObserver } from "../../../src/server/server.ts";
import { ModelRepositoryManager } from "../../../src/repository/manager.ts";
import { BackendRegistry } from "../../../src/backends/registry.ts";
import { ModelVersion, announceServedChange } from "../../../src/repository/model-version.ts";
import { SharedHealth } from "../../../src/server/shared-health.ts";
import { TraceManager } from "../../../src/server/trace.ts";
import { LateRunner } from "../../../src/core/runner.ts";
import { DEFAULT_MAX_QUEUED_BYTES, type InferenceRequest } from "../../../src/core/request.ts";
import { ServerError } from "../../../src/core/errors.ts";

/** A server over a repository with no model; `runner` is bound to it. */
function build(extra: Partial<InferenceServerOptions> = {}) {
  const runner = new LateRunner();
  const repository = new ModelRepositoryManager(
    { repositories: [], modelConfigName: "", disableAutoCompleteConfig: false, backendConfig: {}, gpuCount: 0 },
    new BackendRegistry(),
    runner,
  );
  const server = new InferenceServer({ info: { id: "triton", version: "2.0", extensions: [], strictReadiness: true }, repository, ...extra });
  runner.bind(server);
  return { server, runner, repository };
}

const request = (): InferenceRequest => ({ modelName: "nope", parameters: {}, inputs: [] });

async function rejection(p: Promise<unknown>): Promise<ServerError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServerError);
  return err as ServerError;
}

describe("InferenceServer construction", () => {
  it("takes its parts and settings from the options object", () => {
    const trace = new TraceManager({});
    const { server, repository } = build({ trace, maxQueuedBytes: 4096 });
    expect(server.repository).toBe(repository);
    expect(server.trace).toBe(trace);
    expect(server.maxQueuedBytes).toBe(4096);
    expect(server.responseCache).toBeUndefined();
    expect(server.serverMetadata()).toEqual({ name: "triton", version: "2.0", extensions: [] });
  });

  it("defaults --max-queued-bytes and has no trace extension when none is given", () => {
    const { server } = build();
    expect(server.maxQueuedBytes).toBe(DEFAULT_MAX_QUEUED_BYTES);
    expect(server.trace).toBeUndefined();
    expect(() => server.traceSetting(undefined)).toThrow("trace is not enabled");
  });

  it("goes STARTING, READY, EXITING through its methods, and never back from EXITING", async () => {
    const { server } = build();
    expect([server.state, server.isLive(), server.isReady()]).toEqual(["STARTING", true, false]);
    server.markReady();
    expect([server.state, server.isLive(), server.isReady()]).toEqual(["READY", true, true]);
    server.markExiting();
    server.markReady();
    expect([server.state, server.isLive(), server.isReady()]).toEqual(["EXITING", false, false]);
    const e = await rejection(server.inferAsync(request()));
    expect([e.code, e.message]).toEqual(["UNAVAILABLE", "Server is stopping"]);
  });

  it("is the model runner the repository was given: a step request reaches its lookups", async () => {
    const { runner } = build();
    const e = await rejection(runner.inferStep(request()));
    expect([e.code, e.message]).toEqual(["NOT_FOUND", "Request for unknown model: 'nope' is not found"]);
  });

  it("tells one observer, attached once, of requests answered elsewhere", () => {
    const { server } = build();
    const mv = new ModelVersion("m", 1, "/nowhere/m", { name: "m", max_batch_size: 0, input: [], output: [] } as never);
    server.observeSuccess(mv, { requestNs: 1, queueNs: 0 }); // no observer yet: nothing to tell
    const seen: unknown[] = [];
    const observer: RequestObserver = { success: (v, d) => seen.push([v, d]), firstResponse: (v, ns) => seen.push([v, ns]) };
    server.observe(observer);
    expect(() => server.observe(observer)).toThrow("the server already has a request observer");
    server.observeSuccess(mv, { requestNs: 5, queueNs: 2, computeInferNs: 3 });
    expect(seen).toEqual([[mv, { requestNs: 5, queueNs: 2, computeInferNs: 3 }]]);
  });

  it("settles the statistics once every source added has settled", async () => {
    const { server } = build();
    await server.statisticsSettled(); // none: at once
    const releases: (() => void)[] = [];
    const source = () => ({ settle: () => new Promise<void>((resolve) => releases.push(resolve)) });
    server.addStatisticsSource(source());
    server.addStatisticsSource(source());
    let settled = false;
    const done = server.statisticsSettled().then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect([releases.length, settled]).toEqual([2, false]);
    releases[0]!();
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    releases[1]!();
    await done;
    expect(settled).toBe(true);
  });
});

describe("InferenceServer.shareHealth (#30, P-01, P-02)", () => {
  it("keeps the shared flags equal to isLive() and isReady() through the state and the repository's changes, until the last reader releases them", () => {
    const { server, repository } = build();
    const first = server.shareHealth();
    const second = server.shareHealth();
    expect(second.buffer).toBe(first.buffer);
    const view = new SharedHealth(first.buffer);
    expect(view.read()).toEqual({ live: true, ready: false, exiting: false });
    server.markReady();
    expect(view.read()).toEqual({ live: true, ready: true, exiting: false });
    // Strict readiness: what the repository says, written when it announces a change.
    const allReady = vi.spyOn(repository, "allReady").mockReturnValue(false);
    announceServedChange();
    expect([view.read().ready, server.isReady()]).toEqual([false, false]);
    allReady.mockReturnValue(true);
    announceServedChange();
    expect(view.read().ready).toBe(true);
    // One reader left still sees changes; none left, the repository is no longer watched.
    first.release();
    first.release();
    allReady.mockReturnValue(false);
    announceServedChange();
    expect(view.read().ready).toBe(false);
    second.release();
    allReady.mockReturnValue(true);
    announceServedChange();
    expect(view.read().ready).toBe(false);
    // The server's own state is written whether or not anyone reads it.
    server.markExiting();
    expect(view.read()).toEqual({ live: false, ready: false, exiting: true });
  });
});
