/**
 * Nereid in this process through its public API (src/index.ts): a temporary repository
 * of example models, createServer() on it, and listeners on free loopback ports.
 */
import { createServer, type Nereid, type CreateServerOptions } from "../../src/index.ts";
import { makeRepository } from "./repo.ts";

export interface InProcessServer {
  nereid: Nereid;
  repo: ReturnType<typeof makeRepository>;
  /** Base URL of the HTTP listener ("" when started without listeners). */
  url: string;
  grpcTarget: string;
  metricsUrl: string;
  /** Stops the server (its exit code: 0 when everything drained) and removes the repository. */
  stop(): Promise<number>;
}

const LOOPBACK = { port: 0, address: "127.0.0.1" };

/**
 * Starts a quiet in-process server on a fresh repository of `models`; HTTP, gRPC and
 * metrics listen on 127.0.0.1 unless `listen` is false.
 */
export async function startInProcess(
  models: string[],
  options: { server?: Partial<CreateServerOptions>; listen?: boolean; repo?: (r: ReturnType<typeof makeRepository>) => void } = {},
): Promise<InProcessServer> {
  const repo = makeRepository(models);
  options.repo?.(repo);
  let nereid: Nereid;
  try {
    nereid = await createServer({ logInfo: false, logWarning: false, ...options.server, modelRepository: repo.dir });
  } catch (err) {
    repo.remove();
    throw err;
  }
  const endpoints = options.listen === false ? {} : await nereid.listen({ http: LOOPBACK, grpc: LOOPBACK, metrics: LOOPBACK });
  return {
    nereid,
    repo,
    url: endpoints.http ?? "",
    grpcTarget: endpoints.grpc ?? "",
    metricsUrl: endpoints.metrics ?? "",
    async stop() {
      try {
        return await nereid.stop();
      } finally {
        repo.remove();
      }
    },
  };
}
