/**
 * systemd integration: Type=notify readiness sent from TypeScript (libc through koffi,
 * no addon), and the shipped unit file passes `systemd-analyze verify`.
 */
import { describe, it, expect, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NotifyReceiver } from "../../ffi/libc/notify.ts";
import { startServerProcess, serverCommand, ROOT } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { ensureDebianPackages } from "../helpers/apt.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-notify-"));
const repo = makeRepository(["simple"]);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  repo.remove();
});

describe("sd_notify", () => {
  for (const kind of ["path", "abstract"] as const) {
    it(`sends READY=1 once serving and STOPPING=1 on SIGTERM (${kind} socket)`, async () => {
      const socket = kind === "path" ? join(dir, "notify.sock") : `@nereid-test-${process.pid}`;
      const receiver = new NotifyReceiver(socket);
      try {
        const server = await startServerProcess([`--model-repository=${repo.dir}`], { env: { NOTIFY_SOCKET: socket } });
        let messages: string[] = [];
        for (let i = 0; i < 50 && messages.length === 0; i++) {
          await new Promise((r) => setTimeout(r, 20));
          messages = receiver.drain();
        }
        expect(messages).toEqual(["READY=1\nSTATUS=serving 1 model version(s)"]);
        expect(await server.stop("SIGTERM")).toBe(0);
        expect(receiver.drain()).toEqual(["STOPPING=1\nSTATUS=draining in-flight requests"]);
      } finally {
        receiver.close();
      }
    });
  }

  it("does nothing without NOTIFY_SOCKET", async () => {
    const server = await startServerProcess([`--model-repository=${repo.dir}`], { env: { NOTIFY_SOCKET: "" } });
    expect(server.log()).not.toContain("cannot notify");
    expect(await server.stop("SIGTERM")).toBe(0);
  });
});

const unit = readFileSync(join(ROOT, "scripts", "systemd", "nereid.service"), "utf8");
const hasAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;

describe("scripts/systemd/nereid.service", () => {
  it("is a notify service stopped with SIGTERM, with time for the default 30 s drain", () => {
    expect(unit).toMatch(/^Type=notify$/m);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(30);
    expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/nereid --model-repository=/m);
  });

  // systemd-analyze is not on every CI image; where it is, the unit must verify clean.
  it.skipIf(!hasAnalyze)("passes systemd-analyze verify (ExecStart pointed at the built binary)", () => {
    const { cmd } = serverCommand();
    const copy = join(dir, "nereid.service");
    writeFileSync(copy, unit.replace("ExecStart=/usr/local/bin/nereid", `ExecStart=${cmd}`));
    const r = spawnSync("systemd-analyze", ["verify", "--man=no", copy], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

describe("scripts/systemd/nereid.service's devices (#34 item 3)", () => {
  type Check = { name: string; set: boolean; description: string };
  const security = (): Map<string, Check> => {
    ensureDebianPackages(["systemd-analyze"], ["systemd"], "The unit's device check runs systemd-analyze security");
    const copy = join(dir, "devices.service");
    writeFileSync(copy, unit);
    const r = spawnSync("systemd-analyze", ["security", "--offline=true", "--json=short", copy], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    return new Map((JSON.parse(r.stdout) as Check[]).map((c) => [c.name, c]));
  };

  it("lets the NVIDIA and Jetson GPU devices through a closed device policy instead of PrivateDevices=yes, which hides them", () => {
    const checks = security();
    expect(unit).not.toMatch(/^PrivateDevices=/m);
    expect(checks.get("PrivateDevices=")!.set).toBe(false);
    expect(unit).toMatch(/^DevicePolicy=closed$/m);
    expect(checks.get("DeviceAllow=")!.description).toBe(
      "Service has a device ACL with some special devices: /dev/nvmap:rw char-host1x*:rw char-nvgpu*:rw char-nvhost*:rw char-nvidia*:rw",
    );
  });

  it("keeps the rest of the hardening, and what PrivateDevices=yes also dropped (CAP_MKNOD, CAP_SYS_RAWIO)", () => {
    const checks = security();
    const set = (name: string) => checks.get(name)?.set;
    for (const name of [
      "CapabilityBoundingSet=~CAP_MKNOD",
      "CapabilityBoundingSet=~CAP_SYS_RAWIO",
      "NoNewPrivileges=",
      "ProtectSystem=",
      "ProtectHome=",
      "PrivateTmp=",
      "ProtectKernelTunables=",
      "ProtectControlGroups=",
      "RestrictAddressFamilies=~AF_PACKET",
      "User=/DynamicUser=",
    ])
      expect([name, set(name)]).toEqual([name, true]);
  });
});
