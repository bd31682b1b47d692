/**
 * Kubernetes objects checked against real schemas (#34): test/e2e/deploy/validate_objects.py
 * in a venv with kubernetes-validate from PyPI (the Kubernetes API's schemas, strict) and its
 * jsonschema, which also checks custom resources against the openAPIV3Schema of given CRDs
 * (KServe's); prometheus-operator's objects through @kubernetes-models (npm), as in
 * test/unit/deploy/manifests.test.ts.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { venvPython } from "./python-venv.ts";

export const KUBERNETES_VALIDATE = "kubernetes-validate==1.37.0";
const SCRIPT = join(import.meta.dirname, "..", "e2e", "deploy", "validate_objects.py");

export interface Validated {
  file: string;
  kind: string;
  name: string;
  /** "kubernetes 1.37.0", or the CRD file whose schema was used. */
  schema: string;
  errors: string[];
}

/** Every document of `files`, each with the errors its schema finds (none: valid). */
export function validateObjects(files: string[], crds: string[] = []): Validated[] {
  const python = venvPython({
    name: "kubernetes-validate",
    packages: [KUBERNETES_VALIDATE],
    imports: ["kubernetes_validate", "jsonschema", "yaml"],
    systemSitePackages: false,
  });
  const r = spawnSync(python, [SCRIPT, ...crds.flatMap((c) => ["--crd", c]), ...files], { encoding: "utf8", timeout: 300_000, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`validate_objects.py failed:\n${r.error?.message ?? ""}${r.stderr}`);
  return r.stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Validated);
}

const MODELS: Record<string, () => Promise<Record<string, unknown>>> = {
  v1: () => import("kubernetes-models/v1"),
  "apps/v1": () => import("kubernetes-models/apps/v1"),
  "autoscaling/v2": () => import("kubernetes-models/autoscaling/v2"),
  "monitoring.coreos.com/v1": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1"),
};

/** Throws unless `doc` is valid for its model in kubernetes-models or @kubernetes-models/prometheus-operator. */
export async function validateModel(doc: object & { apiVersion: string; kind: string }): Promise<void> {
  const load = MODELS[doc.apiVersion];
  if (!load) throw new Error(`no model for ${doc.apiVersion}`);
  const Model = (await load())[doc.kind] as (new (d: object) => { validate(): void }) | undefined;
  if (typeof Model !== "function") throw new Error(`no model for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

/** `kubectl kustomize <dir>` (kubectl's own kustomize) written to `out`: its text. kubectl missing is an error. */
export function kustomize(dir: string, out: string): string {
  const r = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", timeout: 120_000, maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} failed (the test needs kubectl):\n${r.error?.message ?? ""}${r.stderr ?? ""}`);
  writeFileSync(out, r.stdout);
  return r.stdout;
}
