/**
 * getKoffi(): the `koffi` package normally, or the koffi.node that NEREID_KOFFI_NODE names
 * (what a compiled binary does with its embedded copy). Each case runs in a fresh Bun
 * process, since koffi is loaded once per process.
 */
import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const NATIVE = join(ROOT, "node_modules", "@koromix", `koffi-linux-${process.arch}`, `linux_${process.arch}`, "koffi.node");
const SCRIPT = `
import { getKoffi } from ${JSON.stringify(join(ROOT, "ffi", "load.ts"))};
const k = getKoffi();
console.log(typeof k.load, k.version);
`;

function run(env: Record<string, string | undefined>) {
  const r = spawnSync(BUN, ["-e", SCRIPT], { env: { ...process.env, ...env }, encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr };
}

describe.skipIf(!existsSync(BUN))("getKoffi", () => {
  it("loads the koffi package", () => {
    const r = run({ NEREID_KOFFI_NODE: undefined });
    expect(r.status, r.err).toBe(0);
    expect(r.out).toMatch(/^function 3\.\d+\.\d+$/);
  });

  it.skipIf(!existsSync(NATIVE))("loads the native module NEREID_KOFFI_NODE names", () => {
    const r = run({ NEREID_KOFFI_NODE: NATIVE });
    expect(r.status, r.err).toBe(0);
    expect(r.out).toMatch(/^function 3\.\d+\.\d+$/);
  });

  it("says which native module it could not load", () => {
    const r = run({ NEREID_KOFFI_NODE: "/nonexistent/koffi.node" });
    expect(r.status).not.toBe(0);
    expect(r.err).toContain("cannot load koffi's native module from /nonexistent/koffi.node: ");
  });
});
