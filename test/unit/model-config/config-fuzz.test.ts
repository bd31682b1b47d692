/**
 * #14, C-01/C-02/C-05: config.pbtxt texts and JSON configs from test/fuzz (seeds, schema-written
 * texts, token and value mutations), with a fixed seed, through parsePbtxt → normalize →
 * validate in process. Each returns or throws a ServerError, never anything else, within a
 * second; a config that parses prints back to itself and its JSON reads back.
 */
import { describe, it, expect } from "vitest";
import { fuzzPbtxt, summary } from "../../fuzz/run.ts";

describe("fuzzed model configs (#14)", () => {
  it("8000 config.pbtxt texts and JSON configs: only ServerErrors, fast, and round trips hold", () => {
    const s = fuzzPbtxt({ seed: 20261124, count: 8_000 });
    console.log(summary(s));
    expect(s.findings.map((f) => `case ${f.index}: ${f.problem}\n${new TextDecoder().decode(f.input).slice(0, 2000)}`).join("\n\n")).toBe("");
    // The generators reach every stage: syntax errors, validation errors and valid configs.
    for (const outcome of ["pbtxt syntax", "pbtxt invalid", "pbtxt valid", "json syntax", "json invalid", "json valid"]) {
      expect(s.outcomes.get(outcome) ?? 0).toBeGreaterThan(100);
    }
  });
});
