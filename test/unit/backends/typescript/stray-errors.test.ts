/**
 * Issue #29: an error nobody caught is logged against the main-thread model whose files its
 * stack runs through, or as the server's own bug; claims are counted per load and released once.
 */
import { describe, it, expect, afterEach } from "vitest";
import { configureLog } from "../../../../src/core/logger.ts";
import { claimModelFiles, reportStrayError, strayErrorOwner } from "../../../../src/backends/typescript/stray-errors.ts";

const withStack = (stack: string) => Object.assign(new Error("x"), { stack });

describe("stray errors", () => {
  const lines: string[] = [];
  configureLog({}, (l) => lines.push(l));
  afterEach(() => void (lines.length = 0));

  it("are attributed by the model folder in the stack, until the last claim is released", () => {
    const a = claimModelFiles("/repo/add_one", "add_one");
    const b = claimModelFiles("/repo/add_one/", "add_one");
    const err = withStack("Error: x\n    at execute (/repo/add_one/1/model.ts:3:9)");
    expect(strayErrorOwner(err)).toBe("add_one");
    // Another folder sharing the prefix is not the model's.
    expect(strayErrorOwner(withStack("Error: x\n    at f (/repo/add_one_v2/1/model.ts:1:1)"))).toBeUndefined();
    a();
    a(); // once only
    expect(strayErrorOwner(err)).toBe("add_one");
    b();
    expect(strayErrorOwner(err)).toBeUndefined();
  });

  it("log the model's name, or call an unattributed one a server bug", () => {
    const release = claimModelFiles("/repo/m", "m");
    reportStrayError("unhandled rejection", withStack("Error: boom\n    at x (/repo/m/1/model.js:1:1)"));
    reportStrayError("uncaught exception", "a string, no stack");
    release();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^E.* src\/backends\/typescript\/stray-errors\.ts\] model 'm': unhandled rejection \(the server keeps serving\): Error: boom\\n {4}at x \(\/repo\/m\/1\/model\.js:1:1\)$/,
    ); // one log line: the stack's newlines escaped
    expect(lines[1]).toMatch(
      /^E.* src\/backends\/typescript\/stray-errors\.ts\] INTERNAL: uncaught exception outside any model's code, a server bug \(the server keeps serving\): a string, no stack$/,
    );
  });
});
