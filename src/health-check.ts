/**
 * @module `nereid health [--url=<base>]`: the container image's HEALTHCHECK, for images
 * with no curl or shell. Asks a running server's `/v2/health/live` and
 * `/v2/health/ready` (base http://127.0.0.1:8000) and exits 0 only when both answer 200.
 */

export const DEFAULT_HEALTH_URL = "http://127.0.0.1:8000";

export async function runHealthCheck(base: string, timeoutMs = 5000): Promise<number> {
  let ok = true;
  for (const route of ["/v2/health/live", "/v2/health/ready"]) {
    let line: string;
    try {
      const res = await fetch(base.replace(/\/+$/, "") + route, { signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      line = `${route} ${res.status}`;
      if (res.status !== 200) ok = false;
    } catch (err) {
      line = `${route} unreachable: ${(err as Error).message}`;
      ok = false;
    }
    process.stdout.write(line + "\n");
  }
  return ok ? 0 : 1;
}
