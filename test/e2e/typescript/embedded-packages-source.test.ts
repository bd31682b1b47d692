/**
 * The packages carried for TypeScript models (`pngjs`, `jpeg-js`, `@huggingface/tokenizers`)
 * when the server runs from the checkout under Bun (`bun src/main.ts`): a model outside the
 * checkout imports them by their bare names. Until 2026-11-27 the lazy registration made
 * each a namespace with no exports there (the plugin's require() reached the plugin's own
 * module), so `import { Tokenizer }` failed and tiny_lm did not load from source. The
 * compiled binary's side is covered by binary-alone.test.ts and the tiny_lm tests.
 */
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

describe("embedded packages from the checkout under Bun", () => {
  it("a model outside the checkout imports each by its bare name, named and default exports alike", () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-embedded-"));
    try {
      writeFileSync(
        join(dir, "model.ts"),
        [
          'import { Tokenizer } from "@huggingface/tokenizers";',
          'import { PNG } from "pngjs";',
          'import jpeg from "jpeg-js";',
          "export const kinds = [typeof Tokenizer, typeof PNG, typeof jpeg.decode];",
        ].join("\n"),
      );
      writeFileSync(
        join(dir, "run.ts"),
        [
          `import { registerEmbeddedPackages } from ${JSON.stringify(join(ROOT, "src/backends/typescript/embedded-packages.ts"))};`,
          "registerEmbeddedPackages();",
          `const m = await import(${JSON.stringify(join(dir, "model.ts"))});`,
          "console.log(JSON.stringify(m.kinds));",
        ].join("\n"),
      );
      const r = spawnSync(BUN, [join(dir, "run.ts")], { cwd: dir, encoding: "utf8" });
      expect(r.stderr).toBe("");
      expect(r.stdout.trim()).toBe('["function","function","function"]');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
