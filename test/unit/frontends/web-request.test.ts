/**
 * WebHttpRequest's path (P-01, P-02): Bun gives a request's URL as an absolute URL, built
 * from its Host header, except when there is none (HTTP/1.0, as HAProxy's `option httpchk`
 * sends it), where the URL is the request target itself. Both must give the same path.
 */
import { describe, expect, it } from "vitest";
import { WebHttpRequest } from "../../../src/frontends/http/fetch.ts";

/** What WebHttpRequest reads of a Bun Request at construction (a Request of Node's cannot have a relative URL). */
const request = (url: string) => ({ url, method: "GET", headers: new Headers() }) as unknown as Request;

describe("WebHttpRequest.path", () => {
  it.each([
    ["http://127.0.0.1:8000/v2/health/ready", "/v2/health/ready"],
    ["http://x/v2/models/simple/infer?x=1", "/v2/models/simple/infer"],
    ["http://x", "/"],
    ["http://x/", "/"],
    ["/v2/health/ready", "/v2/health/ready"],
    ["/v2/models/simple?y=2", "/v2/models/simple"],
    ["/", "/"],
    ["//v2/health/live", "//v2/health/live"],
  ])("%s → %s", (url, path) => {
    expect(new WebHttpRequest(request(url)).path).toBe(path);
  });
});
