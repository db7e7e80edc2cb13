import type Database from "better-sqlite3";

/** How many statements a {@link StatementCache} keeps before it drops the least recently used. */
export const StatementCacheSize = 128;

/**
 * Prepared statements by their SQL, each compiled once. A statement compiled for every call
 * costs the database thread SQLite's parse and plan and a new native statement object, which
 * stays allocated until the thread's heap is next collected. Measured on the state database,
 * one text-only turn's calls (bench/storage.bench.ts, `state_turns_cpu_worker`, 16 chats):
 * about a fifth less CPU per turn (bench/README.md, "Issue 31, target 3: the database threads'
 * own work"); a bare `get` costs about 8 µs with a statement compiled for it and 1.5 µs with
 * one kept.
 *
 * Bounded: SQL built at run time (the usage periods' columns, a task count's condition) could
 * otherwise grow it without end. A `Map` in use order rather than `lru-cache` (which the web
 * package uses): the database threads load only better-sqlite3 and the packages' small
 * subpaths (worker-imports.test.ts), and this is all of the cache they need. A statement taken from it must not be switched to another mode (`pluck()`,
 * `raw()`, `expand()`, `bind()`): the next caller of the same SQL would get that mode.
 */
export class StatementCache {
  readonly #prepare: (sql: string) => Database.Statement;
  readonly #size: number;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(prepare: (sql: string) => Database.Statement, size = StatementCacheSize) {
    this.#prepare = prepare;
    this.#size = size;
  }

  /** The statement of `sql`, compiled on first use. */
  get<P extends unknown[] | object = unknown[], R = unknown>(
    sql: string,
  ): Database.Statement<P, R> {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#prepare(sql);
      if (this.#statements.size >= this.#size) {
        const oldest = this.#statements.keys().next().value as string;
        this.#statements.delete(oldest);
      }
    } else {
      // Most recently used last: the first key is the one to drop.
      this.#statements.delete(sql);
    }
    this.#statements.set(sql, statement);
    return statement as unknown as Database.Statement<P, R>;
  }

  /** How many statements are kept (for the tests). */
  get size(): number {
    return this.#statements.size;
  }
}
