/**
 * deploy/kubernetes and deploy/kserve (issue #21): every Kubernetes object validates
 * against the Kubernetes API schemas (kubernetes-models) and the ServiceMonitor against
 * prometheus-operator's (@kubernetes-models/prometheus-operator); the containers' args
 * are flags Nereid accepts, with the ports, health routes and grace period they imply.
 *
 * KServe's ServingRuntime and InferenceService are checked against KServe's CRD schemas in
 * test/e2e/deploy/kserve.test.ts (#34); here their containers as Kubernetes Containers.
 */
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { Container } from "kubernetes-models/v1";
import { parseArgs, type ServerOptions } from "../../../src/options.ts";
import { validateModel } from "../../helpers/k8s-validate.ts";

const ROOT = join(import.meta.dirname, "../../..");
type Doc = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec: any };

const load = (path: string): Doc[] => parseAllDocuments(readFileSync(join(ROOT, path), "utf8")).map((d) => d.toJSON() as Doc);

function options(args: string[]): ServerOptions {
  const r = parseArgs(args, {});
  if (r.kind !== "run") throw new Error("expected run");
  return r.options;
}

describe("deploy/kubernetes/nereid.yaml (#21)", () => {
  const docs = load("deploy/kubernetes/nereid.yaml");
  const byKind = (kind: string) => docs.filter((d) => d.kind === kind);

  it("holds a Deployment, two Services, a ServiceMonitor and an HPA, each valid against its schema", async () => {
    expect(docs.map((d) => `${d.apiVersion} ${d.kind}`)).toEqual([
      "apps/v1 Deployment",
      "v1 Service",
      "v1 Service",
      "monitoring.coreos.com/v1 ServiceMonitor",
      "autoscaling/v2 HorizontalPodAutoscaler",
    ]);
    for (const d of docs) await validateModel(d);
  });

  it("the validator catches a broken object", async () => {
    const broken = structuredClone(byKind("Deployment")[0]!);
    broken.spec.template.spec.containers[0].ports[0].containerPort = "http";
    await expect(validateModel(broken)).rejects.toThrow(/containerPort/);
    const noSelector = structuredClone(byKind("ServiceMonitor")[0]!);
    delete noSelector.spec.selector;
    await expect(validateModel(noSelector)).rejects.toThrow(/selector/);
  });

  it("runs flags Nereid accepts, probes the V2 health routes and outlasts --exit-timeout-secs", () => {
    const pod = byKind("Deployment")[0]!.spec.template.spec;
    const c = pod.containers[0];
    const o = options(c.args);
    expect(o.modelRepositories).toEqual(["/models"]);
    expect(o.exitTimeoutSecs).toBe(30);
    expect(c.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([o.httpPort, o.grpcPort, o.metricsPort]);
    expect(c.livenessProbe.httpGet.path).toBe("/v2/health/live");
    expect(c.readinessProbe.httpGet.path).toBe("/v2/health/ready");
    expect(c.startupProbe.httpGet.path).toBe("/v2/health/ready");
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(o.exitTimeoutSecs);
    expect(pod.securityContext.runAsUser).toBe(10001);
    expect(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(["/models", "/tmp"]);
  });

  it("selects its own pods and metrics endpoint", () => {
    const podLabels = byKind("Deployment")[0]!.spec.template.metadata.labels;
    for (const s of byKind("Service")) expect(podLabels).toMatchObject(s.spec.selector);
    const metrics = byKind("Service").find((s) => s.metadata.name === "nereid-metrics")!;
    expect(metrics.metadata.labels).toMatchObject(byKind("ServiceMonitor")[0]!.spec.selector.matchLabels);
    expect(byKind("ServiceMonitor")[0]!.spec.endpoints[0].port).toBe(metrics.spec.ports[0].name);
    expect(byKind("HorizontalPodAutoscaler")[0]!.spec.scaleTargetRef.name).toBe(byKind("Deployment")[0]!.metadata.name);
  });
});

describe("deploy/kserve (#21)", () => {
  const [runtime] = load("deploy/kserve/servingruntime.yaml");
  const [isvc] = load("deploy/kserve/inferenceservice.yaml");

  it("declares a ServingRuntime for V2 over REST and gRPC whose container is a valid Kubernetes Container running flags Nereid accepts", () => {
    expect(`${runtime!.apiVersion} ${runtime!.kind}`).toBe("serving.kserve.io/v1alpha1 ServingRuntime");
    expect(runtime!.spec.protocolVersions).toEqual(["v2", "grpc-v2"]);
    expect(runtime!.spec.supportedModelFormats.map((f: { name: string }) => f.name)).toEqual(["onnx", "triton"]);
    const c = runtime!.spec.containers[0];
    new Container(c).validate();
    expect(c.name).toBe("kserve-container");
    const o = options(c.args);
    expect([o.modelRepositories, o.httpPort, o.grpcPort]).toEqual([["/mnt/models"], 8080, 9000]);
    expect(c.readinessProbe.httpGet.path).toBe("/v2/health/ready");
    expect(runtime!.metadata).toMatchObject({ annotations: { "prometheus.kserve.io/port": String(o.metricsPort) } });
  });

  it("has an InferenceService that uses that runtime with a format it declares", () => {
    expect(`${isvc!.apiVersion} ${isvc!.kind}`).toBe("serving.kserve.io/v1beta1 InferenceService");
    const model = isvc!.spec.predictor.model;
    expect(model.runtime).toBe(runtime!.metadata.name);
    expect(runtime!.spec.supportedModelFormats.map((f: { name: string }) => f.name)).toContain(model.modelFormat.name);
    expect(runtime!.spec.protocolVersions).toContain(model.protocolVersion);
  });
});
