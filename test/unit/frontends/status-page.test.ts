/**
 * The status page's routes through the in-process HTTP handler (#18): off by default,
 * one self-contained HTML page, its JSON, read-only, and --http-restricted-api.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHandler, statusAndJson } from "../../helpers/http-handler.ts";

describe("without --allow-status-page", () => {
  let s: Awaited<ReturnType<typeof startHandler>>;
  beforeAll(async () => (s = await startHandler(["simple"])));
  afterAll(async () => s?.stop());

  it("answers 404 Not Found, as for any path outside /v2", async () => {
    for (const path of ["/nereid/status", "/nereid/status.json"]) {
      expect(await statusAndJson(await s.call("GET", path))).toEqual({ status: 404, json: { error: "Not Found" } });
    }
  });
});

describe("with --allow-status-page", () => {
  let s: Awaited<ReturnType<typeof startHandler>>;
  beforeAll(async () => (s = await startHandler(["simple"], { server: { allowStatusPage: true } })));
  afterAll(async () => s?.stop());

  it("serves one HTML page that loads nothing from elsewhere", async () => {
    const res = await s.call("GET", "/nereid/status");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
    );
    const html = await res.text();
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(html).toContain('fetch("status.json"');
  });

  it("serves the models, their states and counters as JSON", async () => {
    const body = { inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) };
    for (let i = 0; i < 3; i++) expect((await s.call("POST", "/v2/models/simple/infer", body)).status).toBe(200);
    const { status, json } = await statusAndJson(await s.call("GET", "/nereid/status.json"));
    expect(status).toBe(200);
    expect(json.server).toMatchObject({ id: "triton", state: "READY", live: true, ready: true });
    expect(json.interval_ms).toBe(1000);
    expect(json.load_errors).toEqual([]);
    expect(json.models).toHaveLength(1);
    expect(json.models[0]).toMatchObject({
      name: "simple",
      version: "1",
      state: "READY",
      reason: "",
      pending: 0,
      success: 3,
      inference_count: 3,
      execution_count: 3,
      cache_enabled: false,
    });
  });

  it("is read-only: other methods answer 405", async () => {
    expect(await statusAndJson(await s.call("POST", "/nereid/status.json", {}))).toEqual({ status: 405, json: { error: "Method Not Allowed" } });
    expect((await s.call("GET", "/nereid/other")).status).toBe(404);
  });
});

describe("with --http-restricted-api on statistics", () => {
  let s: Awaited<ReturnType<typeof startHandler>>;
  beforeAll(
    async () =>
      (s = await startHandler(["simple"], {
        server: { allowStatusPage: true, httpRestrictedApi: [{ apis: ["statistics"], key: "admin-key", value: "secret" }] },
      })),
  );
  afterAll(async () => s?.stop());

  it("needs the statistics group's header, as the statistics extension does", async () => {
    for (const path of ["/nereid/status", "/nereid/status.json"]) {
      expect(await statusAndJson(await s.call("GET", path))).toEqual({ status: 403, json: { error: "This API is restricted, expecting header 'admin-key'" } });
      expect((await s.call("GET", path, undefined, { "admin-key": "secret" })).status).toBe(200);
    }
  });
});
