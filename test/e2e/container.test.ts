/**
 * The container image (issue #21): scripts/build-image.sh builds deploy/Containerfile
 * with podman (installed with apt-get if missing; no Docker daemon) around dist/nereid.
 * The image holds the binary, ONNX Runtime beside it and the libraries ldd names, runs as
 * uid 10001, and has a HEALTHCHECK on live and ready; run against model_repository/
 * mounted in, it answers inferences exactly and drains on `podman stop`.
 *
 * The arm64 image is built too (its C and C++ libraries from Debian's arm64 packages) and
 * its files, exported from the image, serve inferences under qemu-user through
 * scripts/smoke-arm64.sh: arm64 containers cannot run here (no binfmt_misc).
 *
 * Containers run as this machine allows: `--runtime runc --network=host` with explicit
 * ulimits, on free ports.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/server-process.ts";
import { ensureDebianPackages } from "../helpers/apt.ts";
import { freePort } from "../helpers/ports.ts";

const VERSION = JSON.parse(execFileSync("node", ["-p", "JSON.stringify(require('./package.json').version)"], { cwd: ROOT, encoding: "utf8" }));
const IMAGE = `nereid:${VERSION}-x64`;
const RUN = ["--runtime", "runc"];
let container = "";
let http = "";
let ports: number[] = [];

const podman = (...args: string[]) => execFileSync("podman", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 300_000 }).trim();

beforeAll(async () => {
  ensureDebianPackages(["podman", "runc"], ["podman", "runc"], "The container test builds and runs the image with podman");
  const built = execFileSync(join(ROOT, "scripts", "build-image.sh"), ["x64"], { cwd: ROOT, encoding: "utf8", timeout: 600_000 });
  expect(built).toMatch(new RegExp(`^${IMAGE.replace(/\./g, "\\.")} \\d+ bytes`));
  ports = [await freePort(), await freePort(), await freePort()];
  http = `http://127.0.0.1:${ports[0]}`;
  // The whole example repository, the OCR pipeline's TypeScript steps included: the binary carries pngjs and jpeg-js for them.
  container = podman(
    ...RUN,
    "run",
    "-d",
    "--network=host",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1024:1024",
    "-v",
    `${join(ROOT, "model_repository")}:/models:ro`,
    IMAGE,
    "--model-repository=/models",
    `--http-port=${ports[0]}`,
    `--grpc-port=${ports[1]}`,
    `--metrics-port=${ports[2]}`,
  )
    .split("\n")
    .pop()!;
  for (const end = Date.now() + 180_000; ; ) {
    const ready = await fetch(`${http}/v2/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    const state = podman("inspect", "--format", "{{.State.Status}}", container);
    if (state !== "running" || Date.now() > end)
      throw new Error(`the container did not become ready (${state}):\n${spawnSync("podman", ["logs", container], { encoding: "utf8" }).stderr}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}, 900_000);

afterAll(() => {
  if (container) spawnSync("podman", ["rm", "-f", container], { stdio: "ignore" });
});

describe("container image (#21)", () => {
  it("holds the binary, ONNX Runtime and the libraries ldd names, and nothing else", () => {
    const created = podman("create", IMAGE);
    try {
      const files = execFileSync("sh", ["-c", `podman export ${created} | tar -t`], { encoding: "utf8", maxBuffer: 1 << 24 })
        .split("\n")
        .filter((f) => f && !f.endsWith("/"))
        .sort();
      expect(files).toEqual([
        "etc/group",
        "etc/passwd",
        "lib/x86_64-linux-gnu/libc.so.6",
        "lib/x86_64-linux-gnu/libdl.so.2",
        "lib/x86_64-linux-gnu/libgcc_s.so.1",
        "lib/x86_64-linux-gnu/libm.so.6",
        "lib/x86_64-linux-gnu/libpthread.so.0",
        "lib/x86_64-linux-gnu/librt.so.1",
        "lib/x86_64-linux-gnu/libstdc++.so.6",
        "lib64/ld-linux-x86-64.so.2",
        "opt/nereid/libonnxruntime.so.1",
        "opt/nereid/nereid",
      ]);
    } finally {
      podman("rm", created);
    }
  });

  it("runs as uid 10001 with a HEALTHCHECK on live and ready", () => {
    expect(JSON.parse(podman("image", "inspect", "--format", "{{json .HealthCheck.Test}}", IMAGE))).toEqual(["CMD", "/opt/nereid/nereid", "health"]);
    expect(podman("image", "inspect", "--format", "{{.Config.User}}", IMAGE)).toBe("10001:10001");
    expect(podman(...RUN, "top", container, "user", "args").split("\n")[1]).toMatch(/^nereid\s+\/opt\/nereid\/nereid --model-repository=\/models/);
    // The HEALTHCHECK itself: the container runs on this test's ports, not 8000, and the check follows --http-port (#34).
    const check = spawnSync("podman", [...RUN, "healthcheck", "run", container], { encoding: "utf8" });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(podman(...RUN, "exec", container, "/opt/nereid/nereid", "health")).toBe("/v2/health/live 200\n/v2/health/ready 200");
    expect(podman(...RUN, "exec", container, "/opt/nereid/nereid", "health", `--url=${http}`)).toBe("/v2/health/live 200\n/v2/health/ready 200");
    const down = spawnSync("podman", [...RUN, "exec", container, "/opt/nereid/nereid", "health", "--url=http://127.0.0.1:1"], { encoding: "utf8" });
    expect(down.status).toBe(1);
    expect(down.stdout).toMatch(/^\/v2\/health\/live unreachable: /);
  });

  it("serves model_repository/ mounted in: exact answers over HTTP, models ready, metrics", async () => {
    const res = await fetch(`${http}/v2/models/simple/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: unknown }).outputs).toEqual([
      { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i + 1) },
      { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i - 1) },
    ]);
    const ident = await fetch(`${http}/v2/models/simple_identity/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 2], datatype: "BYTES", data: ["in a", "container"] }] }),
    });
    expect(((await ident.json()) as { outputs: { data: unknown }[] }).outputs[0]!.data).toEqual(["in a", "container"]);
    const index = (await (await fetch(`${http}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as { name: string; state: string }[];
    expect(index.filter((m) => m.state !== "READY")).toEqual([]);
    expect(index.map((m) => m.name)).toContain("ocr");
    const metrics = await (await fetch(`http://127.0.0.1:${ports[2]}/metrics`)).text();
    expect(metrics).toContain('nv_inference_count{model="simple",version="1"} 1');
  });

  it("drains and exits 0 on podman stop (SIGTERM)", () => {
    podman(...RUN, "stop", "--time", "30", container);
    expect(podman("inspect", "--format", "{{.State.ExitCode}}", container)).toBe("0");
    const logs = spawnSync("podman", ["logs", container], { encoding: "utf8" });
    expect(logs.stdout + logs.stderr).toContain("received SIGTERM");
  });
});

/** `dpkg --add-architecture arm64` and apt-get update, once: build-image.sh downloads arm64 packages. */
function ensureArm64Packages(): void {
  const foreign = execFileSync("dpkg", ["--print-foreign-architectures"], { encoding: "utf8" });
  if (foreign.split("\n").includes("arm64")) return;
  const add = spawnSync("sh", ["-c", "dpkg --add-architecture arm64 && apt-get update -qq"], { encoding: "utf8", timeout: 600_000 });
  if (add.status !== 0)
    throw new Error(`The arm64 image needs Debian's arm64 packages; 'dpkg --add-architecture arm64 && apt-get update' failed:\n${add.stderr}`);
}

