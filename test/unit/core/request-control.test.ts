import { describe, expect, it } from "vitest";
import { continuesSequence, parseControl } from "../../../src/core/request.ts";

describe("parseControl: a request's control fields, read once", () => {
  it("reads sequence, priority and timeout into typed fields, with Triton's defaults", () => {
    expect(parseControl({})).toEqual({ sequenceId: undefined, sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0 });
    expect(parseControl({ sequence_id: 7, sequence_start: true, sequence_end: true, priority: 2n, timeout: 500 })).toEqual({
      sequenceId: 7,
      sequenceStart: true,
      sequenceEnd: true,
      priority: 2,
      timeoutUs: 500,
    });
  });

  it('keeps a 64-bit correlation ID exact and treats 0 and "" as no ID', () => {
    expect(parseControl({ sequence_id: 18446744073709551615n }).sequenceId).toBe(18446744073709551615n);
    expect(parseControl({ sequence_id: "abc" }).sequenceId).toBe("abc");
    expect(parseControl({ sequence_id: 0 }).sequenceId).toBeUndefined();
    expect(parseControl({ sequence_id: 0n }).sequenceId).toBeUndefined();
    expect(parseControl({ sequence_id: "" }).sequenceId).toBeUndefined();
  });

  it("refuses a negative, fractional or past-uint64 ID, priority or timeout with INVALID_ARG", () => {
    // Past uint64 (only the in-process API can pass one): refused, not wrapped onto another sequence by a 64-bit slot.
    expect(parseControl({ sequence_id: 2 ** 64 - 2048 }).sequenceId).toBe(2 ** 64 - 2048);
    for (const [key, v] of [
      ["sequence_id", -1],
      ["sequence_id", 1.5],
      ["sequence_id", -1n],
      ["sequence_id", 2n ** 64n + 5n],
      ["sequence_id", 2 ** 64],
      ["sequence_id", 1e20],
      ["priority", -1],
      ["priority", 0.5],
      ["timeout", -3],
    ] as const) {
      expect(() => parseControl({ [key]: v }), `${key}=${v}`).toThrow(
        expect.objectContaining({ code: "INVALID_ARG", message: expect.stringContaining(`invalid value for '${key}'`) }),
      );
    }
  });

  it("a request continues a sequence when it has an ID and no START", () => {
    expect(continuesSequence(parseControl({ sequence_id: 3 }))).toBe(true);
    expect(continuesSequence(parseControl({ sequence_id: 3, sequence_start: true }))).toBe(false);
    expect(continuesSequence(parseControl({ sequence_id: 0n }))).toBe(false);
  });
});
