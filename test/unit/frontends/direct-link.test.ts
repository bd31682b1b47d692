/**
 * DirectLink (src/frontends/worker-threads.ts), the main thread's side of one frontend
 * worker's tables (#30): it subscribes the worker when it starts listening, and when the
 * worker's thread ends it leaves the table and hands the worker to DirectModels.ended
 * (whose slot's shared-memory holds then go back), with nothing left waiting on the
 * worker: a statistics flush it was asked for resolves.
 */
import { describe, expect, it } from "vitest";
import { DirectLink } from "../../../src/frontends/worker-threads.ts";
import type { DirectModels, Subscriber } from "../../../src/server/direct-models.ts";
import type { DirectTable } from "../../../src/server/direct-table.ts";
import type { Logger } from "../../../src/core/logger.ts";

/** The parts of DirectModels a DirectLink uses, recording what it is told. */
function fakeDirect() {
  const seen: string[] = [];
  let subscriber: Subscriber | undefined;
  const direct = {
    batchChannel: () => undefined,
    subscribe: (s: Subscriber) => {
      subscriber = s;
      seen.push("subscribed");
      s.publish({ entries: [], routes: [] } as unknown as DirectTable, 0);
      return () => seen.push("unsubscribed");
    },
    ended: (s: Subscriber) => seen.push(s === subscriber ? "ended" : "ended another"),
  };
  return { direct: direct as unknown as DirectModels, seen, subscriber: () => subscriber! };
}

describe("DirectLink", () => {
  it("when the worker's thread ends: leaves the table, hands the worker to DirectModels.ended, and resolves a flush waiting on it", async () => {
    const { direct, seen, subscriber } = fakeDirect();
    const sent: { t: string }[] = [];
    const link = new DirectLink(direct, (m) => sent.push(m), {} as Logger);
    link.start();
    expect(sent.map((m) => m.t)).toEqual(["recordBatches", "models"]);
    // A record batch begun in the worker: a statistics read waits for the worker's flush.
    const [{ buffer }] = sent as unknown as [{ buffer: SharedArrayBuffer }];
    Atomics.add(new Int32Array(buffer), 0, 1);
    const flushed = subscriber().flush();
    expect(sent.at(-1)).toEqual({ t: "flush", id: 0 });
    link.ended();
    await flushed;
    expect(seen).toEqual(["subscribed", "unsubscribed", "ended"]);
  });

  it("a worker that ended before it listened was never in the table: nothing to hand on", () => {
    const { direct, seen } = fakeDirect();
    new DirectLink(direct, () => {}, {} as Logger).ended();
    expect(seen).toEqual([]);
  });
});
