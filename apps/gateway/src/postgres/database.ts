import { createRequire } from "node:module";
import { MediagateError } from "@mediagate/io/mediagate-error";
import type pg from "pg";
import { Defaults } from "../defaults.js";
import { PostgresStoreError, postgresWhere, ReadOnlyCode } from "./errors.js";
import { storableParams } from "./stored-text.js";

/** How the pool of the PostgreSQL store is made (from `store:` in the config, docs/store.md). */
export interface PostgresSettings {
  /** `postgres://user:password@host:port/database`; never logged (see {@link postgresWhere}). */
  readonly url: string;
  /** Connections of the pool. Default `Defaults.postgres.maxConnections`. */
  readonly maxConnections?: number;
  /** Server-side limit of one statement. Default `Defaults.postgres.statementTimeoutMs`. */
  readonly statementTimeoutMs?: number;
  /** Client-side limit of one call in all. Default `Defaults.postgres.queryTimeoutMs`. */
  readonly queryTimeoutMs?: number;
  /** Limit of making a connection. Default `Defaults.postgres.connectTimeoutMs`. */
  readonly connectTimeoutMs?: number;
  /** An idle connection is closed after this long. Default `Defaults.postgres.idleTimeoutMs`. */
  readonly idleTimeoutMs?: number;
  /** `application_name` the server shows for the connections (`pg_stat_activity`). */
  readonly applicationName?: string;
}

/** What a query or a transaction's step runs on: the pool, or the one connection of a transaction. */
export interface Queryable {
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<pg.QueryResult<Row>>;
}

/**
 * node-postgres, loaded by the first {@link PostgresDatabase}: a gateway on SQLite, and every
 * CLI command that opens no PostgreSQL store, never loads it (60–90 ms of a start, measured
 * with `import("pg")` on the 2-core dev machine). It is CommonJS, so a plain `require` loads
 * it synchronously, the same module `import pg from "pg"` gives.
 */
let pgModule: typeof pg | undefined;
function nodePostgres(): typeof pg {
  pgModule ??= createRequire(import.meta.url)("pg") as typeof pg;
  return pgModule;
}

/** SQLSTATEs after which a transaction is run again: serialization failure, deadlock. */
const RetryableCodes = new Set(["40001", "40P01"]);
/** How many times a transaction that lost a serialization race or a deadlock is run. */
const TransactionAttempts = 3;

/**
 * The PostgreSQL server of the store: a bounded pool of node-postgres connections. Every call
 * is asynchronous network I/O (the event loop never waits on the server, unlike a synchronous
 * SQLite call, which is why the SQLite store runs in worker threads and this one does not);
 * every query has a server-side and a client-side timeout; a connection the server dropped is
 * discarded and the next call makes a new one, so the store reconnects by itself once the
 * server is back. Every string parameter has its NUL characters replaced
 * (`storableParams`: `text` refuses them; docs/store.md). Every failure rejects with
 * {@link PostgresStoreError}.
 */
export class PostgresDatabase {
  /** `host:port/database`, for messages and logs. */
  readonly where: string;
  readonly #pool: pg.Pool;
  readonly #sessionConfig: pg.ClientConfig;
  #closed: Promise<void> | undefined;

