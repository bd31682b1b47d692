/**
 * Debian packages an end-to-end test needs (chromium, prometheus): installed with
 * apt-get when the program is missing (as root, as on CI), and an error, never a skip,
 * when that fails.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

function aptGet(args: string[]) {
  return spawnSync("apt-get", args, { encoding: "utf8", timeout: 900_000, env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
}

/** `program` (an absolute path), installing Debian package `pkg` first when it is missing; throws saying why the test needs it. */
export function ensureDebianProgram(program: string, pkg: string, why: string): string {
  if (existsSync(program)) return program;
  let r = aptGet(["install", "-y", "-qq", "--no-install-recommends", pkg]);
  if (r.status !== 0) {
    aptGet(["update", "-qq"]);
    r = aptGet(["install", "-y", "-qq", "--no-install-recommends", pkg]);
  }
  if (!existsSync(program)) {
    throw new Error(
      `${why} needs ${program} from Debian's '${pkg}' package; 'apt-get install ${pkg}' failed:\n${`${r.error?.message ?? ""}${r.stderr ?? ""}`.slice(-2000)}`,
    );
  }
  return program;
}
