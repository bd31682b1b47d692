/** Issue #21 item 4: where object-storage credentials come from (TRITON_CLOUD_CREDENTIAL_PATH, else the environment). */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { azureCredential, gcsCredential, s3Credential } from "../../../src/repository/object-store/credentials.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-creds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, "cloud_credential.json");
// Triton's documented example, with values.
writeFileSync(
  file,
  JSON.stringify({
    gs: { "": "/keys/default.json", "gs://gcs-bucket-002": "/keys/two.json" },
    s3: {
      "": { secret_key: "S", key_id: "K", region: "eu-west-1", session_token: "", profile: "" },
      "s3://s3-bucket-002": { secret_key: "S2", key_id: "K2", region: "us-east-2", session_token: "T2", profile: "P2" },
    },
    as: { "": { account_str: "acct", account_key: "key" }, "as://Account-002/Container": { account_str: "", account_key: "" } },
  }),
);

describe("object-store credentials", () => {
  it("takes the environment without a credential file", () => {
    const env = {
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "secret",
      AWS_SESSION_TOKEN: "tok",
      AWS_DEFAULT_REGION: "ap-south-1",
      AZURE_STORAGE_ACCOUNT: "a",
      AZURE_STORAGE_KEY: "k",
      GOOGLE_APPLICATION_CREDENTIALS: "/g.json",
    };
    expect(s3Credential(["s3://b/p"], env)).toEqual({ keyId: "id", secretKey: "secret", sessionToken: "tok", region: "ap-south-1", profile: undefined });
    expect(s3Credential(["s3://b/p"], { ...env, AWS_REGION: "us-west-2" }).region).toBe("us-west-2");
    expect(azureCredential(["as://a/c"], env)).toEqual({ account: "a", key: "k" });
    expect(gcsCredential(["gs://b"], env)).toEqual({ keyFile: "/g.json" });
    expect(s3Credential(["s3://b"], {})).toEqual({});
    expect(Object.values(s3Credential(["s3://b"], { AWS_ACCESS_KEY_ID: "" })).filter((v) => v !== undefined)).toEqual([]);
  });

  it("takes the credential file's longest matching entry, ignoring the environment", () => {
    const env = { TRITON_CLOUD_CREDENTIAL_PATH: file, AWS_ACCESS_KEY_ID: "from-env" };
    expect(s3Credential(["s3://s3-bucket-002/models"], env)).toEqual({ keyId: "K2", secretKey: "S2", sessionToken: "T2", region: "us-east-2", profile: "P2" });
    expect(s3Credential(["s3://other/models"], env)).toEqual({ keyId: "K", secretKey: "S", sessionToken: undefined, region: "eu-west-1", profile: undefined });
    // A custom endpoint's URL also matches by its s3://bucket/path form.
    expect(s3Credential(["s3://localhost:9000/s3-bucket-002/m", "s3://s3-bucket-002/m"], env).keyId).toBe("K2");
    expect(gcsCredential(["gs://gcs-bucket-002/repo"], env)).toEqual({ keyFile: "/keys/two.json" });
    expect(gcsCredential(["gs://elsewhere"], env)).toEqual({ keyFile: "/keys/default.json" });
    expect(azureCredential(["as://Account-002/Container/x"], env)).toEqual({ account: undefined, key: undefined });
    expect(azureCredential(["as://acct/c"], env)).toEqual({ account: "acct", key: "key" });
  });

  it("says which file it could not read", () => {
    expect(() => s3Credential(["s3://b"], { TRITON_CLOUD_CREDENTIAL_PATH: join(dir, "missing.json") })).toThrow(/cloud credential file .*missing\.json/);
  });
});
