/**
 * Client loops that run while a test loads, unloads and swaps a model under them: each
 * answer is exact, a clean refusal (`refusal` matches its message) or wrong; a loop that
 * throws (the server went away) stops them all and is recorded as wrong.
 */
import { inferenceClient } from "./grpc-client.ts";

export class LoadLoops {
  stop = false;
  readonly tally = { ok: 0, refused: 0, wrong: [] as string[] };
  readonly #refusal: RegExp;

  constructor(refusal: RegExp) {
    this.#refusal = refusal;
  }

  /** Runs `loop`; if it throws, every loop stops and the error is recorded. */
  guard(loop: () => Promise<void>): Promise<void> {
    return loop().catch((e: Error) => {
      this.stop = true;
      this.tally.wrong.push(`${e.message} ${(e.cause as Error | undefined)?.message ?? ""}`);
    });
  }

  /** A loop of gRPC ModelInfer calls with `request()` until stop; `exact` judges each answer. */
  grpc(target: string, request: () => object, exact: (answer: any) => boolean): () => Promise<void> {
    return async () => {
      const { client, call } = inferenceClient(target);
      try {
        while (!this.stop) {
          try {
            const g = await call("ModelInfer")(request());
            if (exact(g)) this.tally.ok++;
            else this.tally.wrong.push(JSON.stringify(g));
          } catch (e: any) {
            if (this.#refusal.test(e.details)) this.tally.refused++;
            else this.tally.wrong.push(`${e.code} ${e.details}`);
          }
        }
      } finally {
        client.close();
      }
    };
  }
}
