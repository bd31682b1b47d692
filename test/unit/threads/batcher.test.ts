/**
 * MessageBatcher (core/threads/batcher.ts, #30 item 6): what is sent within one turn of the
 * event loop is posted as one batch, in order, with every buffer given to transfer; the next
 * turn starts a new batch, and a turn that sends nothing posts nothing.
 */
import { describe, expect, it } from "vitest";
import { MessageBatcher, transferList, type Transfer } from "../../../src/core/threads/batcher.ts";

/** Runs the turn's pending setImmediate callbacks (the batcher's flush was scheduled first). */
const nextTurn = () => new Promise((r) => setImmediate(r));

describe("MessageBatcher", () => {
  it("posts what one turn sends as one batch, in order, with the buffers to transfer", async () => {
    const posts: { batch: string[]; transfer: Transfer[] }[] = [];
    const b = new MessageBatcher<string>((batch, transfer) => posts.push({ batch, transfer }));
    const x = new ArrayBuffer(8);
    const y = new ArrayBuffer(16);
    const z = new ArrayBuffer(4);
    b.send("a", [x]);
    b.send("b");
    b.send("c", [y, z]);
    expect(posts).toEqual([]);
    await nextTurn();
    expect(posts).toHaveLength(1);
    expect(posts[0]!.batch).toEqual(["a", "b", "c"]);
    expect(posts[0]!.transfer).toHaveLength(3);
    expect(posts[0]!.transfer[0]).toBe(x);
    expect(posts[0]!.transfer[1]).toBe(y);
    expect(posts[0]!.transfer[2]).toBe(z);
  });

  it("transfers a buffer two messages of one batch share once, and the batch posts over a real port", async () => {
    const { port1, port2 } = new MessageChannel();
    const got = new Promise<{ data: Uint8Array[] }>((r) => ((port2 as unknown as { onmessage: (e: { data: Uint8Array[] }) => void }).onmessage = r));
    const b = new MessageBatcher<Uint8Array>((batch, transfer) => port1.postMessage(batch, transfer as ArrayBuffer[]));
    const shared = new Uint8Array([1, 2, 3, 4]);
    b.send(shared.subarray(0, 2), [shared.buffer]);
    b.send(shared.subarray(2), [shared.buffer]);
    const { data } = await got;
    expect(data.map((v) => [...v])).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(shared.buffer.byteLength).toBe(0);
    port1.close();
    port2.close();
  });

  // Bun refuses a buffer already detached, as an empty body's shared constant was after its
  // first transfer (test/e2e/http/bodiless-post.test.ts); Node, which runs this, does not.
  it("transferList keeps each buffer once and drops those of length 0", () => {
    const x = new ArrayBuffer(8);
    const e = new ArrayBuffer(0);
    const { port1 } = new MessageChannel();
    expect(transferList([x, e, x, port1])).toEqual([x, port1]);
    expect(transferList([])).toEqual([]);
    port1.close();
  });

  it("take() gives back what the turn has not posted, whose buffers stay untransferred; the turn then posts only what is sent after", async () => {
    const posts: { batch: string[]; transfer: Transfer[] }[] = [];
    const b = new MessageBatcher<string>((batch, transfer) => posts.push({ batch, transfer }));
    const x = new ArrayBuffer(8);
    b.send("a", [x]);
    b.send("b");
    expect(b.take()).toEqual(["a", "b"]);
    expect(b.take()).toEqual([]);
    b.send("c");
    await nextTurn();
    await nextTurn();
    expect(posts).toEqual([{ batch: ["c"], transfer: [] }]);
    expect(x.byteLength).toBe(8);
  });

  it("starts a new batch each turn and posts nothing for a quiet one", async () => {
    const posts: { batch: number[]; transfer: Transfer[] }[] = [];
    const b = new MessageBatcher<number>((batch, transfer) => posts.push({ batch, transfer }));
    b.send(1);
    await nextTurn();
    await nextTurn();
    b.send(2);
    b.send(3);
    await nextTurn();
    expect(posts).toEqual([
      { batch: [1], transfer: [] },
      { batch: [2, 3], transfer: [] },
    ]);
  });

  it("takes what the post itself sends into the next batch", async () => {
    const posts: string[][] = [];
    const b: MessageBatcher<string> = new MessageBatcher<string>((batch) => {
      posts.push(batch);
      if (batch[0] === "first") b.send("reply");
    });
    b.send("first");
    await nextTurn();
    expect(posts).toEqual([["first"]]);
    await nextTurn();
    expect(posts).toEqual([["first"], ["reply"]]);
  });
});
