/**
 * `npm run release` (scripts/release.sh, issue #21): both architectures' executables with
 * SHA-256 sums that `sha256sum -c` accepts. Built here with --no-images into a temporary
 * folder (the images are built and run by container.test.ts).
 */
import { describe, it, expect, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, openSync, readSync, closeSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/server-process.ts";

const out = join(mkdtempSync(join(tmpdir(), "nereid-release-")), "release");
const VERSION = JSON.parse(execFileSync("node", ["-p", "JSON.stringify(require('./package.json').version)"], { cwd: ROOT, encoding: "utf8" }));

/** ELF e_machine: 62 is x86-64, 183 is AArch64. */
function elfMachine(file: string): number {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(20);
    readSync(fd, head, 0, 20, 0);
    expect(head.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
    return head.readUInt16LE(18);
  } finally {
    closeSync(fd);
  }
}

afterAll(() => rmSync(join(out, ".."), { recursive: true, force: true }));

describe("npm run release (#21)", () => {
  it("builds x86-64 and arm64 executables with SHA-256 sums that verify", () => {
    const printed = execFileSync("bash", [join(ROOT, "scripts", "release.sh"), "--no-images", `--out=${out}`], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 600_000,
    });
    const x64 = `nereid-${VERSION}-linux-x64`;
    const arm64 = `nereid-${VERSION}-linux-arm64`;
    expect(readdirSync(out).sort()).toEqual(["SHA256SUMS", arm64, x64].sort());
    expect(
      printed
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/)[1]),
    ).toEqual([arm64, x64]);
    expect(execFileSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: out, encoding: "utf8" })).toBe(`${arm64}: OK\n${x64}: OK\n`);
    expect(elfMachine(join(out, x64))).toBe(62);
    expect(elfMachine(join(out, arm64))).toBe(183);
    expect(execFileSync(join(out, x64), ["--version"], { encoding: "utf8" })).toBe(`nereid ${VERSION} (Triton protocol 2.73.0)\n`);
  }, 600_000);
});
