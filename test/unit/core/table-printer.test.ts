/**
 * The log's tables in the shape of Triton's TablePrinter (L-08: the model summary
 * Triton logs at start-up).
 */
import { describe, expect, it } from "vitest";
import { printTable } from "../../../src/core/table-printer.ts";
import { modelSummary, modelTableRows } from "../../../src/repository/model-summary.ts";

describe("printTable", () => {
  it("sizes each column to its widest cell or header", () => {
    expect(
      printTable(
        ["Model", "Version", "Status"],
        [
          ["simple", "1", "READY"],
          ["simple_identity", "12", "READY"],
        ],
      ),
    ).toBe(
      [
        "",
        "+-----------------+---------+--------+",
        "| Model           | Version | Status |",
        "+-----------------+---------+--------+",
        "| simple          | 1       | READY  |",
        "| simple_identity | 12      | READY  |",
        "+-----------------+---------+--------+",
        "",
      ].join("\n"),
    );
  });

  it("prints only the header between dividers when there are no rows", () => {
    expect(printTable(["Model", "Version", "Status"], [])).toBe(
      "\n+-------+---------+--------+\n| Model | Version | Status |\n+-------+---------+--------+\n+-------+---------+--------+\n",
    );
  });

  it("shares a narrow width fairly and wraps the cells that do not fit", () => {
    // 40 columns: 30 for cells; Model needs 6 and Version 7 of their 10, Status gets the rest (17).
    expect(printTable(["Model", "Version", "Status"], [["simple", "1", "UNAVAILABLE: something long"]], 40)).toBe(
      [
        "",
        "+--------+---------+-------------------+",
        "| Model  | Version | Status            |",
        "+--------+---------+-------------------+",
        "| simple | 1       | UNAVAILABLE: some |",
        "|        |         | thing long        |",
        "+--------+---------+-------------------+",
        "",
      ].join("\n"),
    );
  });
});

describe("model summary", () => {
  it("has a row per version with the state and reason, and leaves out models never tried", () => {
    const rows = modelTableRows([
      { name: "a", version: "1", state: "READY" },
      { name: "a", version: "2", state: "UNAVAILABLE", reason: "unloaded" },
      { name: "b", state: "UNAVAILABLE", reason: "bad config" },
      { name: "c" },
    ]);
    expect(rows).toEqual([
      ["a", "1", "READY"],
      ["a", "2", "UNAVAILABLE: unloaded"],
      ["b", "-", "UNAVAILABLE: bad config"],
    ]);
    expect(modelSummary([{ name: "a", version: "1", state: "READY" }]).join("\n")).toBe(
      "\n+-------+---------+--------+\n| Model | Version | Status |\n+-------+---------+--------+\n| a     | 1       | READY  |\n+-------+---------+--------+\n",
    );
  });

  it("escapes control characters in names and reasons, so that a cell cannot add a log line (#29)", () => {
    expect(modelTableRows([{ name: "a\nE1122 forged", version: "1", state: "UNAVAILABLE", reason: "bad\r\n\u001b[31mred" }])).toEqual([
      ["a\\nE1122 forged", "1", "UNAVAILABLE: bad\\r\\n\\x1b[31mred"],
    ]);
  });
});
