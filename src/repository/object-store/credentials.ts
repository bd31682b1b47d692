/**
 * @module Credentials for object-storage repositories, from where Triton reads them:
 * the JSON file named by TRITON_CLOUD_CREDENTIAL_PATH (per scheme, the entry whose name
 * is the longest prefix of the repository URL, "" matching every URL), else the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION /
 * AWS_DEFAULT_REGION, AWS_PROFILE; AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY;
 * GOOGLE_APPLICATION_CREDENTIALS). Empty strings count as unset, as in Triton's file.
 */
import { readFileSync } from "node:fs";

export type Env = Readonly<Record<string, string | undefined>>;

export interface S3Credential {
  keyId?: string;
  secretKey?: string;
  sessionToken?: string;
  region?: string;
  profile?: string;
}
export interface AzureCredential {
  account?: string;
  key?: string;
}
export interface GcsCredential {
  /** A service account's JSON key file. */
  keyFile?: string;
}

const set = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The entry of `section` whose name is the longest prefix of one of `urls`. */
function match(section: unknown, urls: readonly string[]): unknown {
  if (!section || typeof section !== "object") return undefined;
  let best: string | undefined;
  for (const name of Object.keys(section)) {
    if (urls.some((u) => u.startsWith(name)) && (best === undefined || name.length > best.length)) best = name;
  }
  return best === undefined ? undefined : (section as Record<string, unknown>)[best];
}

/** The credential file's entry for `urls` under `scheme`, or undefined without a file or a match. */
function fromFile(scheme: "s3" | "as" | "gs", urls: readonly string[], env: Env): unknown {
  const path = env.TRITON_CLOUD_CREDENTIAL_PATH;
  if (!path) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`cannot read the cloud credential file '${path}' (TRITON_CLOUD_CREDENTIAL_PATH): ${(err as Error).message}`);
  }
  return match((json as Record<string, unknown> | null)?.[scheme], urls);
}

/** `urls`: the repository URL as given and, for a custom S3 endpoint, its s3://bucket/path form. */
export function s3Credential(urls: readonly string[], env: Env): S3Credential {
  const f = fromFile("s3", urls, env) as Record<string, unknown> | undefined;
  if (f) return { keyId: set(f.key_id), secretKey: set(f.secret_key), sessionToken: set(f.session_token), region: set(f.region), profile: set(f.profile) };
  return {
    keyId: set(env.AWS_ACCESS_KEY_ID),
    secretKey: set(env.AWS_SECRET_ACCESS_KEY),
    sessionToken: set(env.AWS_SESSION_TOKEN),
    region: set(env.AWS_REGION) ?? set(env.AWS_DEFAULT_REGION),
    profile: set(env.AWS_PROFILE),
  };
}

export function azureCredential(urls: readonly string[], env: Env): AzureCredential {
  const f = fromFile("as", urls, env) as Record<string, unknown> | undefined;
  if (f) return { account: set(f.account_str), key: set(f.account_key) };
  return { account: set(env.AZURE_STORAGE_ACCOUNT), key: set(env.AZURE_STORAGE_KEY) };
}

export function gcsCredential(urls: readonly string[], env: Env): GcsCredential {
  const f = fromFile("gs", urls, env);
  if (f !== undefined) return { keyFile: set(f) };
  return { keyFile: set(env.GOOGLE_APPLICATION_CREDENTIALS) };
}
