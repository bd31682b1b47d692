/**
 * @module Packages the server carries for TypeScript models: under Bun, `import "pngjs"`,
 * `import "jpeg-js"` and `import "@huggingface/tokenizers"` (or `require`) in a model get
 * the server's own copies, so an image model or a text-generation model (tokenizer.json)
 * runs from the compiled binary with no node_modules beside it (the
 * binary's runtime does not resolve bare package names in a module it loads at run
 * time). Elsewhere (Node, Deno, `bun src/main.ts` in the checkout) the names resolve
 * from node_modules as usual. Registered once, before the first model is imported; each
 * package is evaluated when a model first imports it, not at the server's start (#30:
 * evaluating the three took about a tenth of the binary's module start-up).
 */

/** The names a model may import without a node_modules of its own (docs/models/typescript.md). */
export const EMBEDDED_PACKAGES = ["pngjs", "jpeg-js", "@huggingface/tokenizers"] as const;

interface BunPluginBuilder {
  module(specifier: string, callback: () => { exports: Record<string, unknown>; loader: "object" }): void;
}
declare const Bun: { plugin(p: { name: string; setup(build: BunPluginBuilder): void }): void } | undefined;

/** A CommonJS package's namespace as both `import { x }`, `import pkg` and `require` expect it. */
function exportsOf(ns: Record<string, unknown>): Record<string, unknown> {
  const cjs = (ns.default ?? ns) as Record<string, unknown>;
  return { ...cjs, ...ns, default: cjs };
}

let registered = false;

export function registerEmbeddedPackages(): void {
  if (registered || typeof Bun === "undefined" || typeof Bun.plugin !== "function") return;
  registered = true;
  // Literal require() calls, so that the bundler embeds each package (and evaluates it on the first call).
  const packages: Record<(typeof EMBEDDED_PACKAGES)[number], () => Record<string, unknown>> = {
    pngjs: () => require("pngjs"),
    "jpeg-js": () => require("jpeg-js"),
    "@huggingface/tokenizers": () => require("@huggingface/tokenizers"),
  };
  Bun.plugin({
    name: "nereid-embedded-packages",
    setup(build) {
      for (const [name, load] of Object.entries(packages)) build.module(name, () => ({ exports: exportsOf(load()), loader: "object" }));
    },
  });
}
