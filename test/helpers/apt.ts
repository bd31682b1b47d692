/**
 * Debian packages a test needs: installed with apt-get when missing (as root, as on CI),
 * and an error, never a skip, when that fails.
 */
import { spawnSync } from "node:child_process";

const commandExists = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;

/** Makes sure every command in `commands` exists, installing `packages` if one does not. */
export function ensureDebianPackages(commands: readonly string[], packages: readonly string[], why: string): void {
  if (commands.every(commandExists)) return;
  const run = (args: string[]) =>
    spawnSync("apt-get", args, { encoding: "utf8", timeout: 600_000, env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  let r = run(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
  if (r.status !== 0) {
    run(["update", "-qq"]);
    r = run(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
  }
  const missing = commands.filter((c) => !commandExists(c));
  if (missing.length > 0) {
    throw new Error(
      `${why}: installing ${packages.join(", ")} with apt-get did not provide ${missing.join(", ")}:\n${`${r.error?.message ?? ""}${r.stderr ?? ""}`.slice(-2000)}`,
    );
  }
}
