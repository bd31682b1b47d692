/**
 * Where the Deno 2 runtime the tests run Nereid under is: the npm package `deno` (a dev
 * dependency), or NEREID_TEST_DENO. Missing Deno is an error, not a skip: CI promises Deno.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export function denoBinary(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const candidates = [
    process.env.NEREID_TEST_DENO,
    // The executable itself first: node_modules/.bin/deno may be the package's Node
    // wrapper (bin.cjs), which would not pass SIGTERM on to the server.
    join(ROOT, "node_modules", "deno", "deno"),
    join(ROOT, "node_modules", "@deno", `linux-${arch}-glibc`, "deno"),
    join(ROOT, "node_modules", ".bin", "deno"),
  ];
  const found = candidates.find((c): c is string => !!c && existsSync(c));
  if (!found) {
    throw new Error(
      `Deno not found (looked for ${candidates.filter(Boolean).join(", ")}): add the npm package "deno" as a dev dependency (npm i -D deno) or set NEREID_TEST_DENO`,
    );
  }
  return found;
}

/** `deno run` as docs/deploy/binary.md documents it, with the npm packages from node_modules. */
export function denoRun(script: string): string[] {
  return [denoBinary(), "run", "-A", "--node-modules-dir=manual", join(ROOT, script)];
}

/** No update check or colour in test output. */
export const DENO_ENV = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
