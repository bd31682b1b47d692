/**
 * deploy/helm/nereid and deploy/kubernetes's kustomization (issue #34 item 3), with the real
 * tools: helm (helm.sh/helm/v3 at a pinned version, built with `go install` into a cache
 * under the OS temp dir; the first build takes minutes) lints the chart and renders it for
 * each way of giving the model repository; every rendered object is checked against the
 * Kubernetes API schemas by PyPI's kubernetes-validate (strict), the ServiceMonitor against
 * prometheus-operator's; the container's args are parsed by Nereid's own flag parser.
 * `kubectl kustomize deploy/kubernetes` renders the plain manifests. Go, the Go module proxy,
 * PyPI and kubectl must be there: an error otherwise, never a skip.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { ROOT } from "../../helpers/server-process.ts";
import { goInstall } from "../../helpers/go-tool.ts";
import { kustomize, validateModel, validateObjects } from "../../helpers/k8s-validate.ts";
import { parseArgs, type ServerOptions } from "../../../src/options.ts";

const HELM = { pkg: "helm.sh/helm/v3/cmd/helm", version: "v3.22.0" };
const CHART = join(ROOT, "deploy", "helm", "nereid");
type Doc = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec: any; stringData?: Record<string, string> };

let helm = "";
const scratch = mkdtempSync(join(tmpdir(), "nereid-helm-"));
beforeAll(() => {
  helm = goInstall(HELM.pkg, HELM.version);
}, 1_800_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: "utf8", timeout: 120_000, maxBuffer: 1 << 24 });

/** `helm template` of the chart with `--set` values: the file it wrote, and its objects. */
function render(name: string, sets: string[]): { file: string; docs: Doc[] } {
  const r = run(helm, ["template", "nereid", CHART, ...sets.flatMap((s) => ["--set", s])]);
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  const file = join(scratch, `${name}.yaml`);
  writeFileSync(file, r.stdout);
  return {
    file,
    docs: parseAllDocuments(r.stdout)
      .map((d) => d.toJSON() as Doc)
      .filter(Boolean),
  };
}

/** Every object valid: the Kubernetes ones by kubernetes-validate, the ServiceMonitor by prometheus-operator's schema. */
async function expectValid(file: string, docs: Doc[]): Promise<void> {
  const results = validateObjects([file]);
  expect(results.map((r) => `${r.kind} ${r.name}`)).toEqual(docs.map((d) => `${d.kind} ${d.metadata.name}`));
  for (const [i, r] of results.entries()) {
    if (docs[i]!.apiVersion === "monitoring.coreos.com/v1") {
      expect(r.errors).toEqual([`Couldn't find schema for kind ${r.kind} with api version monitoring.coreos.com/v1 for kubernetes version 1.37`]);
      await validateModel(docs[i]!);
    } else expect([r.kind, r.schema, r.errors]).toEqual([r.kind, "kubernetes 1.37.0", []]);
  }
}

function options(args: string[]): ServerOptions {
  const r = parseArgs(args, {});
  if (r.kind !== "run") throw new Error("expected run");
  return r.options;
}

const of = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);

