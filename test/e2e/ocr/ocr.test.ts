/**
 * OCR end to end (issue #15 item 3) through the server process (the compiled binary when
 * built) and the example model_repository: text rendered at test time with ImageMagick
 * and DejaVu Sans is read back exactly by the `ocr` ensemble and by `ocr_bls` (BLS), over
 * HTTP (raw binary body, binary tensor extension) and gRPC; both give the same lines,
 * boxes and scores. Also: JPEG, an upside-down image (angle classifier), an image with
 * no text, and the errors for bytes that are not an image or an image that is too big.
 * Issue #33: the spaces between words of smaller text.
 * Issue #16: `ocr_stream` (decoupled) streams the same lines one response each, over
 * generate_stream (the image as base64) and ModelStreamInfer.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { status, type Client, credentials, makeGenericClientConstructor, type ClientDuplexStream } from "@grpc/grpc-js";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { startServerProcess, ROOT, type ServerProcess } from "../../helpers/server-process.ts";
import { inferenceClient, type Call } from "../../helpers/grpc-client.ts";
import { ensureImageMagick, renderText } from "../../helpers/render-text.ts";
import { join } from "node:path";

const LINES = ["NEREID SERVES OCR", "Triton 2026"];
const MODELS = ["ocr", "ocr_bls"] as const;

interface OcrResult {
  text: string[];
  boxes: number[]; // flat [n, 4, 2]
  boxesShape: number[];
  scores: number[];
}

let server: ServerProcess;
let call: (name: string) => Call;
let closeGrpc: () => void;
let png: Uint8Array;

beforeAll(async () => {
  ensureImageMagick();
  png = renderText(LINES); // 1152 x 320, 64 px DejaVu Sans
  server = await startServerProcess([`--model-repository=${join(ROOT, "model_repository")}`], { timeoutMs: 120_000 });
  const c = inferenceClient(server.grpcTarget!);
  call = c.call;
  closeGrpc = () => c.client.close();
}, 600_000);

afterAll(async () => {
  closeGrpc?.();
  await server?.stop();
});

type JsonOutput = { name: string; shape: number[]; datatype: string; data: (string | number)[] };

function fromJson(outputs: JsonOutput[]): OcrResult {
  const by = Object.fromEntries(outputs.map((o) => [o.name, o]));
  return { text: by.text!.data as string[], boxes: by.boxes!.data as number[], boxesShape: by.boxes!.shape, scores: by.scores!.data as number[] };
}

/** A BYTES element in binary form: a 4-byte little-endian length, then the bytes. */
function element(image: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + image.length);
  new DataView(out.buffer).setUint32(0, image.length, true);
  out.set(image, 4);
  return out;
}

/**
 * Triton's raw binary request: the body is the single input's data (one serialized BYTES
 * element); the outputs come back in the binary part, decoded here.
 */
async function inferRaw(model: string, image: Uint8Array): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "Inference-Header-Content-Length": "0" },
    body: element(image),
  });
  const body = new Uint8Array(await res.arrayBuffer());
  const headerLength = Number(res.headers.get("inference-header-content-length") ?? body.length);
  const json = JSON.parse(new TextDecoder().decode(body.subarray(0, headerLength)));
  let at = headerLength;
  for (const o of (json.outputs ?? []) as (JsonOutput & { parameters?: { binary_data_size?: number } })[]) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    const part = body.slice(at, at + size);
    at += size;
    if (o.datatype === "BYTES") {
      const text: string[] = [];
      for (let i = 0; i < part.length; ) {
        const len = new DataView(part.buffer, i).getUint32(0, true);
        text.push(new TextDecoder().decode(part.subarray(i + 4, i + 4 + len)));
        i += 4 + len;
      }
      o.data = text;
    } else o.data = [...new Float32Array(part.buffer)];
  }
  return { status: res.status, json };
}

/** The binary tensor extension: a JSON header naming the input, the image bytes after it. */
async function inferBinary(model: string, image: Uint8Array): Promise<{ status: number; json: any }> {
  const bytes = element(image);
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: [{ name: "image", shape: [1], datatype: "BYTES", parameters: { binary_data_size: bytes.length } }],
      parameters: { binary_data_output: false },
    }),
  );
  const body = new Uint8Array(header.length + bytes.length);
  body.set(header);
  body.set(bytes, header.length);
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "Inference-Header-Content-Length": String(header.length) },
    body,
  });
  return { status: res.status, json: await res.json() };
}

