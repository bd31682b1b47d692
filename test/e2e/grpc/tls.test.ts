/**
 * gRPC over TLS and mutual TLS through the server binary (#17): --grpc-use-ssl with
 * --grpc-server-cert/--grpc-server-key, and --grpc-use-ssl-mutual with --grpc-root-cert,
 * using certificates this test makes with openssl: a TLS client gets exact answers, a
 * plaintext client and (for mutual TLS) a client without a certificate or with one from
 * another CA are refused; a certificate file that cannot be read stops the start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, makeGenericClientConstructor, type ChannelCredentials, type Client, type ServiceError } from "@grpc/grpc-js";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { ensureDebianProgram } from "../../helpers/debian.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-tls-"));
const file = (name: string) => join(dir, name);
let repo: ReturnType<typeof makeRepository>;

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** A CA, and a key and certificate for `name` signed by it (with the SANs given). */
function makeCa(ca: string): void {
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${ca}.key`, "-out", `${ca}.crt`, "-days", "2", "-subj", `/CN=${ca}`);
}
function makeCert(name: string, ca: string, san?: string): void {
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
  const ext = file(`${name}.ext`);
  writeFileSync(ext, san ? `subjectAltName=${san}\n` : "basicConstraints=CA:FALSE\n");
  openssl("x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", ext);
}

beforeAll(() => {
  ensureDebianProgram("/usr/bin/openssl", "openssl", "The gRPC TLS test");
  makeCa("ca");
  makeCa("other-ca");
  makeCert("server", "ca", "DNS:localhost,IP:127.0.0.1");
  makeCert("client", "ca");
  makeCert("stranger", "other-ca");
  repo = makeRepository(["simple"]);
});

afterAll(() => {
  repo?.remove();
  rmSync(dir, { recursive: true, force: true });
});

const A = Array.from({ length: 16 }, (_, i) => i);

function infer(target: string, creds: ChannelCredentials): Promise<number[]> {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, creds) as Client & Record<string, (req: object, opts: object, cb: (err: ServiceError | null, res: any) => void) => void>;
  return new Promise((resolve, reject) =>
    client.ModelInfer!(
      {
        model_name: "simple",
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [Buffer.from(new Int32Array(A).buffer), Buffer.from(new Int32Array(16).fill(5).buffer)],
      },
      { deadline: Date.now() + 10_000 },
      (err, res) => {
        client.close();
        if (err) return reject(err);
        const b = Buffer.from(res.raw_output_contents[0]);
        resolve([...new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))]);
      },
    ),
  );
}

const ca = () => readFileSync(file("ca.crt"));
const tlsClient = (name?: string) => (name ? credentials.createSsl(ca(), readFileSync(file(`${name}.key`)), readFileSync(file(`${name}.crt`))) : credentials.createSsl(ca()));

describe("--grpc-use-ssl", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, "--grpc-use-ssl=true", `--grpc-server-cert=${file("server.crt")}`, `--grpc-server-key=${file("server.key")}`, "--allow-metrics=false"]);
  });
  afterAll(() => server?.stop());

  it("a TLS client that trusts the CA gets exact answers", async () => {
    expect(await infer(server.grpcTarget!, tlsClient())).toEqual(A.map((a) => a + 5));
  });

  it("a plaintext client is refused", async () => {
    await expect(infer(server.grpcTarget!, credentials.createInsecure())).rejects.toMatchObject({ code: 14 });
  });
});

describe("--grpc-use-ssl-mutual", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([
      `--model-repository=${repo.dir}`, "--grpc-use-ssl-mutual=true", `--grpc-server-cert=${file("server.crt")}`, `--grpc-server-key=${file("server.key")}`, `--grpc-root-cert=${file("ca.crt")}`, "--allow-metrics=false",
    ]);
  });
  afterAll(() => server?.stop());

  it("a client with a certificate from the root CA gets exact answers", async () => {
    expect(await infer(server.grpcTarget!, tlsClient("client"))).toEqual(A.map((a) => a + 5));
  });

  it("a client without a certificate, or with one from another CA, is refused", async () => {
    await expect(infer(server.grpcTarget!, tlsClient())).rejects.toMatchObject({ code: 14 });
    await expect(infer(server.grpcTarget!, tlsClient("stranger"))).rejects.toMatchObject({ code: 14 });
  });
});

describe("--grpc-use-ssl-mutual with the gRPC frontend on worker threads (#19)", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([
      `--model-repository=${repo.dir}`, "--grpc-use-ssl-mutual=true", `--grpc-server-cert=${file("server.crt")}`, `--grpc-server-key=${file("server.key")}`, `--grpc-root-cert=${file("ca.crt")}`, "--allow-metrics=false",
      "--grpc-infer-thread-count=2",
    ]);
    expect(server.log()).toMatch(/gRPC frontend on 2 worker threads/);
  });
  afterAll(() => server?.stop());

  it("the workers take the certificates: a client with one from the root CA gets exact answers, others are refused", async () => {
    for (let i = 0; i < 4; i++) expect(await infer(server.grpcTarget!, tlsClient("client"))).toEqual(A.map((a) => a + 5));
    await expect(infer(server.grpcTarget!, tlsClient())).rejects.toMatchObject({ code: 14 });
    await expect(infer(server.grpcTarget!, credentials.createInsecure())).rejects.toMatchObject({ code: 14 });
  });
});

describe("certificate files", () => {
  it("a certificate that cannot be read stops the start with exit 1 and names the flag", () => {
    const { cmd, args } = serverCommand();
    const r = spawnSync(cmd, [...args, `--model-repository=${repo.dir}`, "--http-port=0", "--grpc-port=0", "--allow-metrics=false", "--grpc-use-ssl=true", `--grpc-server-cert=${file("missing.crt")}`, `--grpc-server-key=${file("server.key")}`], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain(`failed to read --grpc-server-cert '${file("missing.crt")}'`);
  });
});
