/**
 * Regression: koffi closes a library when its handle is garbage-collected. The bound
 * OrtApi must keep the handle, or calls after a GC jump into unmapped memory (seen as
 * a segfault on the first inference of a server).
 */
import { describe, it, expect } from "vitest";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { bindOrtApi } from "../../ffi/onnxruntime/symbols.ts";
import { ortLibraryCandidates } from "../../ffi/onnxruntime/library.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("ORT library lifetime", () => {
  it("stays loaded after garbage collection while the table is in use", async () => {
    const api = bindOrtApi(ortLibraryCandidates(undefined));
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    const status = api.CreateStatus(2, "still here");
    expect(api.GetErrorCode(status)).toBe(2);
    expect(api.GetErrorMessage(status)).toBe("still here");
    api.ReleaseStatus(status);
  });
});
