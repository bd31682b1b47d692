/**
 * Issue #21 item 4: the sync of an object-storage repository into its local copy, against
 * an in-memory store: first copy, nothing re-read when nothing changed, changed and
 * removed objects, keys that would escape the folder, a store that cannot be read (the
 * copy stays, one warning) and comes back, RepositorySources' folders and clean-up.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configureLog } from "../../../src/core/logger.ts";
import { RemoteRepository, RepositorySources } from "../../../src/repository/remote-repository.ts";
import type { ObjectStore, StoredObject } from "../../../src/repository/object-store/store.ts";

class FakeStore implements ObjectStore {
  readonly objects = new Map<string, Uint8Array>();
  readonly reads: string[] = [];
  down = false;
  /** Keys whose read fails (the store going away mid-sync). */
  readonly failing = new Set<string>();
  put(key: string, content: string): this {
    this.objects.set(key, new TextEncoder().encode(content));
    return this;
  }
  async list(prefix: string): Promise<StoredObject[]> {
    if (this.down) throw new Error("connect ECONNREFUSED 127.0.0.1:9");
    return [...this.objects]
      .filter(([k]) => k.startsWith(prefix))
      .map(([key, data]) => ({ key, size: data.length, etag: `"${createHash("md5").update(data).digest("hex")}"` }));
  }
  async read(key: string): Promise<AsyncIterable<Uint8Array>> {
    if (this.down || this.failing.has(key)) throw new Error("socket hang up");
    const data = this.objects.get(key);
    if (!data) throw new Error(`NoSuchKey: ${key}`);
    this.reads.push(key);
    // Two chunks, as a stream would give them.
    return (async function* () {
      yield data.subarray(0, 1);
      yield data.subarray(1);
    })();
  }
}

const root = mkdtempSync(join(tmpdir(), "nereid-remote-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
let lines: string[] = [];
beforeEach(() => {
  lines = [];
  configureLog({}, (line) => lines.push(line));
});
afterEach(() => configureLog({}, (line) => process.stderr.write(line + "\n")));

function repository(store: FakeStore, prefix = "repo") {
  const base = join(root, String(++n));
  return { base, repo: new RemoteRepository({ url: `s3://bucket/${prefix}`, store, prefix, dir: join(base, "copy"), work: join(base, "work") }) };
}
const read = (dir: string, path: string) => readFileSync(join(dir, path), "utf8");
const files = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(dir.length + 1))
    .sort();

describe("RemoteRepository.sync", () => {
  it("copies the objects under the prefix, and only those", async () => {
    const store = new FakeStore()
      .put("repo/simple/config.pbtxt", "name: 'simple'")
      .put("repo/simple/1/model.onnx", "ONNX")
      .put("repo2/other/config.pbtxt", "not this repository")
      .put("elsewhere.txt", "nor this");
    const { repo } = repository(store);
    expect(await repo.sync()).toBe(true);
    expect(files(repo.dir)).toEqual(["simple/1/model.onnx", "simple/config.pbtxt"]);
    expect(read(repo.dir, "simple/1/model.onnx")).toBe("ONNX");
  });

  it("reads nothing again when nothing changed, and leaves the files as they are", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "a").put("repo/m/1/model.onnx", "b");
    const { repo } = repository(store);
    await repo.sync();
    const mtime = statSync(join(repo.dir, "m/1/model.onnx")).mtimeMs;
    store.reads.length = 0;
    expect(await repo.sync()).toBe(false);
    expect(store.reads).toEqual([]);
    expect(statSync(join(repo.dir, "m/1/model.onnx")).mtimeMs).toBe(mtime);
  });

  it("copies added and changed objects only", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "v1").put("repo/m/1/model.onnx", "same");
    const { repo } = repository(store);
    await repo.sync();
    const mtime = statSync(join(repo.dir, "m/1/model.onnx")).mtimeMs;
    store.reads.length = 0;
    store.put("repo/m/config.pbtxt", "v2").put("repo/n/config.pbtxt", "new").put("repo/n/1/model.onnx", "new model");
    expect(await repo.sync()).toBe(true);
    expect(store.reads.sort()).toEqual(["repo/m/config.pbtxt", "repo/n/1/model.onnx", "repo/n/config.pbtxt"]);
    expect(read(repo.dir, "m/config.pbtxt")).toBe("v2");
    expect(read(repo.dir, "n/1/model.onnx")).toBe("new model");
    expect(statSync(join(repo.dir, "m/1/model.onnx")).mtimeMs).toBe(mtime);
  });

  it("copies a same-sized object whose ETag changed, and a file deleted from the copy", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "aaaa").put("repo/m/x", "x");
    const { repo } = repository(store);
    await repo.sync();
    store.put("repo/m/config.pbtxt", "bbbb");
    rmSync(join(repo.dir, "m/x"));
    expect(await repo.sync()).toBe(true);
    expect(read(repo.dir, "m/config.pbtxt")).toBe("bbbb");
    expect(read(repo.dir, "m/x")).toBe("x");
  });

  it("removes the files of removed objects and the folders they leave empty", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "m").put("repo/gone/config.pbtxt", "g").put("repo/gone/1/model.onnx", "g1");
    const { repo } = repository(store);
    await repo.sync();
    store.objects.delete("repo/gone/config.pbtxt");
    store.objects.delete("repo/gone/1/model.onnx");
    expect(await repo.sync()).toBe(true);
    expect(files(repo.dir)).toEqual(["m/config.pbtxt"]);
    expect(existsSync(join(repo.dir, "gone"))).toBe(false);
  });

  it("makes the folders that directory markers name", async () => {
    const store = new FakeStore().put("repo/", "").put("repo/m/", "").put("repo/m/1/", "").put("repo/m/config.pbtxt", "c");
    const { repo } = repository(store);
    await repo.sync();
    expect(statSync(join(repo.dir, "m/1")).isDirectory()).toBe(true);
    expect(files(repo.dir)).toEqual(["m/config.pbtxt"]);
  });

  it("copies a whole bucket when the prefix is empty", async () => {
    const store = new FakeStore().put("m/config.pbtxt", "c").put("m/1/model.onnx", "o");
    const { repo } = repository(store, "");
    await repo.sync();
    expect(files(repo.dir)).toEqual(["m/1/model.onnx", "m/config.pbtxt"]);
  });

  it("refuses keys that would land outside the copy, once each, and copies the rest", async () => {
    const store = new FakeStore()
      .put("repo/../escaped.txt", "no")
      .put("repo/m/../../../escaped2.txt", "no")
      .put("repo//abs.txt", "no")
      .put("repo/m\\..\\..\\win.txt", "no")
      .put("repo/m/config.pbtxt", "yes");
    const { base, repo } = repository(store);
    await repo.sync();
    await repo.sync();
    expect(files(repo.dir)).toEqual(["m/config.pbtxt"]);
    expect(files(base).filter((f) => !f.startsWith("copy/"))).toEqual([]);
    expect(existsSync(join(root, "escaped.txt"))).toBe(false);
    expect(existsSync(join(root, "escaped2.txt"))).toBe(false);
    const refused = lines.filter((l) => /^W.*is not copied: object key/.test(l));
    expect(refused).toHaveLength(4);
    expect(refused.join("\n")).toContain("repo/../escaped.txt");
  });

  it("throws when the store cannot be listed, leaving the copy as it was", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "c");
    const { repo } = repository(store);
    await repo.sync();
    store.down = true;
    await expect(repo.sync()).rejects.toThrow(/ECONNREFUSED/);
    expect(files(repo.dir)).toEqual(["m/config.pbtxt"]);
  });

  it("reports files changed by a sync that failed halfway on the next sync that works", async () => {
    const store = new FakeStore().put("repo/a/config.pbtxt", "a");
    const { repo } = repository(store);
    await repo.sync();
    store.put("repo/a/config.pbtxt", "a2").put("repo/z/config.pbtxt", "z");
    store.failing.add("repo/z/config.pbtxt");
    await expect(repo.sync()).rejects.toThrow(/socket hang up/);
    store.failing.clear();
    store.objects.delete("repo/z/config.pbtxt");
    expect(await repo.sync()).toBe(true); // a/config.pbtxt changed in the failed one
    expect(read(repo.dir, "a/config.pbtxt")).toBe("a2");
  });
});

