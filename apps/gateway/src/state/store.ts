import { randomUUID } from "node:crypto";
import { chmodSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { StateSchemaError, StateStoreError } from "./errors.js";
import { migrate } from "./schema.js";
import { type ChatMessage, isChatMessage } from "./types.js";

/** Options of {@link StateStore.open}. */
export interface StateStoreOptions {
  /** Clock for the `created_at`/`updated_at` columns. Default `Date.now`. */
  readonly now?: () => number;
  /** How long a writer waits for another process's lock. Default 5000. */
  readonly busyTimeoutMs?: number;
}

const Defaults = {
  now: Date.now,
  busyTimeoutMs: 5_000,
} as const satisfies Required<StateStoreOptions>;

/** The state database of a profile home: `<profileHome>/state.db` (docs/sandbox.md). */
export function stateDbPath(profileHome: string): string {
  return join(profileHome, "state.db");
}

interface SessionRow {
  session_id: string;
}

interface MessageRow {
  id: number;
  body: string;
}

/**
 * Per-profile state: the session id behind each session key, and the conversation history
 * of each session id. One SQLite file in WAL mode (readers never block the writer; several
 * gateway processes of one profile may share it). Synchronous by design: every call is a
 * few microseconds of local I/O, and better-sqlite3 transactions are only atomic when
 * nothing awaits inside them.
 */
export class StateStore {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #now: () => number;

  private constructor(path: string, db: Database.Database, now: () => number) {
    this.path = path;
    this.#db = db;
    this.#now = now;
  }

  /**
   * Opens (creating it and its parent directories if needed) and migrates the database at
   * `path`. The file is made owner-only (0600): it holds conversations.
   */
  static open(path: string, options: StateStoreOptions = {}): StateStore {
    const settings = { ...Defaults, ...options };
    let db: Database.Database | undefined;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      db = new Database(path);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(settings.busyTimeoutMs))}`);
      migrate(db);
      chmodSync(path, 0o600);
      return new StateStore(path, db, settings.now);
    } catch (error) {
      db?.close();
      if (error instanceof StateSchemaError) throw error;
      throw new StateStoreError("open", path, describe(error), { cause: error });
    }
  }

  /** The session id bound to `sessionKey`; a new random one is created and stored if absent. */
  currentSessionId(sessionKey: string): string {
    return this.#run("session", () =>
      this.#db
        .transaction(() => {
          const row = this.#db
            .prepare<[string], SessionRow>("SELECT session_id FROM sessions WHERE session_key = ?")
            .get(sessionKey);
          if (row) return row.session_id;
          const id = randomUUID();
          const now = this.#now();
          this.#db
            .prepare(
              "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
            )
            .run(sessionKey, id, now, now);
          return id;
        })
        .immediate(),
    );
  }

  /**
   * `/reset`: binds a new random session id to `sessionKey` and deletes the history of the
   * old one, in one transaction. Returns the new id.
   */
  rotateSessionId(sessionKey: string): string {
    return this.#run("rotate", () =>
      this.#db
        .transaction(() => {
          const old = this.#db
            .prepare<[string], SessionRow>("SELECT session_id FROM sessions WHERE session_key = ?")
            .get(sessionKey);
          if (old)
            this.#db.prepare("DELETE FROM messages WHERE session_id = ?").run(old.session_id);
          const id = randomUUID();
          const now = this.#now();
          this.#db
            .prepare(
              `INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id,
                                                      updated_at = excluded.updated_at`,
            )
            .run(sessionKey, id, now, now);
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
  appendHistory(sessionId: string, messages: readonly ChatMessage[]): void {
    this.#run("append", () => {
      const insert = this.#db.prepare(
        "INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, ?)",
      );
      this.#db
        .transaction(() => {
          const now = this.#now();
          messages.forEach((message: unknown, index) => {
            if (!isChatMessage(message)) {
              throw new StateStoreError(
                "append",
                this.path,
                `message ${index} is not a chat message`,
              );
            }
            insert.run(sessionId, message.role, JSON.stringify(message), now);
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

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
