/** #29: which HTTP requests count as state-changing, and when a browser marks one as cross-origin. */
import { describe, expect, it } from "vitest";
import { changesState, crossOrigin } from "../../../src/frontends/http/cross-origin.ts";

const req = (headers: Record<string, string>) => ({ header: (name: string) => headers[name] });
const parts = (path: string) => path.split("/").filter((p) => p.length > 0);

describe("cross-origin checks (#29)", () => {
  it("counts every method but GET and HEAD as changing state, inference aside", () => {
    for (const p of [
      "/v2/repository/models/m/load",
      "/v2/repository/models/m/unload",
      "/v2/repository/index",
      "/v2/logging",
      "/v2/trace/setting",
      "/v2/models/m/trace/setting",
      "/v2/systemsharedmemory/region/r/register",
      "/v2/cudasharedmemory/unregister",
    ]) {
      expect(changesState("POST", parts(p)), p).toBe(true);
    }
    expect(changesState("PUT", parts("/v2/logging"))).toBe(true);
    for (const p of ["/v2/models/m/infer", "/v2/models/m/versions/2/infer", "/v2/models/m/generate", "/v2/models/m/generate_stream"])
      expect(changesState("POST", parts(p)), p).toBe(false);
    expect(changesState("GET", parts("/v2/logging"))).toBe(false);
    expect(changesState("HEAD", parts("/v2/repository/index"))).toBe(false);
    // A model named "infer" is not inference when the path is a repository one.
    expect(changesState("POST", parts("/v2/repository/models/infer/load"))).toBe(true);
  });

  it("refuses a foreign or null Origin and cross-site / same-site fetches; lets the rest through", () => {
    expect(crossOrigin(req({}))).toBeUndefined();
    expect(crossOrigin(req({ host: "10.0.0.5:8000" }))).toBeUndefined();
    expect(crossOrigin(req({ host: "10.0.0.5:8000", origin: "http://10.0.0.5:8000" }))).toBeUndefined();
    expect(crossOrigin(req({ host: "Localhost:8000", origin: "http://localhost:8000", "sec-fetch-site": "same-origin" }))).toBeUndefined();
    expect(crossOrigin(req({ "sec-fetch-site": "none" }))).toBeUndefined();
    expect(crossOrigin(req({ host: "10.0.0.5:8000", origin: "http://evil.example" }))).toBe("Origin does not match Host");
    expect(crossOrigin(req({ host: "10.0.0.5:8000", origin: "http://10.0.0.5:8001" }))).toBe("Origin does not match Host");
    expect(crossOrigin(req({ host: "10.0.0.5:8000", origin: "null" }))).toBe("Origin does not match Host");
    expect(crossOrigin(req({ origin: "http://10.0.0.5:8000" }))).toBe("Origin does not match Host");
    expect(crossOrigin(req({ host: "a:1", origin: "http://a:1", "sec-fetch-site": "same-site" }))).toBe("Sec-Fetch-Site: same-site");
    expect(crossOrigin(req({ "sec-fetch-site": "Cross-Site" }))).toBe("Sec-Fetch-Site: cross-site");
  });
});