  constructor(settings: PostgresSettings) {
    const limits = Defaults.postgres;
    this.where = postgresWhere(settings.url);
    this.#sessionConfig = {
      connectionString: settings.url,
      statement_timeout: settings.statementTimeoutMs ?? limits.statementTimeoutMs,
      query_timeout: settings.queryTimeoutMs ?? limits.queryTimeoutMs,
      connectionTimeoutMillis: settings.connectTimeoutMs ?? limits.connectTimeoutMs,
      application_name: settings.applicationName ?? "mediagate",
    };
    this.#pool = new (nodePostgres().Pool)({
      ...this.#sessionConfig,
      max: settings.maxConnections ?? limits.maxConnections,
      idleTimeoutMillis: settings.idleTimeoutMs ?? limits.idleTimeoutMs,
    });
    // An idle connection the server closed (a restart) emits here; without a listener the
    // process would die. The pool has already discarded it; the next call makes a new one.
    this.#pool.on("error", () => {});
  }

  /** Runs one statement on any connection of the pool. */
  async query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    operation: string,
    sql: string,
    params: readonly unknown[] = [],
  ): Promise<pg.QueryResult<Row>> {
    try {
      return await this.#pool.query<Row>(sql, storableParams(params) as unknown[]);
    } catch (error) {
      throw new PostgresStoreError(operation, this.where, error);
    }
  }

  /**
   * Runs `work` in one transaction on one connection: committed when it resolves, rolled back
   * when it throws. Run again from the start (up to three times in all) when the server
   * reports a serialization failure or a deadlock, so `work` must not have effects outside the
   * database. A connection that failed mid-transaction is discarded, not reused.
   */
  async transaction<T>(operation: string, work: (tx: Queryable) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.#pool.connect();
      } catch (error) {
        throw new PostgresStoreError(operation, this.where, error);
      }
      let broken: Error | undefined;
      // A connection that dies mid-transaction also emits "error"; the failed query reports
      // it, and an unheard event would end the process.
      const heard = (error: Error) => {
        broken = error;
      };
      client.on("error", heard);
      try {
        await client.query("BEGIN");
        const result = await work({
          query: (sql, params = []) => client.query(sql, storableParams(params) as unknown[]),
        });
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch((rollback: unknown) => {
          broken = rollback instanceof Error ? rollback : new Error(String(rollback));
        });
        const code = (error as { code?: unknown }).code;
        if (
          broken === undefined &&
          typeof code === "string" &&
          RetryableCodes.has(code) &&
          attempt < TransactionAttempts
        ) {
          continue;
        }
        // The store's own refusals (a newer schema, a store error of a nested call) pass as they are.
        if (error instanceof MediagateError) throw error;
        throw new PostgresStoreError(operation, this.where, error);
      } finally {
        client.removeListener("error", heard);
        client.release(broken);
      }
    }
  }

  /**
   * A connection of its own, outside the pool, with the pool's timeouts and TCP keepalive on:
   * for session state that must outlive one call (the journal's owner lock, held for the
   * process's life). The caller ends it; it has an `error` listener already, and whatever
   * the server did to it shows as its `end` event. Rejects with {@link PostgresStoreError}.
   */
  async session(operation: string): Promise<pg.Client> {
    const client = new (nodePostgres().Client)({ ...this.#sessionConfig, keepAlive: true });
    client.on("error", () => {});
    try {
      await client.connect();
      return client;
    } catch (error) {
      await client.end().catch(() => {});
      throw new PostgresStoreError(operation, this.where, error);
    }
  }

  /**
   * One round trip, in milliseconds: for `doctor`, the health endpoint and the probe of kept
   * turns. Rejects as a read-only server does on a write (SQLSTATE 25006, counted as
   * unreachable) when the server takes no writes: a standby, or a primary being failed over,
   * answers `SELECT 1` but keeps no message.
   */
  async ping(now: () => number = performance.now.bind(performance)): Promise<number> {
    const start = now();
    const row = await this.query<{ read_only: string }>(
      "ping",
      "SELECT current_setting('transaction_read_only') AS read_only",
    );
    if (row.rows[0]?.read_only === "on") {
      const refusal = Object.assign(new Error("transaction_read_only is on"), {
        code: ReadOnlyCode,
      });
      throw new PostgresStoreError("ping", this.where, refusal);
    }
    return now() - start;
  }

  /** Closes every connection; calls made afterwards fail. Safe to call twice. */
  close(): Promise<void> {
    this.#closed ??= this.#pool.end().catch(() => undefined);
    return this.#closed;
  }
}
