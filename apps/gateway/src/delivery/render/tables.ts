import type { Tokens } from "marked";
import { plainOf } from "./inline-text.js";

/**
 * A Markdown table the way a chat shows it (docs/formatting.md, "Tables"): chats have no
 * tables, and a table's pipes and dashes are noise on a phone.
 *
 * - `grid`: the columns aligned with spaces, for a monospace block; used when its widest
 *   line fits in `maxGridWidth` characters (a phone shows about that many without wrapping).
 * - `records`: one record per row, its first cell as a title line and the others as
 *   `header: value` lines, records apart by a blank line: readable at any width.
 */
export type FlatTable =
  | { readonly kind: "grid"; readonly text: string }
  | { readonly kind: "records"; readonly records: readonly TableRecord[] };

/** One row of a table shown as a record. */
export interface TableRecord {
  readonly title: string;
  readonly fields: readonly { readonly name: string; readonly value: string }[];
}

/** Cells as plain text, inline Markdown dropped, each on one line. */
function cells(row: readonly Tokens.TableCell[]): string[] {
  return row.map((cell) => plainOf(cell.tokens).replace(/\s+/g, " ").trim());
}

const width = (text: string): number => [...text].length;

/** Flattens `table` (see {@link FlatTable}). */
export function flattenTable(table: Tokens.Table, maxGridWidth: number): FlatTable {
  const header = cells(table.header);
  const rows = table.rows.map(cells);
  const columns = header.map((_, column) =>
    Math.max(width(header[column] ?? ""), ...rows.map((row) => width(row[column] ?? ""))),
  );
  const gridWidth = columns.reduce((sum, w) => sum + w, 0) + 2 * Math.max(0, columns.length - 1);
  if (gridWidth <= maxGridWidth) {
    const line = (row: readonly string[]) =>
      columns
        .map((w, column) => {
          const cell = row[column] ?? "";
          return table.align[column] === "right"
            ? " ".repeat(w - width(cell)) + cell
            : cell + " ".repeat(w - width(cell));
        })
        .join("  ")
        .trimEnd();
    const rule = columns.map((w) => "─".repeat(w)).join("  ");
    return { kind: "grid", text: [line(header), rule, ...rows.map(line)].join("\n") };
  }
  return {
    kind: "records",
    records: rows.map((row) => ({
      title: row[0] ?? "",
      fields: header
        .slice(1)
        .map((name, index) => ({ name, value: row[index + 1] ?? "" }))
        .filter((field) => field.value !== ""),
    })),
  };
}
