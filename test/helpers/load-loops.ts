/**
 * Client loops that run while a test loads, unloads and swaps a model under them: each
 * answer is exact, a clean refusal (`refusal` matches its message) or wrong; a loop that
 * throws (the server went away) stops them all and is recorded as wrong.
 */
import { cpSync, rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
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

  /**
   * While `loops` run: six rounds of `unload()` then `load()` (`pauseMs` before each, 50 ms
   * between), with a version 2 copied from `modelDir`'s version 1 after round 2's load and
   * removed after round 4's (a version swap under the requests: the next load serves version 2,
   * then version 1 again); then every loop is stopped and waited for.
   */
  async churn(loops: Promise<void>[], o: { modelDir: string; pauseMs: number; unload: () => Promise<unknown>; load: () => Promise<unknown> }): Promise<void> {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      for (let round = 0; round < 6 && !this.stop; round++) {
        await sleep(o.pauseMs);
        await o.unload();
        await sleep(50);
        await o.load();
        if (round === 2) cpSync(join(o.modelDir, "1"), join(o.modelDir, "2"), { recursive: true });
        if (round === 4) rmSync(join(o.modelDir, "2"), { recursive: true });
      }
      await sleep(o.pauseMs);
    } finally {
      this.stop = true;
      await Promise.all(loops);
    }
  }

  /** churn() of `model` (in `repoDir`) through the repository API of the server at `url`, every load and unload answered 200. */
  churnModel(loops: Promise<void>[], url: string, repoDir: string, model: string, pauseMs = 150): Promise<void> {
    const control = async (action: "load" | "unload") => {
      const r = await fetch(`${url}/v2/repository/models/${model}/${action}`, { method: "POST" });
      expect(r.status, await r.text()).toBe(200);
    };
    return this.churn(loops, { modelDir: join(repoDir, model), pauseMs, unload: () => control("unload"), load: () => control("load") });
  }
}
