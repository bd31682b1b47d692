/** LocalAbort: the scheduling thread's request cancellation, the part of AbortSignal the schedulers use (#30). */
import { describe, expect, it } from "vitest";
import { LocalAbort, whenCancelled } from "../../../src/core/cancel.ts";

describe("LocalAbort", () => {
  it("calls each listener once, in the order added, and is aborted from then on", () => {
    const abort = new LocalAbort();
    const calls: string[] = [];
    abort.addEventListener("abort", () => calls.push("a"));
    abort.addEventListener("abort", () => calls.push("b"));
    expect(abort.signal.aborted).toBe(false);
    abort.abort();
    abort.abort();
    expect(calls).toEqual(["a", "b"]);
    expect(abort.signal.aborted).toBe(true);
  });

  it("does not call a listener removed before the abort, and keeps the others", () => {
    const abort = new LocalAbort();
    const calls: string[] = [];
    const a = () => calls.push("a");
    abort.addEventListener("abort", a);
    abort.addEventListener("abort", () => calls.push("b"));
    abort.removeEventListener("abort", a);
    abort.removeEventListener("abort", a);
    abort.abort();
    expect(calls).toEqual(["b"]);
  });

  it("calls every listener when one throws, then throws the first error", () => {
    const abort = new LocalAbort();
    const calls: string[] = [];
    abort.addEventListener("abort", () => {
      calls.push("a");
      throw new Error("first");
    });
    abort.addEventListener("abort", () => {
      calls.push("b");
      throw new Error("second");
    });
    abort.addEventListener("abort", () => calls.push("c"));
    expect(() => abort.abort()).toThrow("first");
    expect(calls).toEqual(["a", "b", "c"]);
  });

  it("serves whenCancelled as an AbortSignal does: cancel once on abort, nothing once forgotten", () => {
    const heard = new LocalAbort();
    let cancels = 0;
    whenCancelled(heard.signal, () => cancels++);
    heard.abort();
    expect(cancels).toBe(1);

    const forgotten = new LocalAbort();
    const forget = whenCancelled(forgotten.signal, () => cancels++);
    forget();
    forgotten.abort();
    expect(cancels).toBe(1);
  });
});
