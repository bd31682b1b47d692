/**
 * @module Starts the OpenAI-compatible frontend when --openai-port is given (off
 * otherwise): its own HTTP listener on --openai-address (default: the HTTP address),
 * with the HTTP frontend's listener code, body limit and cancellation.
 */
import { getLogger } from "../../core/logger.ts";
import { listenHttp, type HttpListener } from "../http/server.ts";
import { createOpenAiHandler } from "./routes.ts";
import type { InferenceServer } from "../../server/server.ts";

const log = getLogger("src/frontends/openai/frontend.ts");

/** The listener, or undefined without a port (--openai-port not given). */
export async function startOpenAiFrontend(
  server: InferenceServer,
  o: { port: number | undefined; address: string; maxInputSize: number },
): Promise<HttpListener | undefined> {
  if (o.port === undefined) return undefined;
  const listener = await listenHttp(createOpenAiHandler(server, { maxInputSize: o.maxInputSize }), o.address, o.port);
  log.info(`Started OpenAI-compatible HTTPService at ${o.address}:${listener.port}`);
  return listener;
}