describe("RemoteRepository.refresh", () => {
  it("keeps the copy while the store is down, warns once, and catches up when it is back", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "v1");
    const { repo } = repository(store);
    await repo.sync();
    store.down = true;
    expect(await repo.refresh()).toBe(false);
    expect(await repo.refresh()).toBe(false);
    expect(repo.failing).toBe(true);
    expect(read(repo.dir, "m/config.pbtxt")).toBe("v1");
    const warnings = lines.filter((l) => l.startsWith("W"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("cannot read model repository 's3://bucket/repo'");
    expect(warnings[0]).toContain("ECONNREFUSED");
    store.down = false;
    store.put("repo/m/config.pbtxt", "v2");
    expect(await repo.refresh()).toBe(true);
    expect(repo.failing).toBe(false);
    expect(read(repo.dir, "m/config.pbtxt")).toBe("v2");
    expect(lines.filter((l) => l.includes("reachable again"))).toHaveLength(1);
  });

  it("runs one sync at a time", async () => {
    const store = new FakeStore().put("repo/m/config.pbtxt", "c");
    const { repo } = repository(store);
    const both = await Promise.all([repo.refresh(), repo.refresh()]);
    expect(both).toEqual([true, false]);
    expect(store.reads).toEqual(["repo/m/config.pbtxt"]);
  });
});

describe("RepositorySources", () => {
  it("keeps local folders, copies object-storage ones under the mount directory, and removes the copies on close", async () => {
    const store = new FakeStore().put("models/simple/config.pbtxt", "c");
    const mount = join(root, "mount");
    const local = join(root, "local-repo");
    const sources = await RepositorySources.open([local, "s3://bucket/models"], { TRITON_AWS_MOUNT_DIRECTORY: mount }, async (url) => {
      expect(url).toEqual({ scheme: "s3", bucket: "bucket", prefix: "models" });
      return store;
    });
    expect(sources.local[0]).toBe(local);
    expect(sources.folders).toEqual([local]);
    expect(sources.remote).toHaveLength(1);
    const copy = sources.local[1]!;
    expect(copy.startsWith(join(mount, "nereid-s3-"))).toBe(true);
    expect(read(copy, "simple/config.pbtxt")).toBe("c");
    expect(await sources.refresh()).toBe(false);
    sources.close();
    expect(readdirSync(mount)).toEqual([]);
  });

  it("stops the start with the URL named when a store cannot be read, leaving nothing behind", async () => {
    const store = new FakeStore();
    store.down = true;
    const mount = join(root, "mount-down");
    await expect(RepositorySources.open(["as://acct/cont/p"], { TRITON_AZURE_MOUNT_DIRECTORY: mount }, async () => store)).rejects.toThrow(
      "failed to read model repository 'as://acct/cont/p': connect ECONNREFUSED",
    );
    expect(readdirSync(mount)).toEqual([]);
  });
});
