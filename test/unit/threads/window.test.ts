/**
 * SendWindow: the flow control of a stream the main thread relays to a frontend worker
 * thread (#29 finding 5): open while fewer than STREAM_WINDOW_MESSAGES messages and
 * STREAM_WINDOW_BYTES bytes are unacknowledged; waits end on the ack that opens it, or
 * when the stream is closed.
 */
import { describe, expect, it } from "vitest";
import { SendWindow, STREAM_WINDOW_BYTES, STREAM_WINDOW_MESSAGES } from "../../../src/core/threads/window.ts";

/** Whether `p` has settled once pending callbacks have run. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("SendWindow", () => {
  it("closes at STREAM_WINDOW_MESSAGES unacknowledged messages and opens on the next ack", async () => {
    const w = new SendWindow();
    for (let i = 1; i < STREAM_WINDOW_MESSAGES; i++) expect(w.sent(10)).toBe(true);
    expect(w.sent(10)).toBe(false);
    expect(w.open).toBe(false);
    const ready = w.ready();
    expect(await settled(ready)).toBe(false);
    w.acked(1);
    expect(w.open).toBe(true);
    expect(await settled(ready)).toBe(true);
  });

  it("closes at STREAM_WINDOW_BYTES; a message larger than the window still goes alone", async () => {
    const w = new SendWindow();
    expect(w.sent(STREAM_WINDOW_BYTES - 1)).toBe(true);
    expect(w.sent(1)).toBe(false);
    w.acked(1);
    expect(w.open).toBe(true);
    w.acked(1);
    expect(w.sent(10 * STREAM_WINDOW_BYTES)).toBe(false);
    const ready = w.ready();
    expect(await settled(ready)).toBe(false);
    w.acked(1);
    expect(await settled(ready)).toBe(true);
    // Acks beyond what was sent change nothing.
    w.acked(5);
    expect(w.sent(STREAM_WINDOW_BYTES - 1)).toBe(true);
  });

  it("acknowledges in order: the oldest message's bytes leave the window first", () => {
    const w = new SendWindow();
    w.sent(STREAM_WINDOW_BYTES / 2);
    w.sent(STREAM_WINDOW_BYTES / 2);
    expect(w.open).toBe(false);
    w.acked(1);
    expect(w.open).toBe(true);
    expect(w.sent(1)).toBe(true);
    expect(w.sent(STREAM_WINDOW_BYTES / 2)).toBe(false);
  });

  it("close() ends every wait and keeps the window open", async () => {
    const w = new SendWindow();
    w.sent(STREAM_WINDOW_BYTES);
    const waits = [w.ready(), w.ready()];
    expect(await settled(Promise.all(waits).then(() => undefined))).toBe(false);
    w.close();
    expect(await settled(Promise.all(waits).then(() => undefined))).toBe(true);
    expect(w.sent(STREAM_WINDOW_BYTES)).toBe(true);
    expect(await settled(w.ready())).toBe(true);
  });
});
