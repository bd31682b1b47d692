/**
 * The health probes an HTTP worker thread answers itself (#30, P-01, P-02): which requests
 * it takes (the handler's reading of the path, everything else left to the main thread),
 * Triton's answers, and the shared flags they are read from.
 */
import { describe, expect, it } from "vitest";
import { healthAnswer, healthProbe } from "../../../src/frontends/http/health-route.ts";
import { SharedHealth } from "../../../src/server/shared-health.ts";

describe("healthProbe", () => {
  it("takes a GET of /v2/health/live or /ready, empty segments skipped as the handler skips them", () => {
    expect(healthProbe("GET", "/v2/health/live")).toBe("live");
    expect(healthProbe("GET", "/v2/health/ready")).toBe("ready");
    expect(healthProbe("GET", "//v2//health/ready/")).toBe("ready");
  });

  it("leaves every other request to the main thread", () => {
    for (const [method, path] of [
      ["HEAD", "/v2/health/ready"],
      ["POST", "/v2/health/live"],
      ["GET", "/v2/health"],
      ["GET", "/v2/health/"],
      ["GET", "/v2/health/started"],
      ["GET", "/v2/health/ready/now"],
      ["GET", "/v2/health/re%61dy"],
      ["GET", "/v2/models/health/ready"],
      ["GET", "/v1/health/ready"],
      ["GET", "/health/ready"],
    ] as const)
      expect(healthProbe(method, path), `${method} ${path}`).toBeUndefined();
  });
});

describe("healthAnswer", () => {
  it("answers 200 with no body when the probe holds, 400 with no body when not", () => {
    const h = { live: true, ready: false, exiting: false };
    expect(healthAnswer("live", h)).toEqual({ status: 200, headers: {} });
    expect(healthAnswer("ready", h)).toEqual({ status: 400, headers: {} });
    expect(healthAnswer("ready", { ...h, ready: true })).toEqual({ status: 200, headers: {} });
    expect(healthAnswer("live", { ...h, live: false })).toEqual({ status: 400, headers: {} });
  });

  it("answers 503 'Server exiting' to any probe once shutdown began, and nothing for another path", () => {
    const exiting = { live: false, ready: false, exiting: true };
    for (const probe of ["live", "ready", "other"])
      expect(healthAnswer(probe, exiting)).toEqual({ status: 503, headers: { "content-type": "application/json" }, body: '{"error":"Server exiting"}' });
    expect(healthAnswer("other", { live: true, ready: true, exiting: false })).toBeUndefined();
  });
});

describe("SharedHealth", () => {
  it("starts live, not ready, not exiting, and another view of its buffer reads what it wrote", () => {
    const main = new SharedHealth();
    const worker = new SharedHealth(main.buffer);
    expect(worker.read()).toEqual({ live: true, ready: false, exiting: false });
    main.write({ live: true, ready: true, exiting: false });
    expect(worker.read()).toEqual({ live: true, ready: true, exiting: false });
    main.write({ live: false, ready: false, exiting: true });
    expect(worker.read()).toEqual({ live: false, ready: false, exiting: true });
  });
});
