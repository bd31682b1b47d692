/**
 * `nereid health` without --url (issue #34 item 3): it asks the server this container runs
 * at the HTTP address its own command line gives, read from /proc (a made-up one here),
 * not a fixed port 8000. test/e2e/health-port.test.ts runs it through the binary.
 */
import { describe, it, expect, afterEach } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localServerUrl } from "../../src/health-check.ts";

const BINARY = "/opt/nereid/nereid";
let proc = "";

interface Fake {
  pid: string;
  exe: string;
  args: string[];
  ppid?: string;
  env?: Record<string, string>;
  comm?: string;
}

function fakeProc(...processes: Fake[]): string {
  proc = mkdtempSync(join(tmpdir(), "nereid-fake-proc-"));
  mkdirSync(join(proc, "self"));
  symlinkSync(BINARY, join(proc, "self", "exe"));
  for (const p of processes) {
    const dir = join(proc, p.pid);
    mkdirSync(dir);
    symlinkSync(p.exe, join(dir, "exe"));
    writeFileSync(join(dir, "cmdline"), [p.exe, ...p.args].join("\0") + "\0");
    writeFileSync(
      join(dir, "environ"),
      Object.entries(p.env ?? {})
        .map(([k, v]) => `${k}=${v}\0`)
        .join(""),
    );
    writeFileSync(join(dir, "stat"), `${p.pid} (${p.comm ?? "nereid"}) S ${p.ppid ?? "0"} ${p.pid} ${p.pid} 0 -1\n`);
  }
  return proc;
}

afterEach(() => {
  if (proc) rmSync(proc, { recursive: true, force: true });
  proc = "";
});

describe("nereid health's default address (#34)", () => {
  it("follows PID 1's --http-port and --http-address", () => {
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository=/models", "--http-port=9000"] }))).toBe("http://127.0.0.1:9000");
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository", "/models", "--http-port", "8123", "--http-address=10.0.0.7"] }))).toBe(
      "http://10.0.0.7:8123",
    );
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository=/m", "--http-address=::"] }))).toBe("http://127.0.0.1:8000");
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository=/m", "--http-address=::1", "--http-port=81"] }))).toBe(
      "http://[::1]:81",
    );
  });

  it("is port 8000 for the image's own CMD", () => {
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository=/models"] }))).toBe("http://127.0.0.1:8000");
  });

  it("finds the server as the one child of an init (podman run --init) running the same executable, skipping other commands", () => {
    const dir = fakeProc(
      { pid: "1", exe: "/run/podman-init", args: ["--", BINARY, "--model-repository=/models"] },
      { pid: "7", exe: BINARY, ppid: "1", comm: "nereid (x) y", args: ["--model-repository=/models", "--http-port=8500"] },
      { pid: "9", exe: BINARY, ppid: "1", args: ["health"] },
      { pid: "12", exe: "/usr/bin/python3", ppid: "1", args: ["--http-port=1"] },
      { pid: "20", exe: BINARY, ppid: "7", args: ["--model-repository=/other", "--http-port=8600"] },
    );
    expect(localServerUrl(dir)).toBe("http://127.0.0.1:8500");
  });

  it("is undefined with no such server, and the caller falls back to 127.0.0.1:8000", () => {
    expect(
      localServerUrl(fakeProc({ pid: "1", exe: "/sbin/init", args: [] }, { pid: "5", exe: BINARY, ppid: "4", args: ["--http-port=1234"] })),
    ).toBeUndefined();
    expect(localServerUrl(fakeProc({ pid: "1", exe: BINARY, args: ["perf", "-m", "simple"] }))).toBeUndefined();
    expect(localServerUrl(join(tmpdir(), "no-such-proc-dir"))).toBeUndefined();
  });

  it("reads the server's environment: Vertex AI's prediction mode turns HTTP off, which is an error naming --url", () => {
    const dir = fakeProc({
      pid: "1",
      exe: BINARY,
      args: ["--model-repository=/models"],
      env: { AIP_MODE: "PREDICTION", AIP_PREDICT_ROUTE: "/predict", AIP_HEALTH_ROUTE: "/health" },
    });
    expect(() => localServerUrl(dir)).toThrow("the server (pid 1) serves no HTTP endpoint (--allow-http=false): pass --url");
  });

  it("refuses to guess between two servers, and says so for --allow-http=false", () => {
    const dir = fakeProc(
      { pid: "1", exe: "/sbin/init", args: [] },
      { pid: "30", exe: BINARY, ppid: "1", args: ["--model-repository=/a", "--http-port=8100"] },
      { pid: "31", exe: BINARY, ppid: "1", args: ["--model-repository=/b", "--http-port=8200"] },
    );
    expect(() => localServerUrl(dir)).toThrow("several servers run beside this one (pids 30, 31): pass --url");
    const noHttp = fakeProc({ pid: "1", exe: BINARY, args: ["--model-repository=/m", "--allow-http=false"] });
    expect(() => localServerUrl(noHttp)).toThrow("the server (pid 1) serves no HTTP endpoint (--allow-http=false): pass --url");
  });
});
