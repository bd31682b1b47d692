/** #29 item 4b: a load failure's reason as clients see it has no stack and no server paths. */
import { describe, expect, it } from "vitest";
import { clientReason } from "../../../src/repository/load-reason.ts";

describe("clientReason (#29)", () => {
  it("drops stack frames and writes the model folder as the model's name", () => {
    const message = [
      "model 'm' instance m_0: initialize failed: Error: init exploded",
      "    at initialize (file:///srv/models/m/1/model.ts:4:11)",
      "    at <anonymous> (/$bunfs/root/nereid:123:45)",
      "    at processTicksAndRejections (native:7:39)",
    ].join("\n");
    expect(clientReason(message, "/srv/models/m", "m")).toBe("model 'm' instance m_0: initialize failed: Error: init exploded");
    expect(clientReason("failed to import '/srv/models/m/1/model.ts': SyntaxError: Unexpected token", "/srv/models/m", "m")).toBe(
      "failed to import 'm/1/model.ts': SyntaxError: Unexpected token",
    );
    expect(clientReason("unable to find 'file:///srv/models/m/2/model.onnx' for model 'm'", "/srv/models/m", "m")).toBe(
      "unable to find 'm/2/model.onnx' for model 'm'",
    );
  });

  it("cuts other absolute paths to their last segment and leaves the rest of the text as it was", () => {
    expect(clientReason("cannot open /home/op/.cache/lib/libfoo.so.1: ENOENT (see =/etc/x)", "/srv/models/m", "m")).toBe(
      "cannot open libfoo.so.1: ENOENT (see =x)",
    );
    const plain = "model 'm': input 'IN' shape [1/2] a/b ratio 3/4, see http://example.com/a/b";
    expect(clientReason(plain, "/srv/models/m", "m")).toBe(plain);
    expect(clientReason("JavaScriptCore frame\nf@/srv/models/m/1/model.ts:1:2", "/srv/models/m", "m")).toBe("JavaScriptCore frame");
  });
});
