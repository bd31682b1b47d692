/**
 * gRPC over TLS and mutual TLS through the server binary (#17): --grpc-use-ssl with
 * --grpc-server-cert/--grpc-server-key, and --grpc-use-ssl-mutual with --grpc-root-cert,
 * using certificates this test makes with openssl: a TLS client gets exact answers, a
 * plaintext client and (for mutual TLS) a client without a certificate or with one from
 * another CA are refused; a certificate file that cannot be read stops the start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ChannelCredentials } from "@grpc/grpc-js";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferSimple } from "../../helpers/grpc-client.ts";
import { certificateMaker } from "../../helpers/tls-certs.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-tls-"));
const file = (name: string) => join(dir, name);
let repo: ReturnType<typeof makeRepository>;

beforeAll(() => {
  const { makeCa, makeCert } = certificateMaker(dir, "The gRPC TLS test");
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
const infer = (target: string, creds: ChannelCredentials) => inferSimple(target, creds);

const ca = () => readFileSync(file("ca.crt"));
const tlsClient = (name?: string) =>
  name ? credentials.createSsl(ca(), readFileSync(file(`${name}.key`)), readFileSync(file(`${name}.crt`))) : credentials.createSsl(ca());

describe("--grpc-use-ssl", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--grpc-use-ssl=true",
      `--grpc-server-cert=${file("server.crt")}`,
      `--grpc-server-key=${file("server.key")}`,
      "--allow-metrics=false",
    ]);
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
      `--model-repository=${repo.dir}`,
      "--grpc-use-ssl-mutual=true",
      `--grpc-server-cert=${file("server.crt")}`,
      `--grpc-server-key=${file("server.key")}`,
      `--grpc-root-cert=${file("ca.crt")}`,
      "--allow-metrics=false",
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
      `--model-repository=${repo.dir}`,
      "--grpc-use-ssl-mutual=true",
      `--grpc-server-cert=${file("server.crt")}`,
      `--grpc-server-key=${file("server.key")}`,
      `--grpc-root-cert=${file("ca.crt")}`,
      "--allow-metrics=false",
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
    const r = spawnSync(
      cmd,
      [
        ...args,
        `--model-repository=${repo.dir}`,
        "--http-port=0",
        "--grpc-port=0",
        "--allow-metrics=false",
        "--grpc-use-ssl=true",
        `--grpc-server-cert=${file("missing.crt")}`,
        `--grpc-server-key=${file("server.key")}`,
      ],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain(`failed to read --grpc-server-cert '${file("missing.crt")}'`);
  });
});
