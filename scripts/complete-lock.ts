/**
 * Adds lock entries for optional platform packages that `npm install` left out of
 * package-lock.json. The registry this project builds against serves only the Linux
 * builds of some packages (rollup's native binaries), so npm cannot read the others'
 * manifests and omits them; `npm ci` then refuses the lock as out of sync. Each added
 * entry is marked optional with the os/cpu its name states, so npm skips it on other
 * platforms exactly as it would with a complete lock. Run after `npm install`:
 *
 *   bun scripts/complete-lock.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const lockPath = join(root, "package-lock.json");
const lock = JSON.parse(readFileSync(lockPath, "utf8"));
const packages: Record<string, Record<string, unknown>> = lock.packages;

const OS: Record<string, string> = {
  android: "android",
  darwin: "darwin",
  freebsd: "freebsd",
  linux: "linux",
  openbsd: "openbsd",
  openharmony: "openharmony",
  win32: "win32",
};
const CPU: Record<string, string> = {
  "arm-eabi": "arm",
  arm64: "arm64",
  x64: "x64",
  ia32: "ia32",
  arm: "arm",
  loong64: "loong64",
  ppc64: "ppc64",
  riscv64: "riscv64",
  s390x: "s390x",
};

function platformOf(name: string): { os?: string[]; cpu?: string[]; libc?: string[] } {
  const m = /\/[a-z]+-([a-z0-9]+)-([a-z0-9]+)(?:-([a-z]+))?$/.exec(name);
  if (!m) return {};
  const os = OS[m[1]!];
  const cpuKey = m[3] === "eabi" ? `${m[2]}-eabi` : m[2]!;
  const cpu = CPU[cpuKey] ?? CPU[m[2]!];
  const libc = m[3] === "musl" || m[3] === "musleabihf" ? ["musl"] : m[3] === "gnu" || m[3] === "gnueabihf" ? ["glibc"] : undefined;
  return { ...(os ? { os: [os] } : {}), ...(cpu ? { cpu: [cpu] } : {}), ...(libc ? { libc } : {}) };
}

let added = 0;
for (const [path, pkg] of Object.entries(packages)) {
  const optional = pkg.optionalDependencies as Record<string, string> | undefined;
  if (!optional) continue;
  for (const [dep, range] of Object.entries(optional)) {
    const entry = `node_modules/${dep}`;
    if (packages[entry] || packages[`${path}/${entry}`]) continue;
    if (dep === "fsevents") continue; // macOS only; npm never needs it in the lock here
    packages[entry] = { version: range.replace(/^[~^]/, ""), dev: pkg.dev ?? undefined, optional: true, ...platformOf(dep) };
    added++;
  }
}
const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)));
lock.packages = sorted;
writeFileSync(lockPath, JSON.stringify(lock, null, 2) + "\n");
console.log(`added ${added} optional platform entries to package-lock.json`);
