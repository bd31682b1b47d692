/**
 * Model repositories in object storage (#21 item 4) through the compiled binary, against
 * real protocol servers from npm: s3rver for S3 (s3://127.0.0.1:port/bucket/path) and
 * Microsoft's Azurite for Azure Blob (as://devstoreaccount1/container/path, its endpoint
 * given by AZURE_STORAGE_CONNECTION_STRING). For each: the example `simple` model uploaded
 * to the bucket is served and answers exactly; in poll mode a model added to the bucket
 * is loaded and a removed one unloaded; with the server stopped (s3rver killed, Azurite
 * terminated, as it keeps its containers only then) the models keep serving and
 * the log has exactly one warning, and once it is back new objects are picked up again;
 * in explicit mode a load sees the bucket's current files. The local copy is made under
 * TRITON_*_MOUNT_DIRECTORY and removed when the server exits.
 *
 * s3rver and Azurite are devDependencies: a test that cannot start them fails (no skip).
 * GCS has no server on npm: the same flows run against a fake of the two JSON API calls
 * the client makes (test/helpers/fake-gcs.ts), which checks the binary's GCS path up to
 * the client, not GCS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, inferJson, SIMPLE_TWOS_AND_THREES, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { startFakeGcs } from "../../helpers/fake-gcs.ts";
import { AZURITE_ACCOUNT, AZURITE_KEY, freePort, startAzurite, startS3rver, uploadFolder, type ObjectServer } from "../../helpers/object-store-servers.ts";
import { eventually as poll } from "../../helpers/eventually.ts";

const work = mkdtempSync(join(tmpdir(), "nereid-objstore-e2e-"));
let simple: ReturnType<typeof makeRepository>;
beforeAll(() => {
  simple = makeRepository(["simple"]);
});
afterAll(() => {
  simple?.remove();
  rmSync(work, { recursive: true, force: true });
});

/** Polls `check` until it passes or 30 s go by. */
const eventually = (check: () => Promise<void>) => poll(check, 30_000);

const ready = async (server: ServerProcess, model: string) => (await fetch(`${server.url}/v2/models/${model}/ready`)).status;

/** `simple`'s files renamed to `name` (config name included), keyed under `prefix`. */
function simpleAs(name: string, prefix: string): Record<string, string | Uint8Array> {
  return {
    [`${prefix}/${name}/config.pbtxt`]: readFileSync(join(simple.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', `name: "${name}"`),
    [`${prefix}/${name}/1/model.onnx`]: readFileSync(join(simple.dir, "simple", "1", "model.onnx")),
  };
}

async function expectExactAnswer(server: ServerProcess, model: string): Promise<void> {
  const r = await inferJson(server, model, SIMPLE_TWOS_AND_THREES);
  expect(r.status).toBe(200);
  expect(r.json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data])).toEqual([
    ["OUTPUT0", Array(16).fill(5)],
    ["OUTPUT1", Array(16).fill(-1)],
  ]);
}

const WARNING = /^W.*cannot read model repository/gm;

/** s3rver takes any key; the SDK must never look for an instance role (a non-loopback address) in these tests. */
const S3_ENV = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_DEFAULT_REGION: "us-east-1", AWS_EC2_METADATA_DISABLED: "true" };

interface Case {
  name: string;
  /** Starts the object server with an empty bucket/container. */
  start(): Promise<ObjectServer & { env: Record<string, string> }>;
  url(server: ObjectServer, prefix: string): string;
  mountVariable: string;
}

const cases: Case[] = [
  {
    name: "S3 (s3rver)",
    async start() {
      const s = await startS3rver("models");
      return Object.assign(s, { env: S3_ENV });
    },
    url: (s, prefix) => `s3://127.0.0.1:${s.port}/models/${prefix}`,
    mountVariable: "TRITON_AWS_MOUNT_DIRECTORY",
  },
  {
    name: "Azure Blob (Azurite)",
    async start() {
      const s = await startAzurite("models");
      return Object.assign(s, { env: { AZURE_STORAGE_CONNECTION_STRING: s.connectionString } });
    },
    url: (_s, prefix) => `as://${AZURITE_ACCOUNT}/models/${prefix}`,
    mountVariable: "TRITON_AZURE_MOUNT_DIRECTORY",
  },
  {
    // Not GCS: the same flows against a fake of the two JSON API calls the client makes, which
    // shows that the compiled binary's GCS path works as far as the client goes.
    name: "GCS (a fake of its JSON API, not GCS)",
    async start() {
      const s = await startFakeGcs("models");
      // STORAGE_EMULATOR_HOST is the client's own emulator setting, the JSON API's base URL (no authentication);
      // any metadata-server lookup stays on loopback.
      const env = { STORAGE_EMULATOR_HOST: `${s.endpoint}/storage/v1`, METADATA_SERVER_DETECTION: "none", GCE_METADATA_HOST: "127.0.0.1:9" };
      return Object.assign(s, { env });
    },
    url: (_s, prefix) => `gs://models/${prefix}`,
    mountVariable: "TRITON_GCS_MOUNT_DIRECTORY",
  },
];

