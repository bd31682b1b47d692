/**
 * CUDA shared memory end to end on a GPU host: this process plays Triton's client. It
 * allocates device memory, writes `simple`'s two inputs into it, registers the
 * allocation with a running nereid through its CUDA IPC handle, asks for an inference
 * whose inputs are read from and whose OUTPUT0 is written into that allocation, and
 * reads the result back from the GPU.
 *
 *   BUN_BE_BUN=1 NEREID_KOFFI_NODE=<koffi.node> path/to/nereid scripts/verify-cuda-shm.ts path/to/nereid [model_repository]
 *
 * (BUN_BE_BUN makes the compiled binary run this script as Bun would; scripts/verify-hardware.sh does it.)
 */
import { spawn } from "node:child_process";
import { CudaDriver } from "../ffi/cuda/driver.ts";
import { waitReady } from "./lib/bench.ts";

const [bin, repo = "model_repository"] = process.argv.slice(2);
if (!bin) throw new Error("usage: verify-cuda-shm.ts <nereid binary> [model_repository]");
const port = Number(process.env.NEREID_VERIFY_PORT ?? 18990) + 5;
const base = `http://127.0.0.1:${port}`;

const line = (ok: boolean, what: string, detail = "") => console.log(`    ${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}`);
const ctx = CudaDriver.get().primaryContext(0);
const buf = ctx.alloc(256);
const a = Int32Array.from({ length: 16 }, (_, i) => i * 3);
const b = Int32Array.from({ length: 16 }, (_, i) => 100 - i);
buf.write(new Uint8Array(a.buffer), undefined, 0);
buf.write(new Uint8Array(b.buffer), undefined, 64);
buf.write(new Uint8Array(64), undefined, 128);

const env = { ...process.env };
delete env.BUN_BE_BUN;
const server = spawn(
  bin,
  [
    `--model-repository=${repo}`,
    `--http-port=${port}`,
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-info=false",
    "--allow-client-shm=true",
    "--model-control-mode=explicit",
    "--load-model=simple",
  ],
  { stdio: "inherit", env },
);
let failed = false;
try {
  await waitReady(`${base}/v2/health/ready`);
  const handle = Buffer.from(buf.ipcHandle()).toString("base64");
  const reg = await fetch(`${base}/v2/cudasharedmemory/region/gpu/register`, {
    method: "POST",
    body: JSON.stringify({ raw_handle: { b64: handle }, device_id: 0, byte_size: 256 }),
  });
  line(reg.status === 200, "register a CUDA IPC handle", reg.status === 200 ? "" : await reg.text());
  const status = await (await fetch(`${base}/v2/cudasharedmemory/status`)).json();
  line(JSON.stringify(status) === JSON.stringify([{ name: "gpu", device_id: 0, byte_size: 256 }]), "CUDA region status", JSON.stringify(status));
  const shm = (offset: number) => ({ shared_memory_region: "gpu", shared_memory_byte_size: 64, shared_memory_offset: offset });
  const res = await fetch(`${base}/v2/models/simple/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shm(0) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: shm(64) },
      ],
      outputs: [{ name: "OUTPUT0", parameters: shm(128) }, { name: "OUTPUT1" }],
    }),
  });
  const body = (await res.json()) as { outputs?: { name: string; data?: number[] }[]; error?: string };
  const out = new Uint8Array(64);
  buf.read(out, undefined, 128);
  const sum = Array.from(new Int32Array(out.buffer));
  const wantSum = Array.from(a, (x, i) => x + b[i]!);
  const diff = body.outputs?.find((o) => o.name === "OUTPUT1")?.data;
  line(
    res.status === 200 && JSON.stringify(sum) === JSON.stringify(wantSum),
    "inputs read from GPU memory, OUTPUT0 written into it",
    res.status === 200 ? `[${sum.slice(0, 4).join(",")},…]` : body.error,
  );
  line(JSON.stringify(diff) === JSON.stringify(Array.from(a, (x, i) => x - b[i]!)), "OUTPUT1 returned as JSON beside it");
  const un = await fetch(`${base}/v2/cudasharedmemory/region/gpu/unregister`, { method: "POST" });
  line(un.status === 200 && JSON.stringify(await (await fetch(`${base}/v2/cudasharedmemory/status`)).json()) === "[]", "unregister");
  failed = res.status !== 200 || JSON.stringify(sum) !== JSON.stringify(wantSum);
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => server.once("exit", r));
  buf.free();
  ctx.release();
}
process.exit(failed ? 1 : 0);
