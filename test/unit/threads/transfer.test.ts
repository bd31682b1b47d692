/**
 * Transfer lists and wire errors (core/threads/transfer.ts, wire-error.ts; #30 item 6): a
 * request's input buffers of TRANSFER_MIN_BYTES or more are transferred (each once), smaller
 * ones and shared memory copied; ownBuffer never hands over bytes that others view; a
 * ServerError crosses as its code and message.
 */
import { describe, expect, it } from "vitest";
import { inputBuffers, ownBuffer, TRANSFER_MIN_BYTES } from "../../../src/core/threads/transfer.ts";
import { fromWireError, wireError } from "../../../src/core/threads/wire-error.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { InferenceRequest } from "../../../src/core/request.ts";

const request = (...data: Uint8Array[]) =>
  ({ inputs: data.map((d, i) => ({ name: `IN${i}`, datatype: "UINT8", shape: [d.byteLength], data: d })) }) as unknown as InferenceRequest;

describe("inputBuffers", () => {
  it("lists each large input buffer once, and no small or shared one", () => {
    const large = new ArrayBuffer(TRANSFER_MIN_BYTES);
    const other = new ArrayBuffer(TRANSFER_MIN_BYTES * 2);
    const small = new ArrayBuffer(TRANSFER_MIN_BYTES - 1);
    const shared = new SharedArrayBuffer(TRANSFER_MIN_BYTES * 2);
    const r = request(
      new Uint8Array(large, 0, 10),
      new Uint8Array(large, 10, 10),
      new Uint8Array(small),
      new Uint8Array(shared as unknown as ArrayBuffer),
      new Uint8Array(other),
    );
    const out = inputBuffers(r);
    expect(out).toHaveLength(2);
    expect(out[0]).toBe(large);
    expect(out[1]).toBe(other);
  });

  it("lists nothing for a request without inputs", () => {
    expect(inputBuffers(request())).toEqual([]);
  });
});

describe("ownBuffer", () => {
  it("gives a view's own buffer when it views all of it", () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(ownBuffer(bytes)).toBe(bytes.buffer);
  });

  it("copies a view of part of a buffer, so that a transfer takes only its bytes", () => {
    const whole = new Uint8Array([9, 1, 2, 3, 9]);
    const part = whole.subarray(1, 4);
    const own = ownBuffer(part);
    expect(own).not.toBe(whole.buffer);
    expect([...new Uint8Array(own)]).toEqual([1, 2, 3]);
    structuredClone(own, { transfer: [own] });
    expect([...whole]).toEqual([9, 1, 2, 3, 9]);
  });
});

describe("wireError", () => {
  it("keeps a ServerError's code and message, and makes anything else INTERNAL", () => {
    expect(wireError(new ServerError("NOT_FOUND", "no model 'x'"))).toEqual({ code: "NOT_FOUND", message: "no model 'x'" });
    expect(wireError(new Error("boom"))).toEqual({ code: "INTERNAL", message: "boom" });
    expect(wireError("text")).toEqual({ code: "INTERNAL", message: "text" });
  });

  it("survives structured clone and comes back as the same ServerError", () => {
    const e = fromWireError(structuredClone(wireError(new ServerError("UNAVAILABLE", "gone"))));
    expect(e).toBeInstanceOf(ServerError);
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toBe("gone");
  });
});
