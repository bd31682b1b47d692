/**
 * The guard of a native handle shared across threads (#30, ffi/shared-guard.ts), as ONNX
 * Runtime's sessions and OpenVINO's compiled models use it: a borrower's guard made from
 * the owner's buffer sees the same counts, the owner's retire() waits for the borrowers
 * inside and lets none in after it.
 */
import { describe, expect, it } from "vitest";
import { SharedGuard } from "../../ffi/shared-guard.ts";

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 2));
};

describe("SharedGuard", () => {
  it("retires at once when no borrower is inside, and lets none in after", () => {
    const owner = new SharedGuard();
    const borrower = new SharedGuard(owner.buffer);
    expect(borrower.enter()).toBe(true);
    borrower.leave();
    let idle = 0;
    owner.retire(() => idle++);
    expect(idle).toBe(1);
    expect(borrower.enter()).toBe(false);
    expect(borrower.enter()).toBe(false);
  });

  it("waits for every borrower inside, then calls idle once, whatever retire() is called again meanwhile", async () => {
    const owner = new SharedGuard();
    const a = new SharedGuard(owner.buffer);
    const b = new SharedGuard(owner.buffer);
    expect(a.enter()).toBe(true);
    expect(b.enter()).toBe(true);
    const idle: string[] = [];
    owner.retire(() => idle.push("first"));
    owner.retire(() => idle.push("second"));
    expect(b.enter()).toBe(false); // retired: a new use is refused, and counted out again
    a.leave();
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toEqual([]); // b is still inside
    b.leave();
    await until(() => idle.length > 0);
    expect(idle).toEqual(["first"]);
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toEqual(["first"]);
  });
});