async function inferGrpc(model: string, image: Uint8Array): Promise<OcrResult> {
  const r = await call("ModelInfer")({
    model_name: model,
    inputs: [{ name: "image", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(image)] } }],
  });
  const idx = (n: string) => r.outputs.findIndex((o: { name: string }) => o.name === n);
  const raw = (n: string) => new Uint8Array(r.raw_output_contents[idx(n)]);
  const text: string[] = [];
  const t = raw("text");
  for (let at = 0; at < t.length; ) {
    const len = new DataView(t.buffer, t.byteOffset + at).getUint32(0, true);
    text.push(new TextDecoder().decode(t.subarray(at + 4, at + 4 + len)));
    at += 4 + len;
  }
  const f32 = (u: Uint8Array) => [...new Float32Array(u.slice().buffer)];
  return { text, boxes: f32(raw("boxes")), boxesShape: r.outputs[idx("boxes")].shape.map(Number), scores: f32(raw("scores")) };
}

describe.each(MODELS)("%s", (model) => {
  it("reads the rendered lines exactly over HTTP (raw binary body), with boxes in reading order", async () => {
    const { status: code, json } = await inferRaw(model, png);
    expect(code, JSON.stringify(json)).toBe(200);
    const r = fromJson(json.outputs);
    expect(r.text).toEqual(LINES);
    expect(r.boxesShape).toEqual([2, 4, 2]);
    for (const s of r.scores) expect(s).toBeGreaterThan(0.9);
    // Line 1 is drawn from x=64 with its baseline at y=128, line 2 at y=256; capitals
    // rise about 47 px above the baseline. Corners TL, TR, BR, BL as (x, y).
    const near = (v: number, want: number, tolerance: number) => expect(Math.abs(v - want), `${v} vs ${want}`).toBeLessThanOrEqual(tolerance);
    const [l1, l2] = [r.boxes.slice(0, 8), r.boxes.slice(8, 16)];
    near(l1[0]!, 64, 10); // left
    near(l1[1]!, 128 - 47, 8); // top
    near(l1[5]!, 128, 8); // bottom
    near(l1[2]!, 720, 30); // right: 17 characters
    near(l2[0]!, 64, 10);
    near(l2[1]!, 256 - 47, 8);
    near(l2[5]!, 256, 8);
    near(l2[2]!, 420, 30); // 11 characters
  });

  it("reads the same through the binary tensor extension and over gRPC", async () => {
    const raw = fromJson((await inferRaw(model, png)).json.outputs);
    const { status: code, json } = await inferBinary(model, png);
    expect(code, JSON.stringify(json)).toBe(200);
    const viaJson = fromJson(json.outputs);
    expect([viaJson.text, viaJson.boxes, viaJson.boxesShape]).toEqual([raw.text, raw.boxes, raw.boxesShape]);
    viaJson.scores.forEach((s, i) => expect(s).toBeCloseTo(raw.scores[i]!, 6));
    const g = await inferGrpc(model, png);
    expect(g.text).toEqual(LINES);
    expect(g.boxesShape).toEqual([2, 4, 2]);
    expect(g.boxes).toEqual(raw.boxes);
    g.scores.forEach((s, i) => expect(s).toBeCloseTo(raw.scores[i]!, 6));
  });

  it("keeps the spaces between words at 20 and 32 px, where PP-OCRv4 rarely lets the space class win (#33 item 5)", async () => {
    // Greedy CTC alone read these as "Nereidserves42models" and "a=b" (ocr_ctc's space_threshold).
    const lines = ["Nereid serves 42 models", "a = b"];
    for (const size of [20, 32]) {
      const { status: code, json } = await inferRaw(model, renderText(lines, { size }));
      expect(code, JSON.stringify(json)).toBe(200);
      expect(fromJson(json.outputs).text, `${size} px`).toEqual(lines);
    }
  });

  it("reads a JPEG of the same text", async () => {
    const { status: code, json } = await inferRaw(model, renderText(LINES, { format: "jpg", quality: 90 }));
    expect(code, JSON.stringify(json)).toBe(200);
    expect(fromJson(json.outputs).text).toEqual(LINES);
  });

  it("turns upside-down lines back (angle classifier), lines in the rotated image's order", async () => {
    const { status: code, json } = await inferRaw(model, renderText(LINES, { rotate: 180 }));
    expect(code, JSON.stringify(json)).toBe(200);
    expect(fromJson(json.outputs).text).toEqual([...LINES].reverse());
  });

  it("answers zero lines for an image without text", async () => {
    const { status: code, json } = await inferRaw(model, renderText([], { width: 400 }));
    expect(code, JSON.stringify(json)).toBe(200);
    const by = Object.fromEntries((json.outputs as JsonOutput[]).map((o) => [o.name, o]));
    expect([by.text!.shape, by.boxes!.shape, by.scores!.shape]).toEqual([[0], [0, 4, 2], [0]]);
    expect([by.text!.data, by.boxes!.data, by.scores!.data]).toEqual([[], [], []]);
  });

  it("refuses bytes that are not a PNG or JPEG with INVALID_ARG and says why", async () => {
    const notImage = await inferRaw(model, new TextEncoder().encode("hello, world"));
    expect(notImage.status).toBe(400);
    expect(notImage.json.error).toContain("'image' is not a PNG or JPEG file (unknown signature)");
    const gif = await inferRaw(model, new TextEncoder().encode("GIF89a\x01\x00\x01\x00"));
    expect(gif.status).toBe(400);
    expect(gif.json.error).toContain("unsupported image format GIF: send PNG or JPEG");
    const err = await inferGrpc(model, new TextEncoder().encode("hello, world")).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toContain("is not a PNG or JPEG file");
  });

  it("refuses an image over max_pixels from its header, before decoding it", async () => {
    const header = new Uint8Array(33);
    header.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
    new DataView(header.buffer).setUint32(16, 100_000);
    new DataView(header.buffer).setUint32(20, 50_000);
    const r = await inferRaw(model, header);
    expect(r.status).toBe(400);
    expect(r.json.error).toContain("image is 100000x50000 = 5000000000 pixels, over the limit of 40000000 (ocr_pre's max_pixels)");
  });
});

