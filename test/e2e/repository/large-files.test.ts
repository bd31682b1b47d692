/**
 * #29 item 9 through the server binary: a config.pbtxt larger than the limit (1 MiB), in
 * the repository at start or written into a polled one (200 MB, sparse), is refused before
 * it is read: a new model is UNAVAILABLE with the reason in the index (no local path), a
 * loaded one keeps its loaded version (as after any failed reload), the rest of the
 * repository serves on. A label file over its limit (16 MiB), or one that is not there,
 * fails its model's load (read at load, as Triton reads it) with the reason, and nothing else;
 * a label file that changes is read again.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { inferJson, SIMPLE_TWOS_AND_THREES, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";
import { MAX_CONFIG_BYTES, MAX_LABEL_FILE_BYTES } from "../../../src/repository/text-file.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

type IndexEntry = { name: string; version?: string; state?: string; reason?: string };
const index = async () => (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as IndexEntry[];
const entry = async (name: string) => (await index()).find((e) => e.name === name);

/** A copy of `simple` named `name`, its config changed by `edit`. */
function copySimple(name: string, edit: (config: string) => string = (c) => c): void {
  cpSync(join(repo.dir, "simple", "1"), join(repo.dir, name, "1"), { recursive: true });
  repo.add(`${name}/config.pbtxt`, edit(readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', `name: "${name}"`)));
}

/** `text` with a comment that makes it exactly `bytes` long. */
const padded = (text: string, bytes: number) => `${text}#${"x".repeat(bytes - text.length - 2)}\n`;

async function expectSimpleServes(): Promise<void> {
  const r = await inferJson(server, "simple", SIMPLE_TWOS_AND_THREES);
  expect(r.status).toBe(200);
  expect(r.json.outputs[0].data).toEqual(Array(16).fill(5));
}

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  copySimple("simple_big", (c) => padded(c, MAX_CONFIG_BYTES + 1));
  copySimple("simple_at_limit", (c) => padded(c, MAX_CONFIG_BYTES));
  copySimple("simple_grows");
  copySimple("simple_labels", (c) =>
    c.replace('{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }', '{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] label_filename: "labels.txt" }'),
  );
  repo.add("simple_labels/labels.txt", "");
  truncateSync(join(repo.dir, "simple_labels", "labels.txt"), MAX_LABEL_FILE_BYTES + 1);
  copySimple("simple_relabel", (c) =>
    c.replace('{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }', '{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] label_filename: "labels.txt" }'),
  );
  repo.add("simple_relabel/labels.txt", Array.from({ length: 16 }, (_, i) => `old${i}`).join("\n"));
  copySimple("simple_no_labels", (c) =>
    c.replace('{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }', '{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] label_filename: "nowhere.txt" }'),
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=poll", "--repository-poll-secs=1", "--exit-on-error=false"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("repository text files over their size limits (#29 item 9)", () => {
  it("refuses a config.pbtxt one byte over the limit, with the reason in the index, and loads one at the limit", async () => {
    expect(await entry("simple_big")).toEqual({
      name: "simple_big",
      state: "UNAVAILABLE",
      reason: `config.pbtxt of model 'simple_big' is ${MAX_CONFIG_BYTES + 1} bytes, more than the limit of ${MAX_CONFIG_BYTES} bytes`,
    });
    expect(await entry("simple_at_limit")).toEqual({ name: "simple_at_limit", version: "1", state: "READY" });
    expect(JSON.stringify(await index())).not.toContain(repo.dir);
    await expectSimpleServes();
  });

  it("refuses a 200 MB config.pbtxt written into a polled repository without reading it; the rest serves on", async () => {
    const big = 200 * 1024 * 1024;
    const reason = (name: string) => `config.pbtxt of model '${name}' is ${big} bytes, more than the limit of ${MAX_CONFIG_BYTES} bytes`;
    // A new model: UNAVAILABLE with the reason.
    copySimple("simple_new_big");
    truncateSync(join(repo.dir, "simple_new_big", "config.pbtxt"), big); // sparse: no 200 MB on disk
    await eventually(async () =>
      expect(await entry("simple_new_big")).toEqual({ name: "simple_new_big", state: "UNAVAILABLE", reason: reason("simple_new_big") }),
    );
    // A loaded model whose config grows: refused, and its loaded version keeps serving (as any failed reload).
    expect((await entry("simple_grows"))?.state).toBe("READY");
    truncateSync(join(repo.dir, "simple_grows", "config.pbtxt"), big);
    await eventually(async () => expect(server.log()).toContain(`failed to load 'simple_grows': ${reason("simple_grows")} (the loaded versions keep serving)`));
    expect(await entry("simple_grows")).toEqual({ name: "simple_grows", version: "1", state: "READY" });
    await expectSimpleServes();
  });

  it("fails the load of a model whose label file is over its limit or missing, with the reason and no local path; the rest serves on", async () => {
    expect(await entry("simple_labels")).toEqual({
      name: "simple_labels",
      version: "1",
      state: "UNAVAILABLE",
      reason: `label file 'labels.txt' of model 'simple_labels' is ${MAX_LABEL_FILE_BYTES + 1} bytes, more than the limit of ${MAX_LABEL_FILE_BYTES} bytes`,
    });
    expect(await entry("simple_no_labels")).toEqual({
      name: "simple_no_labels",
      version: "1",
      state: "UNAVAILABLE",
      reason: "unable to read label file 'nowhere.txt' of model 'simple_no_labels': ENOENT",
    });
    expect(server.log()).not.toContain(join(repo.dir, "simple_no_labels", "nowhere.txt"));
    const r = await inferJson(server, "simple_labels", SIMPLE_TWOS_AND_THREES);
    expect(r.status).toBe(503);
    expect(r.json.error).toContain("'simple_labels'");
    await expectSimpleServes();
  });

  it("reads a label file again when it changes in a polled repository", async () => {
    const top = async () => {
      const body = { ...SIMPLE_TWOS_AND_THREES, outputs: [{ name: "OUTPUT0", parameters: { classification: 1 } }] };
      const r = await inferJson(server, "simple_relabel", body);
      return r.json.outputs?.[0]?.data?.[0] ?? JSON.stringify(r.json);
    };
    expect(await top()).toBe("5:0:old0");
    repo.add("simple_relabel/labels.txt", Array.from({ length: 16 }, (_, i) => `new${i}`).join("\n"));
    await eventually(async () => expect(await top()).toBe("5:0:new0"));
  });
});
