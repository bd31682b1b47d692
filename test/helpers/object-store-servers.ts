/**
 * Real object-storage servers for the object-storage repository tests (#21 item 4), from
 * the npm devDependencies: s3rver (S3's REST API) and Microsoft's Azurite (Azure Blob's).
 * Each runs as a child process on a free port with a temporary data folder, and can be
 * stopped and started again on the same port with its data kept. A server that cannot
 * be started throws: these tests fail, they never skip.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { DeleteObjectCommand, PutObjectCommand, S3Client, CreateBucketCommand } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { ROOT } from "./server-process.ts";
import { freePort } from "./ports.ts";
export { freePort };

/** Every file under `dir`, as paths relative to it with "/" separators. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p).split("\\").join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

export interface ObjectServer {
  port: number;
  /** Starts it (again, on the same port and data); resolves once it answers HTTP. */
  start(): Promise<void>;
  /** Stops it: s3rver is killed (SIGKILL); Azurite gets SIGTERM, since it keeps its containers only when it can save them on the way out. */
  stop(): Promise<void>;
  /** Uploads `files` (key → content) into the bucket or container. */
  put(files: Record<string, string | Uint8Array>): Promise<void>;
  /** Deletes objects. */
  remove(keys: string[]): Promise<void>;
  /** Stops the server and removes its data. */
  dispose(): Promise<void>;
}

/** Uploads every file of a local folder under `prefix` (a repository made by makeRepository). */
export async function uploadFolder(server: ObjectServer, dir: string, prefix: string): Promise<void> {
  const files: Record<string, Uint8Array> = {};
  for (const f of filesUnder(dir)) files[`${prefix}/${f}`] = readFileSync(join(dir, f));
  await server.put(files);
}

/** Spawns `bin` with `args`; resolves when `ready()` answers, rejects with the output when it exits or takes too long. */
async function launch(what: string, bin: string, args: string[], ready: () => Promise<boolean>): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  if (!existsSync(bin)) throw new Error(`${what} is not installed at ${bin}: run npm ci (it is a devDependency)`);
  const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  let gone = false;
  const exited = new Promise<void>((r) => child.once("exit", () => ((gone = true), r())));
  const deadline = Date.now() + 30_000;
  while (!(await ready().catch(() => false))) {
    if (gone) throw new Error(`${what} exited before answering:\n${out}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${what} did not answer within 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, exited };
}

const answers = (url: string) => async () => {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status > 0;
};

function serverProcess(what: string, signal: NodeJS.Signals, spawnIt: () => Promise<{ child: ChildProcess; exited: Promise<void> }>) {
  let running: { child: ChildProcess; exited: Promise<void> } | undefined;
  return {
    async start() {
      if (!running) running = await spawnIt();
    },
    async stop() {
      if (!running) return;
      running.child.kill(signal);
      await running.exited;
      running = undefined;
    },
    what,
  };
}

/** s3rver with bucket `bucket`; the server accepts any credentials (S3RVER / S3RVER in the tests). */
export async function startS3rver(bucket: string): Promise<ObjectServer & { endpoint: string }> {
  const port = await freePort();
  const data = mkdtempSync(join(tmpdir(), "nereid-s3rver-"));
  const endpoint = `http://127.0.0.1:${port}`;
  const bin = join(ROOT, "node_modules", "s3rver", "bin", "s3rver.js");
  const proc = serverProcess("s3rver", "SIGKILL", () =>
    launch("s3rver", bin, ["-d", data, "-a", "127.0.0.1", "-p", String(port), "--silent"], answers(endpoint)),
  );
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    // s3rver predates the SDK's default CRC32 checksums on uploads.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  await proc.start();
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    port,
    endpoint,
    start: proc.start,
    stop: proc.stop,
    async put(files) {
      for (const [key, body] of Object.entries(files)) await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async remove(keys) {
      for (const key of keys) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async dispose() {
      await proc.stop();
      client.destroy();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/** Azurite's published development account (https://learn.microsoft.com/azure/storage/common/storage-use-azurite). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/** Azurite's blob service with container `container`; `connectionString` reaches it as the dev account. */
export async function startAzurite(container: string): Promise<ObjectServer & { connectionString: string }> {
  const port = await freePort();
  const data = mkdtempSync(join(tmpdir(), "nereid-azurite-"));
  const blobEndpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${blobEndpoint};`;
  const bin = join(ROOT, "node_modules", "azurite", "dist", "src", "blob", "main.js");
  const args = ["--blobHost", "127.0.0.1", "--blobPort", String(port), "--location", data, "--silent", "--disableTelemetry", "--skipApiVersionCheck"];
  const proc = serverProcess("azurite-blob", "SIGTERM", () => launch("azurite-blob", bin, args, answers(`http://127.0.0.1:${port}/`)));
  const service = BlobServiceClient.fromConnectionString(connectionString);
  const client = service.getContainerClient(container);
  await proc.start();
  await client.create();
  return {
    port,
    connectionString,
    start: proc.start,
    stop: proc.stop,
    async put(files) {
      for (const [key, body] of Object.entries(files)) {
        const bytes = typeof body === "string" ? Buffer.from(body) : body;
        await client.getBlockBlobClient(key).upload(bytes, bytes.length);
      }
    },
    async remove(keys) {
      for (const key of keys) await client.deleteBlob(key);
    },
    async dispose() {
      await proc.stop();
      rmSync(data, { recursive: true, force: true });
    },
  };
}
