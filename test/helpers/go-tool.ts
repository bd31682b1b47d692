/**
 * Go programs and module sources from the Go module proxy, pinned, for the deploy tests
 * (#34): `goInstall` builds a command with `go install <package>@<version>` into a cache
 * under the OS temp dir keyed by package and version (the first build takes minutes, reruns
 * none; CI builds once); `goModuleDir` is `go mod download` of a module (its files, read
 * only, in the module cache). A missing `go` or an unreachable proxy is an error, never a skip.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const CACHE = join(tmpdir(), "nereid-go-tools");

function go(args: string[], env: Record<string, string> = {}, timeout = 1_200_000) {
  const cmd = existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go";
  // Outside any module (the temp dir), so the repository never gains a go.mod or go.sum.
  const r = spawnSync(cmd, args, { cwd: tmpdir(), encoding: "utf8", timeout, maxBuffer: 1 << 26, env: { ...process.env, GOFLAGS: "-buildvcs=false", ...env } });
  if (r.status !== 0) {
    throw new Error(
      `go ${args.join(" ")} failed (the deploy tests need Go and the Go module proxy):\n${`${r.error?.message ?? ""}${r.stderr ?? ""}`.slice(-3000)}`,
    );
  }
  return r.stdout;
}

/** The path of `pkg`'s command built at `version` (e.g. helm.sh/helm/v3/cmd/helm, v3.22.0). */
export function goInstall(pkg: string, version: string): string {
  const name = basename(pkg);
  const dir = join(CACHE, `${name}-${version}`);
  const binary = join(dir, name);
  if (existsSync(binary)) return binary;
  mkdirSync(CACHE, { recursive: true });
  // Built beside the cache and renamed into place, so an interrupted build leaves nothing half made.
  const building = mkdtempSync(join(CACHE, `${name}-build-`));
  try {
    go(["install", `${pkg}@${version}`], { GOBIN: building });
    rmSync(dir, { recursive: true, force: true });
    renameSync(building, dir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  if (!existsSync(binary)) throw new Error(`go install ${pkg}@${version} made no ${binary}`);
  return binary;
}

/** The folder of `module` at `version` in the module cache (e.g. github.com/kserve/kserve, v0.16.0). */
export function goModuleDir(module: string, version: string): string {
  const info = JSON.parse(go(["mod", "download", "-json", `${module}@${version}`], {}, 600_000)) as { Dir?: string; Error?: string };
  if (!info.Dir || info.Error) throw new Error(`go mod download ${module}@${version}: ${info.Error ?? "no Dir"}`);
  return info.Dir;
}