describe("ocr and ocr_bls", () => {
  it("give the same lines, boxes and scores", async () => {
    const [a, b] = await Promise.all(MODELS.map(async (m) => fromJson((await inferRaw(m, png)).json.outputs)));
    expect(b).toEqual(a);
  });

  it("serve concurrent requests, each with its own answer", async () => {
    const other = renderText(["HELLO WORLD"]);
    const jobs = Array.from({ length: 6 }, (_, i) => ({
      model: MODELS[i % 2]!,
      image: i % 3 === 0 ? other : png,
      want: i % 3 === 0 ? ["HELLO WORLD"] : LINES,
    }));
    const got = await Promise.all(jobs.map(async (j) => fromJson((await inferRaw(j.model, j.image)).json.outputs).text));
    expect(got).toEqual(jobs.map((j) => j.want));
  });
});

describe("ocr_stream (#16: a decoupled model streaming each line)", () => {
  it("streams the lines ocr_bls reads, one SSE event each, over generate_stream", async () => {
    const whole = fromJson((await inferRaw("ocr_bls", png)).json.outputs);
    const res = await fetch(`${server.url}/v2/models/ocr_stream/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ image: Buffer.from(png).toString("base64") }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text
      .split("\n\n")
      .filter((e) => e)
      .map((e) => JSON.parse(e.replace(/^data: /, "")));
    expect(events.map((e) => [e.model_name, e.text])).toEqual(LINES.map((l) => ["ocr_stream", l]));
    expect(events.flatMap((e) => e.box)).toEqual(whole.boxes);
    events.forEach((e, i) => expect(e.score).toBeCloseTo(whole.scores[i]!, 5));
  });

  it("streams them over ModelStreamInfer, the raw PNG as the input; no text: no response", async () => {
    const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
    const c = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: () => ClientDuplexStream<object, any> };
    const stream = c.ModelStreamInfer();
    const msgs: any[] = [];
    await new Promise<void>((resolve, reject) => {
      stream.on("data", (m) => msgs.push(m));
      stream.on("end", () => resolve());
      stream.on("error", reject);
      const req = (id: string, image: Uint8Array) => ({
        model_name: "ocr_stream",
        id,
        inputs: [{ name: "image", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(image)] } }],
      });
      stream.write(req("lines", png));
      stream.write(req("blank", renderText([], { width: 400 })));
      stream.end();
    });
    c.close();
    const lines = msgs.filter((m) => m.infer_response.id === "lines");
    const textOf = (m: any) => new TextDecoder().decode(new Uint8Array(m.infer_response.raw_output_contents[0]).subarray(4));
    expect(lines.map(textOf)).toEqual(LINES);
    expect(lines.map((m) => m.infer_response.parameters.triton_final_response.bool_param)).toEqual([false, false]);
    expect(msgs.filter((m) => m.infer_response.id === "blank")).toEqual([]);
    expect(msgs.length).toBe(2);
  });
});
