import Database from "better-sqlite3";
import { isDamagedCode } from "./damage.js";

/** What the check's connection is opened with (plain data: it crosses to the worker thread). */
export interface IntegritySettings {
  /** How long it waits for another process's lock. */
  readonly busyTimeoutMs: number;
  /** How many problems `quick_check` lists at most. */
  readonly maxProblems: number;
}

/**
 * The worker side of {@link checkIntegrity} (integrity.ts): a read-only connection of its own
 * that runs `PRAGMA quick_check`. Read-only, it writes nothing to a file that may be damaged:
 * no checkpoint, not even when it is the last connection to close.
 */
export class IntegrityDatabase {
  readonly #db: Database.Database;
  readonly #maxProblems: number;

  constructor(path: string, settings: IntegritySettings) {
    this.#db = new Database(path, { readonly: true, fileMustExist: true });
    this.#maxProblems = Math.max(1, Math.trunc(settings.maxProblems));
    this.#db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(settings.busyTimeoutMs))}`);
  }

  /**
   * What `quick_check` found wrong (every b-tree page, record and freelist entry; not the
   * indexes' contents), one line each, empty when the file is sound. A header SQLite cannot
   * read is one problem, SQLite's message; a table the check cannot get past is checked again
   * table by table, so the line names the table.
   */
  check(): string[] {
    try {
      return this.#quickCheck();
    } catch (error) {
      if (!isDamagedError(error)) throw error;
      return this.#tableByTable(error.message);
    }
  }

  #quickCheck(table?: string): string[] {
    const argument = table === undefined ? this.#maxProblems : `"${table.replaceAll('"', '""')}"`;
    const rows = this.#db.pragma(`quick_check(${argument})`, { simple: false }) as {
      quick_check: string;
    }[];
    // One problem a line; the `*** in database main ***` headings name no problem.
    return rows
      .flatMap((row) => row.quick_check.split("\n"))
      .filter((line) => line !== "ok" && !line.startsWith("*** "));
  }

  #tableByTable(whole: string): string[] {
    let tables: string[];
    try {
      tables = this.#db
        .prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .pluck()
        .all();
    } catch (error) {
      if (isDamagedError(error)) return [whole];
      throw error;
    }
    const problems: string[] = [];
    for (const table of tables) {
      try {
        problems.push(...this.#quickCheck(table).map((line) => `table ${table}: ${line}`));
      } catch (error) {
        if (!isDamagedError(error)) throw error;
        problems.push(`table ${table}: ${error.message}`);
      }
      if (problems.length >= this.#maxProblems) break;
    }
    return problems.length === 0 ? [whole] : problems.slice(0, this.#maxProblems);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

function isDamagedError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && isDamagedCode(typeof code === "string" ? code : undefined);
}

/** The worker thread's entry point (see database-worker.ts). */
export function openInWorker(path: string, settings: IntegritySettings): IntegrityDatabase {
  return new IntegrityDatabase(path, settings);
}
