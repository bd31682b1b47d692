/**
 * @module The model table Triton logs once start-up loading ends
 * (`InferenceServer::PrintBackendAndModelSummary`): Model / Version / Status, one row
 * per version the server tried to load, sorted by name then version; the status is
 * the version's state, followed by `: <reason>` when it has one.
 */
import { printTable } from "../core/table-printer.ts";
import { escapeLogText } from "../core/logger.ts";
import type { IndexEntry } from "./manager.ts";

/**
 * The table's rows from the repository index: models never tried (explicit mode) are left
 * out, as Triton does. Cells are escaped for the log (a reason may quote a client's text).
 */
export function modelTableRows(index: readonly IndexEntry[]): string[][] {
  return rawRows(index).map((r) => r.map(escapeLogText));
}

function rawRows(index: readonly IndexEntry[]): string[][] {
  const rows: string[][] = [];
  for (const e of index) {
    if (e.version === undefined) {
      // A model that failed before any version was made (a config it cannot read).
      if (e.state) rows.push([e.name, "-", `${e.state}${e.reason ? `: ${e.reason}` : ""}`]);
      continue;
    }
    rows.push([e.name, e.version, `${e.state ?? "UNKNOWN"}${e.reason ? `: ${e.reason}` : ""}`]);
  }
  return rows;
}

/** The table as the lines of one log message (the first is empty: it starts with a newline, as Triton's does). */
export function modelSummary(index: readonly IndexEntry[]): string[] {
  return printTable(["Model", "Version", "Status"], modelTableRows(index)).split("\n");
}
