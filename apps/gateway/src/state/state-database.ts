import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { StateSchemaError, StateStoreError } from "./errors.js";
import { migrate } from "./schema.js";
import { type ChatMessage, isChatMessage } from "./types.js";

/** What the state database is opened with (plain data: it crosses to the worker thread). */
export interface StateDatabaseSettings {
  /** How long a writer waits for another process's lock. */
  readonly busyTimeoutMs: number;
}

interface SessionRow {
  session_id: string;
}

interface MessageRow {
  id: number;
  body: string;
}

/**
 * The synchronous side of the state database, run inside its worker thread (the async
 * `StateStore` in store.ts is what the gateway uses). better-sqlite3 transactions are only
 * atomic when nothing awaits inside them, so each method here is one synchronous unit.
 * Times come from the caller (`nowMs`): the clock stays injectable on the main thread.
 */
export class StateDatabase {
  readonly path: string;
  readonly #db: Database.Database;
  /** The per-message lookup, compiled once. */
  readonly #sessionOf: Database.Statement<[string], SessionRow>;

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.#db = db;
    this.#sessionOf = db.prepare<[string], SessionRow>(
      "SELECT session_id FROM sessions WHERE session_key = ?",
    );
  }

  /**
   * Opens (creating it and its parent directories if needed) and migrates the database at
   * `path`. The file is made owner-only (0600): it holds conversations.
   */
  static open(path: string, settings: StateDatabaseSettings): StateDatabase {
    let db: Database.Database | undefined;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // Created owner-only before SQLite opens it: its -wal and -shm files copy its mode.
      closeSync(openSync(path, "a", 0o600));
      db = new Database(path);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(settings.busyTimeoutMs))}`);
      migrate(db);
      chmodSync(path, 0o600);
      return new StateDatabase(path, db);
    } catch (error) {
      db?.close();
      if (error instanceof StateSchemaError) throw error;
      throw new StateStoreError("open", path, describe(error), { cause: error });
    }
  }

  /**
   * The session id bound to `sessionKey`; a new random one is created and stored if absent.
   * A session that has one (every message but a session's first) is a plain read: no write
   * transaction, so it never waits for another process's writer.
   */
  currentSessionId(sessionKey: string, nowMs: number): string {
    return this.#run("session", () => {
      const known = this.#sessionOf.get(sessionKey);
      if (known !== undefined) return known.session_id;
      return this.#db
        .transaction(() => {
          const row = this.#sessionOf.get(sessionKey);
          if (row) return row.session_id;
          const id = randomUUID();
          this.#db
            .prepare(
              "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
            )
            .run(sessionKey, id, nowMs, nowMs);
          return id;
        })
        .immediate();
    });
  }

  /**
   * `/reset`: binds a new random session id to `sessionKey` and deletes the history of the
   * old one, in one transaction. Returns the new id.
   */
  rotateSessionId(sessionKey: string, nowMs: number): string {
    return this.#run("rotate", () =>
      this.#db
        .transaction(() => {
          const old = this.#db
            .prepare<[string], SessionRow>("SELECT session_id FROM sessions WHERE session_key = ?")
            .get(sessionKey);
          if (old)
            this.#db.prepare("DELETE FROM messages WHERE session_id = ?").run(old.session_id);
          const id = randomUUID();
          this.#db
            .prepare(
              `INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id,
                                                      updated_at = excluded.updated_at`,
            )
            .run(sessionKey, id, nowMs, nowMs);
          return id;
        })
        .immediate(),
    );
  }

  /**
   * The history of `sessionId`, oldest first. With `limit`, only the newest `limit`
   * messages (the cut may fall inside a tool exchange; callers that send history to a
   * model trim it to a turn boundary). Throws {@link StateStoreError} on a corrupt row.
   */
  loadHistory(sessionId: string, limit?: number): ChatMessage[] {
    return this.#run("load", () => {
      const rows =
        limit === undefined
          ? this.#db
              .prepare<[string], MessageRow>(
                "SELECT id, body FROM messages WHERE session_id = ? ORDER BY id",
              )
              .all(sessionId)
          : this.#db
              .prepare<[string, number], MessageRow>(
                `SELECT id, body FROM (SELECT id, body FROM messages WHERE session_id = ?
                 ORDER BY id DESC LIMIT ?) ORDER BY id`,
              )
              .all(sessionId, Math.max(0, Math.trunc(limit)));
      return rows.map((row) => {
        const message: unknown = JSON.parse(row.body);
        if (!isChatMessage(message)) {
          throw new StateStoreError(
            "load",
            this.path,
            `message row ${row.id} is not a chat message`,
          );
        }
        return message;
      });
    });
  }

  /**
   * Appends `messages` to the history of `sessionId` in one transaction: either all of them
   * are stored or, when any is invalid or a write fails, none.
   */
  appendHistory(sessionId: string, messages: readonly ChatMessage[], nowMs: number): void {
    this.#run("append", () => {
      const insert = this.#db.prepare(
        "INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, ?)",
      );
      this.#db
        .transaction(() => {
          messages.forEach((message: unknown, index) => {
            if (!isChatMessage(message)) {
              throw new StateStoreError(
                "append",
                this.path,
                `message ${index} is not a chat message`,
              );
            }
            insert.run(sessionId, message.role, JSON.stringify(message), nowMs);
          });
        })
        .immediate();
    });
  }

  /** Deletes the history of `sessionId` (the session key keeps its id). */
  clearHistory(sessionId: string): void {
    this.#run("clear", () => {
      this.#db.prepare("DELETE FROM messages WHERE session_id = ?").run(sessionId);
    });
  }

  /** Closes the database. Safe to call twice. */
  close(): void {
    if (this.#db.open) this.#db.close();
  }

  #run<T>(operation: string, body: () => T): T {
    try {
      return body();
    } catch (error) {
      if (error instanceof StateStoreError) throw error;
      throw new StateStoreError(operation, this.path, describe(error), { cause: error });
    }
  }
}

/** The worker thread's entry point (see sqlite/database-worker.ts). */
export function openInWorker(path: string, settings: StateDatabaseSettings): StateDatabase {
  return StateDatabase.open(path, settings);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
