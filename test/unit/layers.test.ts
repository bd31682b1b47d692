/**
 * Layers: imports run one way, from the entry point down. A module may import its own
 * layer and any layer below it, never one above. Type-only imports count too.
 *
 *   entry         src/main.ts, src/options.ts, src/devices.ts, src/health-check.ts: options, signals, CLI subcommands;
 *                 src/startup/: building the core, starting the listeners, graceful shutdown;
 *                 src/embedded.ts, src/index.ts: the in-process API and the package entry;
 *                 src/perf/: `nereid perf`, the perf_analyzer equivalent (a client)
 *   frontends     src/frontends/: HTTP and gRPC adapters (parse, call the server, serialize)
 *   metrics       src/metrics/: Prometheus families, CPU and GPU sampling
 *   server        src/server/: the data plane (inferAsync, shared memory, trace, classification)
 *   repository    src/repository/: manager (the facade), model index (lookups), lifecycle (locks, load pool, retries, swap),
 *                 dependency graph (ensemble steps), polling, model loader, ModelVersion
 *   scheduler     src/scheduler/: default, dynamic batch, sequence batch, ensemble; createScheduler
 *   backends      src/backends/: the Backend seam and the ONNX Runtime, TensorRT, OpenVINO backends
 *   cache         src/cache/: the response cache and its key
 *   ffi           ffi/: koffi bindings, the only place koffi is imported
 *   model-config  src/model-config/: config.pbtxt parsing, JSON form, normalization, validation
 *   core          src/core/: value types (tensors, requests, ModelConfig), errors, request validation, stats, logging
 *
 * ARCHITECTURE.md lists the same order.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** Highest first; a path belongs to the first layer with a matching prefix. */
const LAYERS: readonly (readonly [name: string, prefixes: readonly string[]])[] = [
  ["entry", ["src/main.ts", "src/startup/", "src/options.ts", "src/devices.ts", "src/health-check.ts", "src/embedded.ts", "src/index.ts", "src/perf/"]],
  ["frontends", ["src/frontends/"]],
  ["metrics", ["src/metrics/"]],
  ["server", ["src/server/"]],
  ["repository", ["src/repository/"]],
  ["scheduler", ["src/scheduler/"]],
  ["backends", ["src/backends/"]],
  ["cache", ["src/cache/"]],
  ["ffi", ["ffi/"]],
  ["model-config", ["src/model-config/"]],
  ["core", ["src/core/"]],
];

/** `import … from "x"`, `export … from "x"` (type-only ones too), `import "x"` and `import("x")`. */
const IMPORT = /\b(?:import|export)\s+(?:type\s+)?[\w$\s{},*]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|\bimport\s+["']([^"']+)["']/g;

function rank(path: string): number {
  return LAYERS.findIndex(([, prefixes]) => prefixes.some((p) => (p.endsWith("/") ? path.startsWith(p) : path === p)));
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f).split("\\").join("/"))
    .sort();
}