describe(`deploy/helm/nereid with helm ${HELM.version} (#34)`, () => {
  it("passes helm lint --strict, with its defaults and with an s3:// repository", () => {
    for (const sets of [[], ["modelRepository.url=s3://bucket/models", "modelRepository.secretName=s3", "serviceMonitor.enabled=true"]]) {
      const r = run(helm, ["lint", "--strict", CHART, ...sets.flatMap((s) => ["--set", s])]);
      expect(r.stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
      expect(r.status).toBe(0);
    }
  });

  it("renders a Deployment on a PersistentVolumeClaim by default, with Triton's probes, every object valid", async () => {
    const { file, docs } = render("default", []);
    expect(docs.map((d) => `${d.apiVersion} ${d.kind} ${d.metadata.name}`)).toEqual([
      "v1 Service nereid",
      "v1 Service nereid-metrics",
      "apps/v1 Deployment nereid",
    ]);
    await expectValid(file, docs);
    const pod = of(docs, "Deployment")[0]!.spec.template.spec;
    const c = pod.containers[0];
    const o = options(c.args);
    expect([o.modelRepositories, o.httpPort, o.grpcPort, o.metricsPort, o.exitTimeoutSecs]).toEqual([["/models"], 8000, 8001, 8002, 30]);
    expect(c.image).toBe("registry.example.com/nereid:0.1.0-x64");
    expect(c.ports).toEqual([
      { name: "http", containerPort: 8000 },
      { name: "grpc", containerPort: 8001 },
      { name: "metrics", containerPort: 8002 },
    ]);
    expect([c.livenessProbe.httpGet, c.readinessProbe.httpGet, c.startupProbe.httpGet]).toEqual([
      { path: "/v2/health/live", port: "http" },
      { path: "/v2/health/ready", port: "http" },
      { path: "/v2/health/ready", port: "http" },
    ]);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(o.exitTimeoutSecs);
    expect(pod.volumes[0]).toEqual({ name: "models", persistentVolumeClaim: { claimName: "nereid-models", readOnly: true } });
    expect(c.volumeMounts[0]).toEqual({ name: "models", mountPath: "/models", readOnly: true });
    expect(c.env).toBeUndefined();
    const podLabels = of(docs, "Deployment")[0]!.spec.template.metadata.labels;
    for (const s of of(docs, "Service")) expect(podLabels).toMatchObject(s.spec.selector);
  }, 600_000);

  it("renders an s3:// repository with a Secret, other ports, extra flags, resources and a ServiceMonitor", async () => {
    const { file, docs } = render("s3", [
      "modelRepository.url=s3://my-bucket/model_repository",
      "modelRepository.secretName=s3-credentials",
      "ports.http=9000",
      "ports.grpc=9001",
      "ports.metrics=9002",
      "extraArgs={--model-control-mode=poll,--repository-poll-secs=30}",
      "resources.limits.nvidia\\.com/gpu=1",
      "image.tag=0.1.0-arm64",
      "serviceMonitor.enabled=true",
    ]);
    expect(docs.map((d) => `${d.kind} ${d.metadata.name}`)).toEqual(["Service nereid", "Service nereid-metrics", "Deployment nereid", "ServiceMonitor nereid"]);
    await expectValid(file, docs);
    const pod = of(docs, "Deployment")[0]!.spec.template.spec;
    const c = pod.containers[0];
    const o = options(c.args);
    expect([o.modelRepositories, o.httpPort, o.grpcPort, o.metricsPort, o.modelControlMode, o.repositoryPollSecs]).toEqual([
      ["s3://my-bucket/model_repository"],
      9000,
      9001,
      9002,
      "poll",
      30,
    ]);
    expect(c.image).toBe("registry.example.com/nereid:0.1.0-arm64");
    expect(c.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([9000, 9001, 9002]);
    expect(c.resources.limits).toEqual({ memory: "4Gi", "nvidia.com/gpu": 1 });
    expect(c.envFrom).toEqual([{ secretRef: { name: "s3-credentials" } }]);
    expect(c.env).toContainEqual({ name: "TRITON_AWS_MOUNT_DIRECTORY", value: "/repository-copy" });
    expect(c.volumeMounts).toContainEqual({ name: "repository-copy", mountPath: "/repository-copy" });
    expect(pod.volumes).toContainEqual({ name: "repository-copy", emptyDir: { sizeLimit: "10Gi" } });
    expect(pod.volumes.some((v: { persistentVolumeClaim?: unknown }) => v.persistentVolumeClaim)).toBe(false);
    const services = of(docs, "Service");
    expect(services.map((s) => s.spec.ports.map((p: { port: number }) => p.port))).toEqual([[9000, 9001], [9002]]);
    const monitor = of(docs, "ServiceMonitor")[0]!;
    expect(services[1]!.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(services[0]!.metadata.labels).not.toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "15s" }]);
  }, 600_000);

  it("makes the Secret itself from modelRepository.credentials", async () => {
    const { file, docs } = render("credentials", [
      "modelRepository.url=s3://b/m",
      "modelRepository.credentials.AWS_ACCESS_KEY_ID=id",
      "modelRepository.credentials.AWS_SECRET_ACCESS_KEY=key",
    ]);
    await expectValid(file, docs);
    const secret = of(docs, "Secret")[0]!;
    expect([secret.metadata.name, secret.stringData]).toEqual(["nereid-repository", { AWS_ACCESS_KEY_ID: "id", AWS_SECRET_ACCESS_KEY: "key" }]);
    expect(of(docs, "Deployment")[0]!.spec.template.spec.containers[0].envFrom).toEqual([{ secretRef: { name: "nereid-repository" } }]);
  }, 600_000);

  const fails = (sets: string[]) => {
    const r = run(helm, ["template", "nereid", CHART, ...sets.flatMap((s) => ["--set", s])]);
    expect(r.status).toBe(1);
    return r.stderr;
  };

  it("refuses values.schema.json's unknown or mistyped values: a misspelt key, a port that is no number, a flag without --", () => {
    expect(fails(["modelRepo.url=s3://b/m"])).toContain("- at '': additional properties 'modelRepo' not allowed");
    expect(fails(["modelRepository.pvc.claim=x"])).toContain("- at '/modelRepository/pvc': additional properties 'claim' not allowed");
    expect(fails(["ports.http=http"])).toContain("- at '/ports/http': got string, want integer");
    expect(fails(["extraArgs={model-control-mode=poll}"])).toContain("- at '/extraArgs/0': 'model-control-mode=poll' does not match pattern '^--'");
  });

  it("refuses a repository it cannot serve, with a message saying what to set", () => {
    expect(fails(["modelRepository.url=/srv/models"])).toContain(
      'modelRepository.url must be an s3://, gs:// or as:// URL (got "/srv/models"); a local folder is a PersistentVolumeClaim (modelRepository.pvc.claimName)',
    );
    expect(fails(["modelRepository.pvc.claimName="])).toContain(
      "modelRepository: set url (s3://, gs:// or as://) or pvc.claimName (a PersistentVolumeClaim holding the repository)",
    );
    expect(fails(["modelRepository.url=s3://b/m", "modelRepository.secretName=s", "modelRepository.credentials.AWS_REGION=r"])).toContain(
      "modelRepository: set secretName or credentials, not both",
    );
    expect(fails(["modelRepository.secretName=s"])).toContain("modelRepository: secretName and credentials are for an object-storage url");
  });
});

describe("deploy/kubernetes/kustomization.yaml (#34)", () => {
  it("kubectl kustomize renders nereid.yaml's objects, every one valid", async () => {
    const file = join(scratch, "kustomize.yaml");
    const docs = parseAllDocuments(kustomize(join(ROOT, "deploy", "kubernetes"), file)).map((d) => d.toJSON() as Doc);
    const plain = parseAllDocuments(readFileSync(join(ROOT, "deploy", "kubernetes", "nereid.yaml"), "utf8")).map((d) => d.toJSON() as Doc);
    const key = (d: Doc) => `${d.kind} ${d.metadata.name}`;
    expect(docs.map(key).sort()).toEqual(plain.map(key).sort());
    for (const d of docs) expect(d).toEqual(plain.find((p) => key(p) === key(d)));
    await expectValid(file, docs);
  }, 600_000);
});
