/**
 * deploy/kserve against KServe's own CRD schemas (issue #34 item 3): the openAPIV3Schema of
 * serving.kserve.io's ServingRuntime and InferenceService CRDs from the pinned
 * github.com/kserve/kserve module (config/crd/full, fetched with `go mod download`), made
 * strict as the API server's strict field validation is, checked by jsonschema in
 * kubernetes-validate's venv (test/e2e/deploy/validate_objects.py). Nothing fetched is
 * committed; go and PyPI must be reachable (an error otherwise, never a skip). `kubectl
 * kustomize deploy/kserve` renders the same two objects.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../helpers/server-process.ts";
import { goModuleDir } from "../../helpers/go-tool.ts";
import { kustomize, validateObjects } from "../../helpers/k8s-validate.ts";

const KSERVE = { module: "github.com/kserve/kserve", version: "v0.16.0" };

let crds: string[] = [];
const scratch = mkdtempSync(join(tmpdir(), "nereid-kserve-"));
const runtime = join(ROOT, "deploy", "kserve", "servingruntime.yaml");
const isvc = join(ROOT, "deploy", "kserve", "inferenceservice.yaml");

beforeAll(() => {
  const dir = join(goModuleDir(KSERVE.module, KSERVE.version), "config", "crd", "full");
  crds = ["serving.kserve.io_servingruntimes.yaml", "serving.kserve.io_inferenceservices.yaml"].map((f) => join(dir, f));
}, 600_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of `file` with `edit` applied to its text. */
function broken(file: string, edit: (text: string) => string): string {
  const out = join(scratch, `broken-${Math.random().toString(36).slice(2)}.yaml`);
  const text = readFileSync(file, "utf8");
  const changed = edit(text);
  expect(changed).not.toBe(text);
  writeFileSync(out, changed);
  return out;
}

describe(`deploy/kserve against KServe ${KSERVE.version}'s CRDs (#34)`, () => {
  it("the ServingRuntime and the InferenceService are valid, each checked by its CRD's schema", () => {
    const results = validateObjects([runtime, isvc], crds);
    expect(results.map((r) => [r.kind, r.name, r.schema, r.errors])).toEqual([
      ["ServingRuntime", "nereid", crds[0], []],
      ["InferenceService", "simple", crds[1], []],
    ]);
  }, 600_000);

  it("the check finds a misspelt field, a wrong type and an unknown field of the InferenceService", () => {
    const bad = [
      broken(runtime, (t) => t.replace("protocolVersions:", "protocolVersion:")),
      broken(runtime, (t) => t.replace("{ containerPort: 8080, protocol: TCP }", '{ containerPort: "8080", protocol: TCP }')),
      broken(isvc, (t) => t.replace("storageUri:", "storageURI:")),
    ];
    expect(validateObjects(bad, crds).map((r) => r.errors)).toEqual([
      ["spec: Additional properties are not allowed ('protocolVersion' was unexpected)"],
      ["spec.containers.0.ports.0.containerPort: '8080' is not of type 'integer'"],
      ["spec.predictor.model: Additional properties are not allowed ('storageURI' was unexpected)"],
    ]);
  }, 600_000);

  it("kubectl kustomize deploy/kserve renders both, valid", () => {
    const file = join(scratch, "kustomize.yaml");
    kustomize(join(ROOT, "deploy", "kserve"), file);
    expect(validateObjects([file], crds).map((v) => [v.kind, v.name, v.schema, v.errors])).toEqual([
      ["ServingRuntime", "nereid", crds[0], []],
      ["InferenceService", "simple", crds[1], []],
    ]);
  }, 600_000);
});
