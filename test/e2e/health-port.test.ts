/**
 * `nereid health` as the container image's HEALTHCHECK runs it, no --url (issue #34 item 3):
 * the binary runs as PID 1 of a PID namespace of its own (unshare, as in a container) on a
 * port other than 8000, and `nereid health` entered into that namespace (nsenter, as
 * `podman exec` does) checks that port; likewise when the server is the child of an init
 * (`podman run --init`). Before #34 it always asked 127.0.0.1:8000.
 */
import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, startServerProcess } from "../helpers/server-process.ts";
import { freePort } from "../helpers/ports.ts";

const run = (cmd: string, args: string[], timeout = 60_000) => spawnSync(cmd, args, { encoding: "utf8", timeout });

describe("nereid health follows the server's --http-port (#34)", () => {
  it("when the server is PID 1 of its namespace", async () => {
    const repo = mkdtempSync(join(tmpdir(), "nereid-health-port-"));
    const port = await freePort();
    // --http-port=0 and --http-address=127.0.0.1 come first from the helper; the later flags win, as in the server.
    const server = await startServerProcess(
      [`--model-repository=${repo}`, `--http-port=${port}`, "--http-address=0.0.0.0", "--allow-grpc=false", "--allow-metrics=false"],
      {
        command: ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM", BINARY],
      },
    );
    // The server's pid outside the namespace: unshare's one child. unshare itself does not pass SIGTERM on.
    const child = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, "utf8").trim();
    try {
      expect(server.port).toBe(port);
      expect(child).toMatch(/^\d+$/);
      const health = run("nsenter", ["--target", child, "--pid", "--mount", BINARY, "health"]);
      expect(health.stdout + health.stderr).toBe("/v2/health/live 200\n/v2/health/ready 200\n");
      expect(health.status).toBe(0);
    } finally {
      if (/^\d+$/.test(child)) process.kill(Number(child), "SIGTERM");
      await server.stop();
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it("when the server is the child of an init, and fails once it is gone", async () => {
    const repo = mkdtempSync(join(tmpdir(), "nereid-health-port-"));
    const scratch = mkdtempSync(join(tmpdir(), "nereid-health-out-"));
    const port = await freePort();
    // sh is PID 1; the server its child; `nereid health` is polled until the server is up (30 s at most), then run again after it stops.
    const script = `B=$1; shift; "$B" "$@" & s=$!
i=0; while :; do "$B" health > "$R/out" 2>&1; st=$?; [ $st -eq 0 ] || [ $i -ge 300 ] && break; i=$((i+1)); sleep 0.1; done
cat "$R/out"; echo "exit $st"; kill $s; wait $s; "$B" health; echo "exit $?"`;
    const r = spawnSync(
      "unshare",
      [
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        script,
        "sh",
        BINARY,
        `--model-repository=${repo}`,
        `--http-port=${port}`,
        "--allow-grpc=false",
        "--allow-metrics=false",
      ],
      { encoding: "utf8", timeout: 90_000, env: { ...process.env, R: scratch } },
    );
    rmSync(repo, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 3)).toEqual(["/v2/health/live 200", "/v2/health/ready 200", "exit 0"]);
    // With the server gone there is no process to follow: the default address, and exit 1.
    expect(lines[3]).toMatch(/^\/v2\/health\/live unreachable: /);
    expect(lines.at(-2)).toBe("exit 1");
  });
});
