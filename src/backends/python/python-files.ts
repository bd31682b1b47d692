/**
 * @module The stub's Python files (stub-source.ts, pb-utils-source.ts), written once per
 * server process into a private folder (mkdtemp: mode 0700, owned by the server's user)
 * that the server removes when it exits; a model's stub imports them from there. The
 * stubs' sockets for the frontend worker threads (direct.ts) are made there too, so no
 * other user can reach them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PB_UTILS_SOURCE } from "./pb-utils-source.ts";
import { STUB_SOURCE } from "./stub-source.ts";

let dir: string | undefined;

/** The folder holding `stub.py` and `triton_python_backend_utils.py`. */
export function stubFiles(): { dir: string; stub: string } {
  if (!dir) {
    const d = mkdtempSync(join(tmpdir(), "nereid-python-"));
    writeFileSync(join(d, "triton_python_backend_utils.py"), PB_UTILS_SOURCE, { mode: 0o600 });
    writeFileSync(join(d, "stub.py"), STUB_SOURCE, { mode: 0o600 });
    process.once("exit", () => rmSync(d, { recursive: true, force: true }));
    dir = d;
  }
  return { dir, stub: join(dir, "stub.py") };
}

/** Bun's frontend worker threads connect to a stub's socket (Bun.connect); other runtimes run the frontends on the main thread. */
declare const Bun: unknown;

/** Unix socket paths are limited to 108 bytes (sun_path); a longer one is not used. */
const MAX_SOCKET_PATH = 100;
let sockets = 0;

/** A fresh socket path for one instance's stub, or undefined where the frontend workers could not use one. */
export function directSocketPath(): string | undefined {
  if (typeof Bun === "undefined") return undefined;
  const path = join(stubFiles().dir, `${++sockets}.sock`);
  return path.length <= MAX_SOCKET_PATH ? path : undefined;
}