function specifiers(text: string): string[] {
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Relative imports of one file, as repository paths. */
function importsOf(file: string): string[] {
  return specifiers(readFileSync(join(ROOT, file), "utf8"))
    .filter((spec) => spec.startsWith("."))
    .map((spec) =>
      relative(ROOT, resolve(ROOT, dirname(file), spec))
        .split("\\")
        .join("/"),
    );
}

const FILES = [...sources("src"), ...sources("ffi")];

/**
 * Exported `set*` functions that assign a variable of their module (module-level state set
 * from outside), as "file setName". `export function setX(...) {` up to the `}` that closes
 * it at the start of a line, and `export const setX = (...) =>` up to the next blank line.
 */
function moduleSetters(file: string, text: string): string[] {
  const lets = [...text.matchAll(/^(?:export\s+)?let\s+([\w$]+)/gm)].map((m) => m[1]!);
  const found: string[] = [];
  for (const m of text.matchAll(/^export\s+(?:(?:async\s+)?function\s+|const\s+)(set[A-Z][\w$]*)/gm)) {
    const start = m.index + m[0].length;
    const end = text.indexOf(m[0].includes("function") ? "\n}" : "\n\n", start);
    const body = text.slice(start, end < 0 ? undefined : end);
    const assigns = lets.some((v) => new RegExp(`(?<![\\w$.])${v.replace("$", "\\$")}\\s*(?:=(?!=)|\\+=|-=|\\?\\?=|\\|\\|=|&&=|\\+\\+|--)`).test(body));
    if (assigns) found.push(`${file} ${m[1]}`);
  }
  return found;
}

/** Module-level setters the compiled entry and the CLI need before anything else runs: where koffi's and ONNX Runtime's native files are, and the log file. */
const ALLOWED_SETTERS = ["ffi/load.ts setKoffiNativePath", "ffi/onnxruntime/library.ts setEmbeddedOrtLibrary", "src/core/logger.ts setLogFile"].sort();

describe("layers", () => {
  it("reads every form of import", () => {
    const text = [
      'import { a } from "./a.ts";',
      "import type { B } from '../b.ts';",
      'import {\n  c,\n  type D,\n} from "./c.ts";',
      'import * as e from "./e.ts";',
      'export { f } from "./f.ts";',
      'export type { G } from "./g.ts";',
      'export * from "./h.ts";',
      'import "./i.ts";',
      'const j = await import("./j.ts");',
      'const k = "import x from nowhere";',
    ].join("\n");
    expect(specifiers(text)).toEqual(["./a.ts", "../b.ts", "./c.ts", "./e.ts", "./f.ts", "./g.ts", "./h.ts", "./i.ts", "./j.ts"]);
  });

  it("finds the sources and their imports", () => {
    expect(FILES.length).toBeGreaterThan(50);
    expect(importsOf("src/main.ts").length).toBeGreaterThan(5);
  });

  it("puts every source file in a layer", () => {
    expect(FILES.filter((f) => rank(f) < 0)).toEqual([]);
  });

  it("has no module importing a layer above its own", () => {
    const upward: string[] = [];
    for (const file of FILES) {
      const own = rank(file);
      for (const target of importsOf(file)) {
        const theirs = rank(target);
        if (theirs >= 0 && theirs < own) upward.push(`${file} (${LAYERS[own]![0]}) → ${target} (${LAYERS[theirs]![0]})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("keeps the frontends off the repository: they reach models through the server's resolve (#31)", () => {
    const reaching = FILES.filter((f) => f.startsWith("src/frontends/")).flatMap((f) =>
      importsOf(f)
        .filter((t) => t.startsWith("src/repository/"))
        .map((t) => `${f} → ${t}`),
    );
    expect(reaching).toEqual([]);
  });

  it("has no cycle between files, type-only imports included (#31)", () => {
    const graph = new Map(FILES.map((f) => [f, importsOf(f).filter((t) => FILES.includes(t))]));
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const visit = (f: string) => {
      state.set(f, "open");
      path.push(f);
      for (const t of graph.get(f) ?? []) {
        if (state.get(t) === "open") cycles.push([...path.slice(path.indexOf(t)), t].join(" → "));
        else if (!state.has(t)) visit(t);
      }
      path.pop();
      state.set(f, "done");
    };
    for (const f of FILES) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it("reads module-level setters", () => {
    const text = [
      "let level = 0;",
      "export let count = 0;",
      "export function setLevel(v: number): void {",
      "  const level2 = v;",
      "  level = level2;",
      "}",
      "export function setOther(v: number): void {",
      "  const x = { level: v };",
      "  x.level = v;",
      "  if (level === v) return;",
      "}",
      "export const setCount = (n: number) => {",
      "  count += n;",
      "};",
      "",
      "export function settle(): void {",
      "  level = 1;",
      "}",
    ].join("\n");
    expect(moduleSetters("f.ts", text)).toEqual(["f.ts setLevel", "f.ts setCount"]);
  });

  it("has no module-level setters but the ones the compiled entry needs: the server's parts come in at construction (#31)", () => {
    expect(FILES.flatMap((f) => moduleSetters(f, readFileSync(join(ROOT, f), "utf8"))).sort()).toEqual(ALLOWED_SETTERS);
  });

  it("assigns no field of the InferenceServer from outside it: what it is built from goes to its constructor (#31)", () => {
    // In the modules that know the InferenceServer, `server` is one.
    const texts = FILES.map((f) => [f, readFileSync(join(ROOT, f), "utf8")] as const).filter(([, text]) => text.includes("InferenceServer"));
    expect(texts.length).toBeGreaterThan(10);
    const assignments = texts.flatMap(([f, text]) =>
      text.split("\n").flatMap((line, i) => (/\bserver\.[\w$.]+\s*(?:=(?!=)|\+=|-=|\?\?=)/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(assignments).toEqual([]);
  });
});
