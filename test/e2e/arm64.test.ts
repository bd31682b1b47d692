/**
 * The arm64 (Jetson) build starts under qemu-user and answers HTTP. Runs only where
 * qemu-aarch64 and an arm64 C library are installed; skipped elsewhere. Inference is not
 * checked here: ONNX Runtime's arm64 library crashes in its own load-time initialisation
 * under Debian's qemu-user 7.2 (before any of our calls), so that step needs arm64
 * hardware: `scripts/smoke-arm64.sh` without --no-infer.
 */
import { describe, it, expect } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/server-process.ts";

const hasQemu = ["qemu-aarch64-static", "qemu-aarch64"].some((q) => spawnSync("sh", ["-c", `command -v ${q}`]).status === 0);
const hasArm64Libc = existsSync("/lib/ld-linux-aarch64.so.1");

describe.skipIf(!hasQemu || !hasArm64Libc)("arm64 binary under qemu", () => {
  it("starts and serves server metadata", () => {
    const out = execFileSync(join(ROOT, "scripts", "smoke-arm64.sh"), ["--no-infer"], { cwd: ROOT, encoding: "utf8", timeout: 240_000 });
    expect(out).toContain('"name":"triton"');
    expect(out).toContain("arm64 server OK without models");
  }, 300_000);
});