describe("arm64 container image (#21)", () => {
  it("builds for linux/arm64 with the arm64 libraries, and its files serve inferences under qemu-user", () => {
    ensureDebianPackages(["qemu-aarch64-static"], ["qemu-user-static"], "The arm64 image is checked under qemu-user");
    ensureArm64Packages();
    execFileSync(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "scripts", "build.ts"), "--target=bun-linux-arm64"], {
      cwd: ROOT,
      stdio: "pipe",
      timeout: 600_000,
    });
    const image = `nereid:${VERSION}-arm64`;
    expect(execFileSync(join(ROOT, "scripts", "build-image.sh"), ["arm64"], { cwd: ROOT, encoding: "utf8", timeout: 600_000 })).toMatch(
      /^nereid:.*-arm64 \d+ bytes/,
    );
    expect(podman("image", "inspect", "--format", "{{.Os}}/{{.Architecture}} {{.Config.User}}", image)).toBe("linux/arm64 10001:10001");
    const rootfs = mkdtempSync(join(tmpdir(), "nereid-arm64-rootfs-"));
    const created = podman("create", "--platform", "linux/arm64", image).split("\n").pop()!;
    try {
      execFileSync("sh", ["-c", `podman export ${created} | tar -x -C ${rootfs}`]);
      const files = execFileSync("find", [".", "-type", "f"], { cwd: rootfs, encoding: "utf8" }).split("\n").filter(Boolean).sort();
      expect(files).toEqual([
        "./etc/group",
        "./etc/passwd",
        "./lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
        "./lib/aarch64-linux-gnu/libc.so.6",
        "./lib/aarch64-linux-gnu/libdl.so.2",
        "./lib/aarch64-linux-gnu/libgcc_s.so.1",
        "./lib/aarch64-linux-gnu/libm.so.6",
        "./lib/aarch64-linux-gnu/libpthread.so.0",
        "./lib/aarch64-linux-gnu/librt.so.1",
        "./lib/aarch64-linux-gnu/libstdc++.so.6",
        "./lib/ld-linux-aarch64.so.1",
        "./opt/nereid/libonnxruntime.so.1",
        "./opt/nereid/nereid",
      ]);
      const out = execFileSync(join(ROOT, "scripts", "smoke-arm64.sh"), [], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 500_000,
        env: { ...process.env, BINARY: join(rootfs, "opt", "nereid", "nereid"), QEMU_LD_PREFIX: rootfs },
      });
      expect(out).toContain('"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]');
      expect(out).toContain('"name":"OUTPUT0","datatype":"BYTES","shape":[1,3],"data":["arm64","","hé"]');
      expect(out).toMatch(/arm64 OK \(x86_64 host/);
    } finally {
      spawnSync("podman", ["rm", created], { stdio: "ignore" });
      rmSync(rootfs, { recursive: true, force: true });
    }
  }, 900_000);
});
