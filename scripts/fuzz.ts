/**
 * The fuzz suite of test/fuzz for longer than CI runs it (#14): seeded generators and
 * mutators for HTTP infer requests and routes, explicit-mode loads with config overrides,
 * gRPC messages, config.pbtxt, generate bodies and the SageMaker and Vertex AI routes, against
 * the compiled binary (restarted if it dies), plus the corpus of known cases; in process,
 * redis cache entries and object-store listing pages (#29: test/fuzz/store-run.ts). Prints a
 * summary and writes each finding (the input bytes and what went wrong) under --out.
 *
 *   npm run build && bun scripts/fuzz.ts [--seconds=60] [--seed=1] [--target=all|http|load|grpc|pbtxt|generate|sagemaker|vertex|cache-entry|listing|corpus] [--out=fuzz-findings]
 *   bun scripts/fuzz.ts --target=http --seed=7 --case=1234     # replays one case
 *
 * --seconds is per target. A finding's folder is <target>-<seed>-<case>: input.bin and finding.txt
 * (the first 20 of each kind; the summary counts all).
 */
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  fuzzHttp,
  fuzzLoad,
  fuzzGrpc,
  fuzzPbtxt,
  fuzzGenerate,
  fuzzSagemaker,
  fuzzVertex,
  summary,
  TARGETS,
  type Finding,
  type Target,
  type TargetStats,
  type RunOptions,
} from "../test/fuzz/run.ts";
import { fuzzCacheEntry, fuzzListing } from "../test/fuzz/store-run.ts";
import { startFuzzFixture, startFuzzServer, type FuzzFixture } from "../test/fuzz/servers.ts";
import { CORPUS } from "../test/fuzz/corpus.ts";
import { isKnownOpen } from "../test/fuzz/known-open.ts";
import { BINARY } from "../test/helpers/server-process.ts";

const root = resolve(import.meta.dirname, "..");
function arg(name: string): string | undefined {
  const i = process.argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return undefined;
  const a = process.argv[i]!;
  return a.includes("=") ? a.slice(a.indexOf("=") + 1) : process.argv[i + 1];
}
const seconds = Number(arg("seconds") ?? 60);
const seed = Number(arg("seed") ?? Date.now() % 1_000_000);
const only = arg("case");
const targetArg = arg("target") ?? "all";
const out = resolve(root, arg("out") ?? "fuzz-findings");
const targets: (Target | "corpus")[] = targetArg === "all" ? [...TARGETS, "corpus"] : targetArg.split(",").map((t) => t.trim() as Target | "corpus");
for (const t of targets) if (t !== "corpus" && !TARGETS.includes(t)) throw new Error(`unknown target '${t}' (all, ${TARGETS.join(", ")}, corpus)`);
if (!Number.isFinite(seconds) || seconds <= 0 || !Number.isInteger(seed)) throw new Error("--seconds must be > 0 and --seed an integer");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");

/** Findings of one kind (known id, or the problem with its numbers blanked) written so far. */
const written = new Map<string, number>();
const WRITE_MAX = 20;
const kindOf = (f: Finding) => f.known ?? f.problem.replace(/\d+/g, "N").slice(0, 120);

function write(f: Finding) {
  const n = (written.get(kindOf(f)) ?? 0) + 1;
  written.set(kindOf(f), n);
  if (n > WRITE_MAX) return; // the summary counts them all
  const dir = join(out, `${f.target}-${f.seed}-${f.index}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "input.bin"), f.input);
  writeFileSync(
    join(dir, "finding.txt"),
    `${f.problem}\n\nknown open: ${f.known ?? "no"}\nrequest: ${f.request}\nanswer: ${f.answer ?? "-"}\nreplay: bun scripts/fuzz.ts --target=${f.target} --seed=${f.seed} --case=${f.index}\n`,
  );
  console.log(
    `  finding ${f.target}#${f.index}${f.known ? ` (known: ${f.known})` : ""}: ${f.problem.slice(0, 200)}${n === WRITE_MAX ? ` (further ones of this kind are counted, not written)` : ""}`,
  );
}

const opts = (target: string): RunOptions => ({
  seed,
  ...(only !== undefined ? { first: Number(only), count: 1 } : { deadline: Date.now() + seconds * 1000 }),
  checkEvery: 50,
  onFinding: write,
  ...(target === "pbtxt" || target === "cache-entry" ? {} : { timeoutMs: 10_000 }),
});

console.log(`fuzz: seed ${seed}, ${only !== undefined ? `case ${only}` : `${seconds} s per target`}, targets ${targets.join(", ")}, findings to ${out}`);
const results: TargetStats[] = [];
let fixture: FuzzFixture | undefined;
const needServer = targets.some((t) => t !== "pbtxt" && t !== "cache-entry" && t !== "listing");
if (needServer) fixture = await startFuzzFixture();
try {
  for (const target of targets) {
    if (target === "corpus") {
      for (const c of CORPUS) {
        const problem = await c
          .run({
            server: fixture!.server,
            scratch: fixture!.scratch,
            base64Model: fixture!.modelBase64,
            startServer: (args) => startFuzzServer([`--model-repository=${fixture!.repoDir}`, ...args]),
          })
          .catch((err: Error) => `threw: ${err.message}`);
        console.log(`corpus ${problem ? "FAIL" : "pass"} ${c.id}${isKnownOpen(c.id) ? " (known open)" : ""}${problem ? `: ${problem.slice(0, 300)}` : ""}`);
        if (!fixture!.server.alive()) await fixture!.server.restart();
      }
      continue;
    }
    console.log(`${target}: running`);
    const o = opts(target);
    const s =
      target === "http"
        ? await fuzzHttp(fixture!.server, o)
        : target === "load"
          ? await fuzzLoad(fixture!.server, { modelBase64: fixture!.modelBase64 }, o)
          : target === "grpc"
            ? await fuzzGrpc(fixture!.server, o)
            : target === "generate"
              ? await fuzzGenerate(fixture!.server, o)
              : target === "sagemaker"
                ? await fuzzSagemaker(fixture!.server, o)
                : target === "vertex"
                  ? await fuzzVertex(fixture!.server, o)
                  : target === "cache-entry"
                    ? fuzzCacheEntry(o)
                    : target === "listing"
                      ? await fuzzListing(o)
                      : fuzzPbtxt(o);
    results.push(s);
    console.log(summary(s));
  }
} finally {
  await fixture?.close();
}

console.log("\nsummary");
for (const s of results) {
  console.log(`  ${summary(s)}`);
  const kinds = new Map<string, number>();
  for (const f of s.findings) {
    const key = f.known ? `[known open] ${f.known}` : kindOf(f);
    kinds.set(key, (kinds.get(key) ?? 0) + 1);
  }
  for (const [k, n] of kinds) console.log(`    ${n}× ${k}`);
}
process.exit(0);