describe.each(cases)("object-storage repository: $name", (c) => {
  let store: ObjectServer & { env: Record<string, string> };
  beforeAll(async () => {
    store = await c.start();
    await uploadFolder(store, simple.dir, "serve");
  });
  afterAll(async () => {
    await store?.dispose();
  });

  it("serves the repository's models from a copy under the mount directory, removed at exit", async () => {
    const mount = join(work, `${c.mountVariable}-serve`);
    const server = await startServerProcess([`--model-repository=${c.url(store, "serve")}`, "--allow-grpc=false", "--allow-metrics=false"], {
      env: { ...store.env, [c.mountVariable]: mount },
    });
    try {
      await expectExactAnswer(server, "simple");
      const index = await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json();
      expect(index).toEqual([{ name: "simple", version: "1", state: "READY" }]);
      const copies = readdirSync(mount);
      expect(copies).toHaveLength(1);
      expect(server.log()).toContain(`copied to '${join(mount, copies[0]!, "repository")}'`);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect(readdirSync(mount)).toEqual([]);
  });

  it("poll mode: loads a model added to the bucket, keeps serving while the server is down (one warning), catches up when it is back (added, removed, changed)", async () => {
    await uploadFolder(store, simple.dir, "poll");
    const server = await startServerProcess(
      [`--model-repository=${c.url(store, "poll")}`, "--model-control-mode=poll", "--repository-poll-secs=1", "--allow-grpc=false", "--allow-metrics=false"],
      { env: store.env },
    );
    try {
      await expectExactAnswer(server, "simple");

      await store.put(simpleAs("added", "poll"));
      await eventually(async () => expect(await ready(server, "added")).toBe(200));
      await expectExactAnswer(server, "added");

      await store.stop();
      await eventually(async () => expect(server.log().match(WARNING)).toHaveLength(1));
      // Several more polls go by with the server still down: the models keep serving, no more warnings.
      await new Promise((r) => setTimeout(r, 3_500));
      await expectExactAnswer(server, "simple");
      await expectExactAnswer(server, "added");
      expect(server.log().match(WARNING)).toHaveLength(1);
      expect(server.log()).not.toMatch(/unloaded/);

      await store.start();
      await eventually(async () => expect(server.log()).toContain("is reachable again"));
      await store.put(simpleAs("after_outage", "poll"));
      await store.remove(Object.keys(simpleAs("added", "poll")));
      await eventually(async () => expect(await ready(server, "after_outage")).toBe(200));
      await expectExactAnswer(server, "after_outage");
      await eventually(async () => expect(await ready(server, "added")).not.toBe(200));
      await expectExactAnswer(server, "simple");

      // A changed object reloads its model: simple's config with max_batch_size 4.
      const config = readFileSync(join(simple.dir, "simple", "config.pbtxt"), "utf8").replace("max_batch_size: 8", "max_batch_size: 4");
      await store.put({ "poll/simple/config.pbtxt": config });
      const maxBatch = async () => ((await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as { max_batch_size: number }).max_batch_size;
      await eventually(async () => expect(await maxBatch()).toBe(4));
      await expectExactAnswer(server, "simple");
      expect(server.log().match(WARNING)).toHaveLength(1);
    } finally {
      await server.stop();
    }
  });

  it("explicit mode: a load sees the bucket as it is now, and loads from the copy while the server is down", async () => {
    await uploadFolder(store, simple.dir, "explicit");
    const server = await startServerProcess(
      [`--model-repository=${c.url(store, "explicit")}`, "--model-control-mode=explicit", "--load-model=simple", "--allow-grpc=false", "--allow-metrics=false"],
      { env: store.env },
    );
    const load = (m: string) => fetch(`${server.url}/v2/repository/models/${m}/load`, { method: "POST" });
    try {
      await expectExactAnswer(server, "simple");
      expect((await load("late")).status).toBe(400); // not in the bucket yet
      await store.put(simpleAs("late", "explicit"));
      expect((await load("late")).status).toBe(200);
      await expectExactAnswer(server, "late");

      await store.stop();
      expect((await load("late")).status).toBe(200); // from the copy
      await expectExactAnswer(server, "late");
      expect(server.log().match(WARNING)).toHaveLength(1);
      await store.start();
    } finally {
      await server.stop();
    }
  });
});

describe("object-storage repository that cannot be read at start", () => {
  it("stops the start with the URL named and leaves no copy behind", async () => {
    const port = await freePort(); // nothing listens there
    const mount = join(work, "unreachable");
    const url = `s3://127.0.0.1:${port}/models/repo`;
    await expect(startServerProcess([`--model-repository=${url}`], { env: { ...S3_ENV, TRITON_AWS_MOUNT_DIRECTORY: mount } })).rejects.toThrow(
      new RegExp(`exited with 1 before listening[\\s\\S]*failed to read model repository '${url.replace(/[/.]/g, "\\$&")}': .*ECONNREFUSED`),
    );
    expect(readdirSync(mount)).toEqual([]);
  });
});

// s3rver knows one access key id, S3RVER, and refuses others; it does not check SigV4 signatures, so the key id is what shows which credentials were used.
describe("S3 credentials", () => {
  let s3: Awaited<ReturnType<typeof startS3rver>>;
  beforeAll(async () => {
    s3 = await startS3rver("creds");
    await uploadFolder(s3, simple.dir, "repo");
  });
  afterAll(() => s3?.dispose());
  const url = () => `s3://127.0.0.1:${s3.port}/creds/repo`;
  const WRONG = { ...S3_ENV, AWS_ACCESS_KEY_ID: "nobody" };

  it("an access key id that s3rver does not know stops the start", async () => {
    await expect(startServerProcess([`--model-repository=${url()}`], { env: WRONG })).rejects.toThrow(/failed to read model repository .*Access Key Id/);
  });

  it("takes TRITON_CLOUD_CREDENTIAL_PATH's longest matching entry over the environment", async () => {
    const file = join(work, "cloud_credential.json");
    writeFileSync(
      file,
      JSON.stringify({
        s3: {
          "": { key_id: "nobody", secret_key: "x", region: "us-east-1" },
          "s3://creds": { key_id: "S3RVER", secret_key: "S3RVER", region: "us-east-1" },
        },
      }),
    );
    const server = await startServerProcess([`--model-repository=${url()}`, "--allow-grpc=false", "--allow-metrics=false"], {
      env: { ...WRONG, TRITON_CLOUD_CREDENTIAL_PATH: file },
    });
    try {
      await expectExactAnswer(server, "simple");
    } finally {
      await server.stop();
    }
  });

  it("a lone copy of the binary reads an AWS shared credentials file through the SDK's default chain", async () => {
    const dir = mkdtempSync(join(work, "lone-"));
    copyFileSync(BINARY, join(dir, "nereid"));
    writeFileSync(join(dir, "credentials"), "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n");
    const env = {
      PATH: "/usr/bin:/bin",
      HOME: dir,
      AWS_SHARED_CREDENTIALS_FILE: join(dir, "credentials"),
      AWS_CONFIG_FILE: join(dir, "no-config"),
      AWS_EC2_METADATA_DISABLED: "true",
    };
    const server = await startServerProcess([`--model-repository=${url()}`, "--allow-grpc=false", "--allow-metrics=false"], {
      command: join(dir, "nereid"),
      cwd: dir,
      env,
      cleanEnv: true,
    });
    try {
      await expectExactAnswer(server, "simple");
    } finally {
      await server.stop();
    }
  });
});

// Azurite checks SharedKey signatures: a wrong key is refused, so a served model shows the key was used.
describe("Azure credentials", () => {
  let az: Awaited<ReturnType<typeof startAzurite>>;
  beforeAll(async () => {
    az = await startAzurite("creds");
    await uploadFolder(az, simple.dir, "repo");
  });
  afterAll(() => az?.dispose());
  const url = `as://${AZURITE_ACCOUNT}/creds/repo`;
  // An endpoint alone: the key comes from Triton's AZURE_STORAGE_KEY.
  const endpointOnly = () => `BlobEndpoint=http://127.0.0.1:${az.port}/${AZURITE_ACCOUNT};`;

  it("signs with AZURE_STORAGE_KEY when the connection string gives only the endpoint", async () => {
    const server = await startServerProcess([`--model-repository=${url}`, "--allow-grpc=false", "--allow-metrics=false"], {
      env: { AZURE_STORAGE_CONNECTION_STRING: endpointOnly(), AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY },
    });
    try {
      await expectExactAnswer(server, "simple");
    } finally {
      await server.stop();
    }
  });

  it("a wrong AZURE_STORAGE_KEY stops the start", async () => {
    const wrong = Buffer.from("not the account key at all").toString("base64");
    await expect(
      startServerProcess([`--model-repository=${url}`], { env: { AZURE_STORAGE_CONNECTION_STRING: endpointOnly(), AZURE_STORAGE_KEY: wrong } }),
    ).rejects.toThrow(/failed to read model repository 'as:\/\/devstoreaccount1\/creds\/repo': Server failed to authenticate the request/);
  });
});
