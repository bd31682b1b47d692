/**
 * The package as a TypeScript program on Node gets it (#33 item 5): `npm pack` (whose
 * prepack generates dist/types), the tarball unpacked into a fresh project's node_modules
 * beside its dependencies, as `npm install nereid-*.tgz` would lay them out. A program
 * written as docs/embedding.md shows type-checks with tsc alone (strict, skipLibCheck off,
 * `types: ["node"]`: no bun-types, no path into the package) under node16 and bundler
 * resolution, and a type error in it is reported; then Bun runs it, serving one request
 * in process and one over a listener.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const run = promisify(execFile);

/** The consumer: docs/embedding.md's calls, with a listener on a free port. */
const CONSUMER = `import { createServer, ServerError, type InferResult, type ModelStatistics } from "nereid";

const nereid = await createServer({ modelRepository: process.argv[2] ?? "model_repository", logInfo: false });
const r: InferResult = await nereid.infer({
  model: "simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: new Int32Array(16).fill(1) },
  ],
});
const sum: Int32Array = r.output("OUTPUT0", "INT32").data;
const stats: ModelStatistics[] = nereid.statistics("simple");
const count: number = stats[0]!.inference_stats.success.count;
await nereid.unload("simple");
let code = "";
try {
  nereid.modelMetadata("simple");
} catch (err) {
  if (err instanceof ServerError) code = err.code;
}
await nereid.load("simple", { config: { max_batch_size: 4 } });
const local = await nereid.fetch("/v2/models/simple/config");
const { http } = await nereid.listen({ http: { port: 0, address: "127.0.0.1" } });
const ready = await fetch(\`\${http}/v2/models/simple/ready\`);
const exit: number = await nereid.stop();
console.log(JSON.stringify({ sum: [...sum], count, code, maxBatch: ((await local.json()) as { max_batch_size: number }).max_batch_size, ready: ready.status, exit }));
`;

/** What tsc must reject, so that a package typed as `any` cannot pass. */
const WRONG = `import { createServer } from "nereid";
const nereid = await createServer({ modelRepository: "m", logInfo: "no" });
await nereid.infer({ model: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1], data: new Float32Array(1) }] });
`;

let dir: string;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "nereid-consumer-"));
  const packed = join(dir, "packed");
  mkdirSync(packed);
  await run("npm", ["pack", "--pack-destination", packed, "--silent"], { cwd: ROOT, timeout: 420_000 });
  const tgz = readdirSync(packed).find((f) => f.endsWith(".tgz"));
  if (!tgz) throw new Error("npm pack made no tarball");
  const modules = join(dir, "node_modules");
  mkdirSync(join(modules, "nereid"), { recursive: true });
  await run("tar", ["-xzf", join(packed, tgz), "-C", join(modules, "nereid"), "--strip-components=1"]);
  // npm would install the package's dependencies beside it; this checkout's copies stand in.
  const pkg = JSON.parse(readFileSync(join(modules, "nereid", "package.json"), "utf8")) as { dependencies: Record<string, string> };
  for (const name of [...Object.keys(pkg.dependencies), "typescript", "@types/node"]) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(join(ROOT, "node_modules", name), join(modules, name), "dir");
  }
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  writeFileSync(join(dir, "main.ts"), CONSUMER);
  writeFileSync(join(dir, "wrong.ts"), WRONG);
  const tsconfig = (module: string, resolution: string, files: string[]) =>
    JSON.stringify({
      compilerOptions: { strict: true, target: "ES2022", module, moduleResolution: resolution, types: ["node"], skipLibCheck: false, noEmit: true },
      files,
    });
  writeFileSync(join(dir, "tsconfig.json"), tsconfig("node16", "node16", ["main.ts"]));
  writeFileSync(join(dir, "tsconfig.bundler.json"), tsconfig("esnext", "bundler", ["main.ts"]));
  writeFileSync(join(dir, "tsconfig.wrong.json"), tsconfig("node16", "node16", ["wrong.ts"]));
  repo = makeRepository(["simple"]);
}, 600_000);

afterAll(() => {
  repo?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** tsc in the consumer project: its exit status and what it printed. */
async function tsc(project: string): Promise<{ status: number; output: string }> {
  try {
    const r = await run(process.execPath, [join(dir, "node_modules", "typescript", "bin", "tsc"), "-p", project], { cwd: dir, timeout: 300_000 });
    return { status: 0, output: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { status: typeof e.code === "number" ? e.code : -1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe("the packed package in a Node TypeScript project (#33 item 5)", () => {
  it("packs generated declarations, named by exports, with no reference to Bun's types", () => {
    const pkg = JSON.parse(readFileSync(join(dir, "node_modules", "nereid", "package.json"), "utf8"));
    expect(pkg.exports["."]).toEqual({ types: "./dist/types/src/index.d.ts", default: "./src/index.ts" });
    expect(pkg.types).toBe("dist/types/src/index.d.ts");
    const entry = readFileSync(join(dir, "node_modules", "nereid", "dist", "types", "src", "index.d.ts"), "utf8");
    expect(entry).toContain("export { createServer, Nereid,");
    expect(entry).not.toMatch(/bun-types|reference types/);
    expect(existsSync(join(dir, "node_modules", "nereid", "dist", "types", "src", "embedded.d.ts"))).toBe(true);
  });

  it("type-checks the program with tsc and @types/node only, under node16 and bundler resolution", async () => {
    expect(await tsc("tsconfig.json")).toEqual({ status: 0, output: "" });
    expect(await tsc("tsconfig.bundler.json")).toEqual({ status: 0, output: "" });
  }, 600_000);

  it("reports a type error against the package's types", async () => {
    const r = await tsc("tsconfig.wrong.json");
    expect(r.status).toBe(2);
    expect(r.output).toContain("wrong.ts(2,59): error TS2322: Type 'string' is not assignable to type 'boolean | undefined'.");
    expect(r.output).toContain("wrong.ts(3,48): error TS2322:");
    expect(r.output).toContain("is not assignable to type 'InferInput'");
  }, 300_000);

  it("runs the same program under Bun, which imports the package's source", async () => {
    const { stdout } = await run(join(ROOT, "node_modules", ".bin", "bun"), ["main.ts", repo.dir], { cwd: dir, timeout: 120_000 });
    expect(JSON.parse(stdout)).toEqual({
      sum: Array.from({ length: 16 }, (_, i) => i + 1),
      count: 1,
      code: "UNAVAILABLE",
      maxBatch: 4,
      ready: 200,
      exit: 0,
    });
  });
});
