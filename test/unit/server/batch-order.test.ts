/**
 * The scheduling thread takes a channel's requests in the order they were submitted
 * (#30 item 2, src/server/batch-order.ts): one that came as a message after a later one
 * came on the ring is still taken first, so a sequence's START is not passed by its next
 * request; refs wrap at 2^32.
 */
import { describe, expect, it } from "vitest";
import { InOrder } from "../../../src/server/batch-order.ts";

describe("InOrder", () => {
  it("takes each request at once when it is the next, and holds back one that comes early until those before it came", () => {
    const taken: string[] = [];
    const order = new InOrder<string>((x) => taken.push(x));
    order.arrive(1, "a");
    order.arrive(3, "c");
    order.arrive(4, "d");
    expect(taken).toEqual(["a"]);
    expect([order.held(3), order.held(4), order.held(2)]).toEqual([true, true, false]);
    order.arrive(2, "b");
    expect(taken).toEqual(["a", "b", "c", "d"]);
    expect(order.held(3)).toBe(false);
    order.arrive(6, "f");
    order.arrive(5, "e");
    order.arrive(7, "g");
    expect(taken).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
  });

  it("follows the submitter's refs across their wrap from 2^32 - 1 to 0, as BatchClient numbers them ((n + 1) >>> 0)", () => {
    const taken: number[] = [];
    const order = new InOrder<number>((x) => taken.push(x), 0xfffffffe);
    order.arrive(0, 0);
    order.arrive(1, 1);
    order.arrive(0xffffffff, 0xffffffff);
    expect(taken).toEqual([]);
    order.arrive(0xfffffffe, 0xfffffffe);
    expect(taken).toEqual([0xfffffffe, 0xffffffff, 0, 1]);
  });

  it("an item whose take throws holds back none behind it; the error comes once they have gone", () => {
    const taken: string[] = [];
    const order = new InOrder<string>((x) => {
      if (x === "b") throw new Error("b failed");
      taken.push(x);
    });
    order.arrive(3, "c");
    order.arrive(2, "b");
    expect(() => order.arrive(1, "a")).toThrow("b failed");
    expect(taken).toEqual(["a", "c"]);
    order.arrive(4, "d");
    expect(taken).toEqual(["a", "c", "d"]);
  });
});
