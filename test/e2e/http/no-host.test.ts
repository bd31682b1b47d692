/**
 * Requests without a Host header, through the binary (P-01, P-02, P-15): HTTP/1.0 allows
 * them, and HAProxy's `option httpchk GET /v2/health/ready` sends its checks that way (as
 * does `printf 'GET /v2/health/ready HTTP/1.0\r\n\r\n' | nc`). Bun gives such a request's URL
 * as the bare request target; the path was read as if it were absolute, so every one of
 * them answered 404 (the metrics port its empty 200 for other paths, Vertex AI 400). With the
 * frontend workers (the default) and on one HTTP thread, and on the other listeners, which
 * read paths the same way. An HTTP/1.1 request without a Host is refused with 400 by Bun, as
 * RFC 9112 asks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";

/** `head` (a request line and headers, CRLF-terminated) and `body` on a connection of their own; the status and body of the answer. */
function raw(port: number, head: string, body = ""): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`${head}\r\n${body}`));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      text += d;
      const end = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1];
      // HTTP/1.0: the server closes after the answer; stop at its whole body anyway.
      if (end >= 0 && length !== undefined && text.length - end - 4 >= Number(length)) socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve({ status: Number(/^HTTP\/1\.[01] (\d+)/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf("\r\n\r\n") + 4) }));
  });
}

const INFER = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) },
  ],
});

describe.each([
  ["the default frontend workers", []],
  ["one HTTP thread", ["--http-thread-count=1"]],
])("HTTP/1.0 requests without a Host header, %s", (_name, args) => {
  let server: ServerProcess;
  const ports: Record<"sagemaker" | "vertex" | "openai", number> = { sagemaker: 0, vertex: 0, openai: 0 };
  beforeAll(async () => {
    server = await startServerProcess(
      [
        "--model-repository=model_repository",
        "--model-control-mode=explicit",
        "--load-model=simple",
        "--allow-sagemaker=true",
        "--sagemaker-port=0",
        "--allow-vertex-ai=true",
        "--vertex-ai-port=0",
        "--vertex-ai-default-model=simple",
        "--openai-port=0",
        ...args,
      ],
      { env: { AIP_PREDICT_ROUTE: "/predict", AIP_HEALTH_ROUTE: "/health" } },
    );
    // The other listeners may announce themselves after the HTTP one.
    const lines = { sagemaker: "Sagemaker HTTPService", vertex: "Vertex AI HTTPService", openai: "OpenAI-compatible HTTPService" } as const;
    for (let i = 0; i < 200 && Object.values(ports).some((p) => p === 0); i++) {
      for (const [k, line] of Object.entries(lines))
        ports[k as keyof typeof lines] = Number(new RegExp(`Started ${line} at [^\\s:]+:(\\d+)`).exec(server.log())?.[1] ?? 0);
      await new Promise((r) => setTimeout(r, 25));
    }
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("health: ready and live answer 200 (HAProxy's httpchk)", async () => {
    expect(await raw(server.port, "GET /v2/health/ready HTTP/1.0\r\n")).toEqual({ status: 200, body: "" });
    expect(await raw(server.port, "GET /v2/health/live HTTP/1.0\r\n")).toEqual({ status: 200, body: "" });
    expect((await raw(server.port, "GET /v2/models/simple/ready HTTP/1.0\r\n")).status).toBe(200);
  });

  it("a model's metadata and an infer answer as with a Host", async () => {
    const meta = await raw(server.port, "GET /v2/models/simple HTTP/1.0\r\n");
    expect(meta.status).toBe(200);
    expect(JSON.parse(meta.body)).toMatchObject({ name: "simple", versions: ["1"], platform: "onnxruntime_onnx" });
    const infer = await raw(
      server.port,
      `POST /v2/models/simple/infer?x=1 HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: ${INFER.length}\r\n`,
      INFER,
    );
    expect(infer.status).toBe(200);
    const outputs = (JSON.parse(infer.body) as { outputs: { name: string; data: number[] }[] }).outputs;
    expect(outputs.find((o) => o.name === "OUTPUT0")?.data).toEqual(Array.from({ length: 16 }, (_, i) => i + 2));
    expect(outputs.find((o) => o.name === "OUTPUT1")?.data).toEqual(Array.from({ length: 16 }, (_, i) => i - 2));
  });

  it("a path the server does not serve is still 404 in Triton's shape", async () => {
    expect(await raw(server.port, "GET /v2/nope HTTP/1.0\r\n")).toEqual({ status: 404, body: '{"error":"Not Found"}' });
  });

  it("the other listeners route it as with a Host: SageMaker's /ping, Vertex AI's health route, the OpenAI API's model list, the metrics", async () => {
    expect((await raw(ports.sagemaker, "GET /ping HTTP/1.0\r\n")).status).toBe(200);
    expect((await raw(ports.vertex, "GET /health HTTP/1.0\r\n")).status).toBe(200);
    const models = await raw(ports.openai, "GET /v1/models HTTP/1.0\r\n");
    expect(models.status).toBe(200);
    expect((JSON.parse(models.body) as { data: { id: string }[] }).data.map((m) => m.id)).toContain("simple");
    const metrics = await raw(Number(new URL(server.metricsUrl!).port), "GET /metrics HTTP/1.0\r\n");
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('nv_inference_request_success{model="simple",version="1"}');
  });

  it("an HTTP/1.1 request without a Host is refused with 400 (RFC 9112), and the server keeps serving", async () => {
    expect((await raw(server.port, "GET /v2/health/ready HTTP/1.1\r\nconnection: close\r\n")).status).toBe(400);
    expect((await raw(server.port, "GET /v2/health/ready HTTP/1.1\r\nhost: x\r\nconnection: close\r\n")).status).toBe(200);
  });
});
