// #29 item 9: repository text files are read with a bound on their size.
import { afterAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { readRepositoryText } from "../../../src/repository/text-file.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-text-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readRepositoryText", () => {
  it("reads a file up to the limit exactly, UTF-8 included", () => {
    writeFileSync(join(dir, "ok"), "héllo\n");
    expect(readRepositoryText(join(dir, "ok"), "f", 7)).toBe("héllo\n");
  });

  it("refuses a file over the limit by its size, naming it as the caller says (not by path)", () => {
    writeFileSync(join(dir, "big"), "12345678");
    expect(() => readRepositoryText(join(dir, "big"), "config.pbtxt of model 'm'", 7)).toThrow(
      /^config\.pbtxt of model 'm' is 8 bytes, more than the limit of 7 bytes$/,
    );
    truncateSync(join(dir, "big"), 10 * 1024 * 1024 * 1024); // sparse 10 GiB: refused without reading
    expect(() => readRepositoryText(join(dir, "big"), "f", 1024)).toThrow(`f is ${10 * 1024 * 1024 * 1024} bytes, more than the limit of 1024 bytes`);
  });

  it("refuses what is not a regular file (a FIFO would block the server)", () => {
    mkdirSync(join(dir, "d"));
    expect(() => readRepositoryText(join(dir, "d"), "f", 100)).toThrow("f is not a regular file");
    execFileSync("mkfifo", [join(dir, "fifo")]);
    expect(() => readRepositoryText(join(dir, "fifo"), "f", 100)).toThrow("f is not a regular file");
  });
});
