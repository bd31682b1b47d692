/**
 * @module The replies of the health RPCs (ServerLive, ServerReady, and grpc.health.v1's
 * Check) from the server's health. The main thread's services (service.ts) and a frontend
 * worker thread, which answers them itself from SharedHealth (#30), both reply through here.
 */
import type { Health } from "../../server/shared-health.ts";

export const serverLiveReply = (h: Pick<Health, "live">) => ({ live: h.live });
export const serverReadyReply = (h: Pick<Health, "ready">) => ({ ready: h.ready });
/** SERVING iff the server is ready (Triton's rule). */
export const healthCheckReply = (h: Pick<Health, "ready">) => ({ status: h.ready ? "SERVING" : "NOT_SERVING" });
