/** The poller's object-storage path (#21 item 4): `check` every interval, a change applied once, no watcher without local folders. */
import { describe, expect, it } from "vitest";
import { RepositoryPoller } from "../../../src/repository/poller.ts";

describe("RepositoryPoller check", () => {
  it("checks every interval and applies only what the check reports as changed", async () => {
    const answers = [false, true, false];
    let checks = 0;
    let applied = 0;
    const poller = new RepositoryPoller({
      repositories: [],
      intervalSecs: 1,
      settleMs: 10,
      check: async () => answers[checks++] ?? false,
      onChange: async () => {
        applied++;
      },
    });
    await poller.start(); // resolves at once: no local folder to watch
    const end = Date.now() + 10_000;
    while (checks < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 100)); // the change found by the second check has settled and been applied
    await poller.close();
    expect(checks).toBe(3);
    expect(applied).toBe(1);
    const after = checks;
    await new Promise((r) => setTimeout(r, 1_200));
    expect(checks).toBe(after); // closed: no more checks
  });
});
