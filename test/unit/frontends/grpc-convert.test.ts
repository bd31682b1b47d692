/**
 * Response parameters through the real protobuf codec: 64-bit integers that the core holds
 * as bigint are encoded exactly (int64_param, or uint64_param beyond int64), G-02.
 */
import { describe, it, expect } from "vitest";
import { messageType, REQUEST_DECODE } from "../../../src/frontends/grpc/protos.ts";
import { fromInferenceResponse } from "../../../src/frontends/grpc/convert.ts";
import { wireParameter } from "../../../src/frontends/grpc/parameters.ts";

describe("response parameters", () => {
  it("encode bigint and integral numbers exactly, and fractions as doubles", () => {
    const t = messageType("inference.ModelInferResponse");
    const msg = fromInferenceResponse({
      modelName: "m",
      modelVersion: "1",
      outputs: [],
      parameters: { a: 9007199254740993n, b: -9223372036854775808n, c: 18446744073709551615n, d: 2 ** 60, e: 0.5, f: true, g: "s" },
    } as never);
    const decoded = t.toObject(t.decode(t.encode(t.fromObject(msg)).finish()), REQUEST_DECODE) as { parameters: Record<string, object> };
    expect(decoded.parameters).toEqual({
      a: { int64_param: 9007199254740993n, parameter_choice: "int64_param" },
      b: { int64_param: -9223372036854775808n, parameter_choice: "int64_param" },
      c: { uint64_param: 18446744073709551615n, parameter_choice: "uint64_param" },
      d: { int64_param: 2n ** 60n, parameter_choice: "int64_param" },
      e: { double_param: 0.5, parameter_choice: "double_param" },
      f: { bool_param: true, parameter_choice: "bool_param" },
      g: { string_param: "s", parameter_choice: "string_param" },
    });
  });

  it("keeps what int64 cannot hold as a double", () => {
    expect(wireParameter(2 ** 64)).toEqual({ double_param: 2 ** 64 });
    expect(wireParameter(2n ** 64n)).toEqual({ double_param: 2 ** 64 });
  });
});
