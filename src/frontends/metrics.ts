/**
 * @module The metrics endpoint: GET /metrics (and /metrics/) in Prometheus text format
 * with Triton's content type; any other GET answers 200 with an empty body and other
 * methods 405, as Triton's metrics server does.
 */
import type { HttpRequest, HttpResponse } from "./http/types.ts";

/** What the endpoint serves: the exposition text of the metrics registry. */
export interface MetricsText {
  metrics(): Promise<string>;
}

export function createMetricsHandler(registry: MetricsText) {
  return async function handle(req: HttpRequest): Promise<HttpResponse> {
    if (req.method !== "GET") {
      return { status: 405, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: "Method Not Allowed" }) };
    }
    if (req.path !== "/metrics" && req.path !== "/metrics/") return { status: 200, headers: {} };
    return { status: 200, headers: { "content-type": "text/plain; charset=utf-8" }, body: await registry.metrics() };
  };
}
