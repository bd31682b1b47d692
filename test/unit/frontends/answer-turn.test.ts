// #30 item 5: a gRPC worker sends a turn's first answer at once and the others when the turn ends.
import { describe, expect, it } from "vitest";
import { turnEnd } from "../../../src/frontends/answer-turn.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("turnEnd", () => {
  it("lets a turn's first answer go at once and holds the others until the turn ends; the next turn starts afresh", async () => {
    await nextTurn();
    const order: string[] = [];
    expect(turnEnd()).toBeUndefined();
    order.push("first");
    const second = turnEnd();
    const third = turnEnd();
    expect(second).toBeInstanceOf(Promise);
    expect(third).toBeInstanceOf(Promise);
    void second!.then(() => order.push("second"));
    void third!.then(() => order.push("third"));
    await Promise.resolve();
    // Microtasks of this turn run before them: they wait for the loop's next turn.
    order.push("same turn");
    await nextTurn();
    await Promise.resolve();
    expect(order).toEqual(["first", "same turn", "second", "third"]);
    expect(turnEnd()).toBeUndefined();
  });
});
