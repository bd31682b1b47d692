/**
 * The status page from the compiled binary in headless Chromium (#18): Debian's
 * chromium (installed if missing) driven by playwright-core loads /nereid/status, sees
 * the models, the load error and a request rate that rises under load and falls back
 * to zero after it, and takes a screenshot: into the OS temporary folder, or over
 * docs/status-page.png (shown in docs/observe.md) when NEREID_UPDATE_SCREENSHOT=1, so a test run
 * leaves the working tree as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { readFileSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { ROOT, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { ensureDebianProgram } from "../../helpers/debian.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const executablePath = ensureDebianProgram("/usr/bin/chromium", "chromium", "The status page test");
  repo = makeRepository(["simple", "simple_identity", "simple_fp32_mlp"]);
  repo.add(
    "nofile/config.pbtxt",
    'name: "nofile"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
  );
  repo.add("nofile/1/README", "no model.onnx here");
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    "--exit-on-error=false",
    "--allow-status-page=true",
    "--allow-grpc=false",
    "--allow-metrics=false",
  ]);
  browser = await chromium.launch({ executablePath, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  page = await browser.newPage({ viewport: { width: 1480, height: 420 } });
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  repo?.remove();
});

const INFER = JSON.stringify({
  inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) })),
});

/** `n` clients sending `simple` requests one after another until stop() is called. */
function load(n: number) {
  let running = true;
  const clients = Array.from({ length: n }, async () => {
    while (running) {
      const res = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: INFER });
      if (res.status !== 200) throw new Error(`infer answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
  });
  return async () => {
    running = false;
    await Promise.all(clients);
  };
}

/** Resolves once `check` holds, trying every second; throws after `ms`. */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`condition not met in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const cell = (model: string, cls: string) => page.locator(`#models tr[data-model="${model}"] td.${cls}`);

describe("status page in Chromium", () => {
  it("shows every model with its state and the load error", async () => {
    await page.goto(`${server.url}/nereid/status`);
    await page.locator("#conn", { hasText: "live" }).waitFor();
    const rows = await page
      .locator("#models tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)));
    expect(rows).toEqual([
      ["nofile", "1", "UNAVAILABLE"],
      ["simple", "1", "READY"],
      ["simple_fp32_mlp", "1", "READY"],
      ["simple_identity", "1", "READY"],
    ]);
    const errors = await page.locator("#errors tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    expect(errors).toEqual([["nofile", "1", "unable to find 'nofile/1/model.onnx' for model 'nofile'"]]); // no server path (#29)
    expect(await page.locator("#server-id").textContent()).toBe("triton");
    // The server's name, not "Nereid triton": the id (--id, Triton's "triton") has its own label (#33).
    expect(await page.locator("h1").textContent()).toBe("Nereid");
    expect(await page.locator(".sub").textContent()).toMatch(/^server id triton · protocol 2\.\d+\.\d+ · /);
  });

  it("shows the request rate rise under load and fall back to zero after it", async () => {
    await until(async () => (await cell("simple", "rate").textContent()) === "0.0", 30_000);
    const stop = load(4);
    try {
      await until(async () => Number(await cell("simple", "rate").textContent()) > 0, 30_000);
      // Let the five-minute sparklines fill a little before the screenshot.
      await until(async () => {
        const d = (await (await fetch(`${server.url}/nereid/status.json`)).json()) as { models: { name: string; history: { rate: number }[] }[] };
        return d.models.find((m) => m.name === "simple")!.history.filter((p) => p.rate > 0).length >= 12;
      }, 60_000);
      await page.waitForTimeout(1100); // one more page refresh with the latest point
      const shot =
        process.env.NEREID_UPDATE_SCREENSHOT === "1" ? join(ROOT, "docs", "status-page.png") : join(tmpdir(), `nereid-status-page-${process.pid}.png`);
      await page.screenshot({ path: shot });
      expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
      expect(await cell("simple_identity", "rate").textContent()).toBe("0.0");
    } finally {
      await stop();
    }
    await until(async () => (await cell("simple", "rate").textContent()) === "0.0", 30_000);
    // Once idle, the page's success count is the statistics extension's.
    const stats = (await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as {
      model_stats: { inference_stats: { success: { count: number } } }[];
    };
    const success = stats.model_stats[0]!.inference_stats.success.count;
    expect(success).toBeGreaterThan(0);
    await until(async () => (await cell("simple", "success").textContent()) === String(success), 10_000);
    expect(await cell("simple", "failures").textContent()).toBe("0");
    expect(await cell("simple", "pending").textContent()).toBe("0");
  });
});
