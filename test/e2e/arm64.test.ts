/**
 * The arm64 (Jetson) build under qemu-user: it starts and answers HTTP, and (where this
 * runs as root) serves inferences through ONNX Runtime's arm64 library. Runs only where
 * qemu-aarch64 and an arm64 C library are installed; skipped elsewhere.
 *
 * Under qemu-user /proc/cpuinfo is the x86 host's, and ORT's arm64 library crashes
 * reading it at load, so `scripts/smoke-arm64.sh` shows the server an arm64 cpuinfo
 * through a private mount namespace (unshare -m, root only). This is emulation: it
 * checks the arm64 binary, koffi's arm64 calls and ORT's arm64 kernels for `simple` and
 * `simple_identity`, not a Jetson.
 */
import { describe, it, expect } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/server-process.ts";

const hasQemu = ["qemu-aarch64-static", "qemu-aarch64"].some((q) => spawnSync("sh", ["-c", `command -v ${q}`]).status === 0);
const hasArm64Libc = existsSync("/lib/ld-linux-aarch64.so.1");
const canUnshare = spawnSync("unshare", ["-m", "true"], { stdio: "ignore" }).status === 0;
const smoke = (args: string[]) => execFileSync(join(ROOT, "scripts", "smoke-arm64.sh"), args, { cwd: ROOT, encoding: "utf8", timeout: 400_000 });

describe.skipIf(!hasQemu || !hasArm64Libc)("arm64 binary under qemu", () => {
  it.skipIf(canUnshare)(
    "starts and serves server metadata (no root here, so no inference)",
    () => {
      const out = smoke(["--no-infer"]);
      expect(out).toContain('"name":"triton"');
      expect(out).toContain("arm64 server OK without models");
    },
    450_000,
  );

  it.skipIf(!canUnshare)(
    "starts, serves server metadata, and answers inferences through ORT's arm64 library",
    () => {
      const out = smoke([]);
      expect(out).toContain("arm64 server OK without models");
      expect(out).toContain('"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]');
      expect(out).toContain('"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":[-1,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14]');
      expect(out).toContain('"name":"OUTPUT0","datatype":"BYTES","shape":[1,3],"data":["arm64","","hé"]');
      expect(out).toMatch(/arm64 OK \(x86_64 host, .*qemu-aarch64/);
    },
    450_000,
  );
});
