/**
 * The arm64 (Jetson) build starts under qemu-user and serves one inference. Runs only
 * where qemu-aarch64 and an arm64 C library are installed; skipped elsewhere.
 */
import { describe, it, expect } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/server-process.ts";

const hasQemu = ["qemu-aarch64-static", "qemu-aarch64"].some((q) => spawnSync("sh", ["-c", `command -v ${q}`]).status === 0);
const hasArm64Libc = existsSync("/lib/ld-linux-aarch64.so.1");

describe.skipIf(!hasQemu || !hasArm64Libc)("arm64 binary under qemu", () => {
  it("serves the simple model", () => {
    const out = execFileSync(join(ROOT, "scripts", "smoke-arm64.sh"), { cwd: ROOT, encoding: "utf8", timeout: 240_000 });
    expect(out).toContain('"model_name":"simple"');
    expect(out).toContain("arm64 OK");
  }, 300_000);
});
