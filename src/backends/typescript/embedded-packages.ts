/**
 * @module Packages the server carries for TypeScript models: under Bun, `import "pngjs"`,
 * `import "jpeg-js"` and `import "@huggingface/tokenizers"` (or `require`) in a model get
 * the server's own copies, so an image model or a text-generation model (tokenizer.json)
 * runs from the compiled binary with no node_modules beside it (the
 * binary's runtime does not resolve bare package names in a module it loads at run
 * time). Under `bun src/main.ts` in the checkout the same names come from its
 * node_modules, for a model anywhere; under Node and Deno they resolve as usual.
 * Registered once, before the first model is imported; each package is evaluated when a
 * model first imports it, not at the server's start (#30: evaluating the three took
 * about a tenth of the binary's module start-up).
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

/**
 * Defined true by the build (scripts/build.ts): the literal require() calls below were
 * bundled. Run from the checkout (`bun src/main.ts`) a require() of a registered name, even
 * through require.resolve, reaches the plugin's own module being made (an empty namespace),
 * so there each package's path is resolved before the plugin is registered and required by
 * that path when a model first imports it.
 */
declare const NEREID_COMPILED: boolean | undefined;
const BUNDLED = typeof NEREID_COMPILED !== "undefined" && NEREID_COMPILED;

export function registerEmbeddedPackages(): void {
  if (registered || typeof Bun === "undefined" || typeof Bun.plugin !== "function") return;
  registered = true;
  // From the checkout, a name its node_modules lacks is not registered: a model's import of it then fails as any missing package does.
  const paths = BUNDLED ? undefined : new Map<string, string>(EMBEDDED_PACKAGES.flatMap((name) => resolved(name)));
  // Literal require() calls, so that the bundler embeds each package (and evaluates it on the first call).
  const packages: Record<(typeof EMBEDDED_PACKAGES)[number], () => Record<string, unknown>> = {
    pngjs: () => require("pngjs"),
    "jpeg-js": () => require("jpeg-js"),
    "@huggingface/tokenizers": () => require("@huggingface/tokenizers"),
  };
  Bun.plugin({
    name: "nereid-embedded-packages",
    setup(build) {
      for (const [name, bundled] of Object.entries(packages)) {
        const path = paths?.get(name);
        if (paths && !path) continue;
        const load = path ? () => require(path) as Record<string, unknown> : bundled;
        build.module(name, () => ({ exports: exportsOf(load()), loader: "object" }));
      }
    },
  });
}

function resolved(name: string): [string, string][] {
  try {
    return [[name, require.resolve(name)]];
  } catch {
    return [];
  }
}
