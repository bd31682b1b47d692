/**
 * The error catalog in unit form (issue #20; P-08, G-09): every ErrorCode through the one
 * HTTP mapping (frontends/http/status.ts) and the one gRPC mapping (frontends/grpc/status.ts),
 * then through the HTTP handler (createHttpHandler, called without a socket) and the gRPC
 * service object (called with a fake call and callback) for a core that throws it. This is
 * where CANCELLED and UNKNOWN are checked end to end: no request from outside makes the
 * server answer them (test/e2e/error-catalog.test.ts covers the six a client can provoke).
 * Last, native failures of each library binding come out with their own code.
 */
import { describe, it, expect, beforeAll } from "vitest";
import type { ServerUnaryCall, sendUnaryData } from "@grpc/grpc-js";
import { ERROR_CODES, ServerError, type ErrorCode } from "../../../src/core/errors.ts";
import { httpStatus } from "../../../src/frontends/http/status.ts";
import { grpcStatus } from "../../../src/frontends/grpc/status.ts";
import { createHttpHandler } from "../../../src/frontends/http/routes.ts";
import { inferenceService } from "../../../src/frontends/grpc/service.ts";
import { configureLog } from "../../../src/core/logger.ts";
import type { InferenceServer } from "../../../src/server/server.ts";
import { LibraryLoadError } from "../../../ffi/errors.ts";
import { CudaError } from "../../../ffi/cuda/driver.ts";
import { TensorRtError } from "../../../ffi/tensorrt/errors.ts";
import { SharedMemoryError } from "../../../ffi/libc/shm.ts";
import { statusError as ovStatusError } from "../../../ffi/openvino/status.ts";
import { OV_STATUS } from "../../../ffi/openvino/types.ts";
import type { OvApi } from "../../../ffi/openvino/symbols.ts";
import { ERROR_CATALOG } from "../../helpers/error-catalog.ts";

beforeAll(() => configureLog({ info: false, warning: false, error: false }));

/** A core whose server-metadata call (GET /v2, ServerMetadata) throws `err`. */
const failingServer = (err: unknown) =>
  ({
    state: "READY",
    serverMetadata() {
      throw err;
    },
  }) as unknown as InferenceServer;

async function overHttp(err: unknown): Promise<{ status: number; contentType: string | undefined; body: unknown }> {
  const handle = createHttpHandler(failingServer(err), { maxInputSize: 1 << 20 });
  const res = await handle({ method: "GET", path: "/v2", header: () => undefined, body: async () => new Uint8Array(0) });
  return { status: res.status, contentType: res.headers["content-type"], body: JSON.parse(String(res.body)) };
}

function overGrpc(err: unknown): Promise<{ code: number; details: string }> {
  const service = inferenceService(failingServer(err), {});
  const handler = service.ServerMetadata as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
  return new Promise((resolve, reject) =>
    handler({ request: {} } as ServerUnaryCall<unknown, unknown>, (e, value) =>
      e ? resolve(e as { code: number; details: string }) : reject(new Error(`answered ${JSON.stringify(value)}`)),
    ),
  );
}

describe("the catalog", () => {
  it("lists every code once", () => {
    expect(Object.keys(ERROR_CATALOG).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each(ERROR_CODES)("%s: httpStatus and grpcStatus give Triton's statuses", (code) => {
    expect(httpStatus(code)).toBe(ERROR_CATALOG[code].http);
    expect(grpcStatus(code)).toBe(ERROR_CATALOG[code].grpc);
  });
});

describe("through the handlers, in process", () => {
  it.each(ERROR_CODES)('%s: HTTP answers the status with {"error": message}; gRPC the status with the message', async (code) => {
    const message = `the core failed with ${code}`;
    expect(await overHttp(new ServerError(code, message))).toEqual({
      status: ERROR_CATALOG[code].http,
      contentType: "application/json",
      body: { error: message },
    });
    expect(await overGrpc(new ServerError(code, message))).toMatchObject({ code: ERROR_CATALOG[code].grpc, details: message });
  });

  it("anything else thrown is INTERNAL with its message", async () => {
    expect(await overHttp(new Error("plain"))).toMatchObject({ status: 500, body: { error: "plain" } });
    expect(await overGrpc(new Error("plain"))).toMatchObject({ code: ERROR_CATALOG.INTERNAL.grpc, details: "plain" });
  });
});

describe("native failures keep their library's code up to the client", () => {
  const ovApi = { ov_get_error_info: () => "inference was cancelled", ov_get_last_err_msg: undefined } as unknown as OvApi;
  const cases: [string, unknown, ErrorCode, string][] = [
    [
      "a library that cannot be loaded",
      new LibraryLoadError("cannot load X (libx.so); tried:\n  libx.so: missing", { library: "X" }),
      "UNAVAILABLE",
      "cannot load X (libx.so); tried:\n  libx.so: missing",
    ],
    [
      "a failed CUDA call",
      CudaError.failed("cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
      "INTERNAL",
      "CUDA driver: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
    ],
    [
      "a CUDA IPC handle the driver refuses",
      CudaError.failed("cuIpcOpenMemHandle_v2", 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
      "INVALID_ARG",
      "CUDA driver: cuIpcOpenMemHandle_v2 failed: CUDA_ERROR_INVALID_HANDLE (400): invalid resource handle",
    ],
    [
      "a shape TensorRT refuses",
      TensorRtError.failed("IExecutionContext::setInputShape('X', [9])", ["outside the profile"], { code: "INVALID_ARG" }),
      "INVALID_ARG",
      "TensorRT IExecutionContext::setInputShape('X', [9]) failed: outside the profile",
    ],
    [
      "a cancelled OpenVINO inference",
      ovStatusError(ovApi, OV_STATUS.INFER_CANCELLED, "ov_infer_request_infer"),
      "CANCELLED",
      "openvino: ov_infer_request_infer: INFER_CANCELLED: inference was cancelled",
    ],
    [
      "a shared-memory object smaller than the region",
      new SharedMemoryError("INVALID_ARG", "lseek", "shared memory object '/k' holds 8 bytes, fewer than the 64 requested"),
      "INVALID_ARG",
      "shared memory object '/k' holds 8 bytes, fewer than the 64 requested",
    ],
  ];
  it.each(cases)("%s", async (_what, err, code, message) => {
    expect(await overHttp(err)).toMatchObject({ status: ERROR_CATALOG[code].http, body: { error: message } });
    expect(await overGrpc(err)).toMatchObject({ code: ERROR_CATALOG[code].grpc, details: message });
  });
});
