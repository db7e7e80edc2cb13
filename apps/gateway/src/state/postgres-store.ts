import { randomUUID } from "node:crypto";
import { MediagateError } from "@mediagate/io/mediagate-error";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { PostgresStoreError } from "../postgres/errors.js";
import { migratePostgres } from "../postgres/migrate.js";
import { isDiskFull } from "../sqlite/disk-full.js";
import type {
  AddApprovalResult,
  ApprovalRecord,
  ApprovalStatus,
  DecideResult,
} from "./approvals.js";
import { repairedMessage } from "./chat-repair.js";
import {
  type Conversation,
  type ConversationRead,
  type KnownConversation,
  type StoredMessage,
  type SummaryWrite,
  stillHolds,
} from "./conversation.js";
import { type ConversationScope, conversationScope } from "./conversation-cache.js";
import { StateStoreError } from "./errors.js";
import type {
  ApprovalGuard,
  PairingApproveResult,
  PairingLimits,
  PairingList,
  PairingRequester,
  PairingRequestResult,
  PairingRevokeResult,
} from "./pairing.js";
import * as approvals from "./postgres-approvals.js";
import * as pairing from "./postgres-pairing.js";
import { PostgresStateMigrations, StateComponent } from "./postgres-schema.js";
import { postgresTaskStore } from "./postgres-tasks.js";
import * as usage from "./postgres-usage.js";
import type { Approver, CurrentSession, StateStore } from "./state-store.js";
import type { TaskStore } from "./tasks.js";
import { type ChatMessage, isChatMessage } from "./types.js";
import type {
  DailyUsage,
  UsageDays,
  UsagePeriods,
  UsageRecord,
  UsageScope,
  UsageTotals,
  UserUsage,
} from "./usage.js";

/** Options of {@link PostgresStateStore.open}. */
export interface PostgresStateStoreOptions {
  /** Clock for the `created_at`/`updated_at` columns. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * A conversation cache of this store's own, of this many characters of stored text; 0 reads
   * each conversation whole every time. Default: the process's (state/conversation-cache.ts).
   */
  readonly conversationCacheChars?: number | undefined;
}

interface MessageRow {
  id: string;
  body: string;
}

/**
 * The {@link StateStore} on PostgreSQL (`store: { kind: postgres }`, docs/store.md): one
 * profile's rows in tables every profile of the install shares, `profile` leading every key.
 * Same semantics as {@link SqliteStateStore}: what SQLite gets from its single writer (a code
 * request counting pending codes, a summary replacing the one it was made from) this store gets
 * from one transaction per call, holding a per-profile advisory lock where a read decides a
 * write. The store does not own `database`: closing it stops its own calls, and whoever opened
 * the database closes it. A server failure rejects with `PostgresStoreError` (its `unreachable`
 * set while the server is down); a message or row that is not a chat message, or a call after
 * `close`, with {@link StateStoreError}.
 */
export class PostgresStateStore implements StateStore {
  readonly profile: string;
  /** `host:port/database (profile …)`, for messages. */
  readonly where: string;
  readonly damage = undefined;
  readonly #database: PostgresDatabase;
  readonly #now: () => number;
  readonly #conversations: ConversationScope;
  readonly #inFlight = new Set<Promise<unknown>>();
  #closed = false;
  #rotations = 0;
  #tasks: TaskStore | undefined;

  private constructor(
    database: PostgresDatabase,
    profile: string,
    settings: { now: () => number; conversationCacheChars: number | undefined },
  ) {
    this.#database = database;
    this.profile = profile;
    this.#now = settings.now;
    this.#conversations = conversationScope(settings.conversationCacheChars);
    this.where = `${database.where} (profile ${profile})`;
  }

  /**
   * Brings the state tables of `database` to the latest schema (under the migration lock, so
   * two gateways starting at once migrate once; a newer schema rejects with
   * `PostgresSchemaError`) and opens `profile`'s store on it.
   */
  static async open(
    database: PostgresDatabase,
    profile: string,
    options: PostgresStateStoreOptions = {},
  ): Promise<PostgresStateStore> {
    await migratePostgresState(database);
    return PostgresStateStore.attach(database, profile, options);
  }

  /** The store of `profile` on a database whose state tables are migrated already. */
  static attach(
    database: PostgresDatabase,
    profile: string,
    options: PostgresStateStoreOptions = {},
  ): PostgresStateStore {
    return new PostgresStateStore(database, profile, {
      now: options.now ?? Date.now,
      conversationCacheChars: options.conversationCacheChars,
    });
  }

  /** The session id bound to `sessionKey`; a new random one is created and stored if absent. */
  currentSessionId(sessionKey: string): Promise<string> {
    return this.#run("currentSessionId", async (db) => {
      const select =
        "SELECT session_id FROM state_sessions WHERE profile = $1 AND session_key = $2";
      const known = (await db.query<{ session_id: string }>(select, [this.profile, sessionKey]))
        .rows[0];
      if (known !== undefined) return known.session_id;
      const nowMs = this.#now();
      const inserted = await db.query<{ session_id: string }>(
        `INSERT INTO state_sessions (profile, session_key, session_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $4) ON CONFLICT (profile, session_key) DO NOTHING RETURNING session_id`,
        [this.profile, sessionKey, randomUUID(), nowMs],
      );
      const row =
        inserted.rows[0] ??
        (await db.query<{ session_id: string }>(select, [this.profile, sessionKey])).rows[0];
      if (row === undefined) throw new Error(`session key ${sessionKey} vanished while bound`);
      return row.session_id;
    });
  }

  rotateSessionId(sessionKey: string): Promise<string> {
    this.#rotations++;
    const nowMs = this.#now();
    return this.#transaction("rotateSessionId", async (tx) => {
      const old = (
        await tx.query<{ session_id: string }>(
          "SELECT session_id FROM state_sessions WHERE profile = $1 AND session_key = $2 FOR UPDATE",
          [this.profile, sessionKey],
        )
      ).rows[0];
      if (old !== undefined) await this.#deleteConversation(tx, old.session_id);
      const id = randomUUID();
      await tx.query(
        `INSERT INTO state_sessions (profile, session_key, session_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (profile, session_key) DO UPDATE SET session_id = excluded.session_id,
                                                           updated_at = excluded.updated_at`,
        [this.profile, sessionKey, id, nowMs],
      );
      return id;
    });
  }

  get rotations(): number {
    return this.#rotations;
  }

  addApproval(
    record: ApprovalRecord,
    maxPending: number,
    keepMs: number,
  ): Promise<AddApprovalResult> {
    return this.#transaction("addApproval", (tx) =>
      approvals.addApproval(tx, this.profile, record, maxPending, keepMs),
    );
  }

  setApprovalMessage(id: string, messageId: string): Promise<void> {
    return this.#run("setApprovalMessage", (db) =>
      approvals.setApprovalMessage(db, this.profile, id, messageId),
    );
  }

  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return this.#run("getApproval", (db) => approvals.getApproval(db, this.profile, id));
  }

  decideApproval(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    decidedBy: string,
    decidedByName: string | undefined,
  ): Promise<DecideResult> {
    const nowMs = this.#now();
    return this.#run("decideApproval", (db) =>
      approvals.decideApproval(db, this.profile, id, status, decidedBy, decidedByName, nowMs),
    );
  }

  sessionAllowed(sessionId: string): Promise<boolean> {
    return this.#run("sessionAllowed", (db) =>
      approvals.sessionAllowed(db, this.profile, sessionId),
    );
  }

  latestPendingApproval(
    platform: string,
    chatId: string,
    threadId: string | undefined,
  ): Promise<ApprovalRecord | undefined> {
    return this.#run("latestPendingApproval", (db) =>
      approvals.latestPending(db, this.profile, platform, chatId, threadId),
    );
  }

  recentApprovals(limit: number): Promise<ApprovalRecord[]> {
    return this.#run("recentApprovals", (db) => approvals.recentApprovals(db, this.profile, limit));
  }

  loadHistory(sessionId: string, limit?: number): Promise<ChatMessage[]> {
    return this.#run("loadHistory", async (db) => {
      const rows =
        limit === undefined
          ? await db.query<MessageRow>(
              "SELECT id, body FROM state_messages WHERE profile = $1 AND session_id = $2 ORDER BY id",
              [this.profile, sessionId],
            )
          : await db.query<MessageRow>(
              `SELECT id, body FROM (SELECT id, body FROM state_messages
                 WHERE profile = $1 AND session_id = $2 ORDER BY id DESC LIMIT $3) newest ORDER BY id`,
              [this.profile, sessionId, Math.max(0, Math.trunc(limit))],
            );
      return rows.rows.map((row) => this.#parse(row));
    });
  }

  /**
   * One statement: all of `messages` are stored, in order, or none. With `current`, in a
   * transaction that first takes the key's session row `FOR SHARE`: a rotation holds it `FOR
   * UPDATE` while it deletes the conversation, so either this append commits first (and the
   * rotation's delete sees its rows) or it finds the key on another id and writes nothing.
   */
  appendHistory(
    sessionId: string,
    messages: readonly ChatMessage[],
    current?: CurrentSession,
  ): Promise<boolean> {
    const nowMs = this.#now();
    const insert = async (db: Queryable): Promise<boolean> => {
      const roles: string[] = [];
      const bodies: string[] = [];
      messages.forEach((message: unknown, index) => {
        if (!isChatMessage(message)) {
          throw new StateStoreError("append", this.where, `message ${index} is not a chat message`);
        }
        roles.push(message.role);
        bodies.push(JSON.stringify(message));
      });
      if (bodies.length === 0) return true;
      await db.query(
        `INSERT INTO state_messages (profile, session_id, role, body, created_at)
         SELECT $1, $2, m.role, m.body, $3
         FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS m(role, body, n) ORDER BY m.n`,
        [this.profile, sessionId, nowMs, roles, bodies],
      );
      return true;
    };
    if (current === undefined) return this.#run("appendHistory", insert);
    return this.#transaction("appendHistory", async (tx) => {
      const still = await tx.query(
        `SELECT 1 FROM state_sessions WHERE profile = $1 AND session_key = $2 AND session_id = $3
         FOR SHARE`,
        [this.profile, current.sessionKey, sessionId],
      );
      return still.rows.length === 0 ? false : insert(tx);
    });
  }

  /**
   * The summary and the messages after it, each answer read by one statement (one snapshot).
   * Reads only the messages added since this store last loaded it, when nothing else changed
   * (state/conversation-cache.ts).
   */
  loadConversation(sessionId: string): Promise<Conversation> {
    return this.#conversations.load(sessionId, (known) =>
      this.#run("loadConversation", async (db) => {
        if (known !== undefined) {
          const after = await this.#readAfter(db, sessionId, known);
          if (after !== undefined) return after;
        }
        return this.#readWhole(db, sessionId);
      }),
    );
  }

  /**
   * The messages after `known.lastId`, read with the summary and `known`'s range in one
   * statement; `undefined` when `known` no longer holds.
   */
  async #readAfter(
    db: Queryable,
    sessionId: string,
    known: KnownConversation,
  ): Promise<ConversationRead | undefined> {
    const rows = await db.query<{
      through_id: string | null;
      count: string;
      last_id: string | null;
      id: string | null;
      body: string | null;
    }>(
      `SELECT s.through_id, r.count, r.last_id, m.id, m.body
       FROM (SELECT count(*) AS count, max(id) AS last_id FROM state_messages
             WHERE profile = $1 AND session_id = $2 AND id > $3 AND id <= $4) r
       LEFT JOIN state_summaries s ON s.profile = $1 AND s.session_id = $2
       LEFT JOIN state_messages m ON m.profile = $1 AND m.session_id = $2 AND m.id > $4
       ORDER BY m.id`,
      [this.profile, sessionId, known.throughId, known.lastId],
    );
    const first = rows.rows[0];
    if (first === undefined) return undefined;
    const range = {
      count: Number(first.count),
      lastId: first.last_id === null ? null : Number(first.last_id),
    };
    if (!stillHolds(known, Number(first.through_id ?? 0), range)) return undefined;
    const { messages, chars } = this.#messagesOf(rows.rows);
    return { kind: "after", messages, chars };
  }

  async #readWhole(db: Queryable, sessionId: string): Promise<ConversationRead> {
    const rows = await db.query<{
      content: string | null;
      through_id: string | null;
      id: string | null;
      body: string | null;
    }>(
      `SELECT s.content, s.through_id, m.id, m.body
       FROM (SELECT 1) one
       LEFT JOIN state_summaries s ON s.profile = $1 AND s.session_id = $2
       LEFT JOIN state_messages m ON m.profile = $1 AND m.session_id = $2
                                 AND m.id > coalesce(s.through_id, 0)
       ORDER BY m.id`,
      [this.profile, sessionId],
    );
    const first = rows.rows[0];
    const { messages, chars } = this.#messagesOf(rows.rows);
    if (first?.content === null || first?.content === undefined) {
      return { kind: "whole", conversation: { messages }, chars };
    }
    const summary = { content: first.content, throughId: Number(first.through_id) };
    return {
      kind: "whole",
      conversation: { summary, messages },
      chars: chars + summary.content.length,
    };
  }

  /** The message rows of a read (a left join's row without one has `id` null). */
  #messagesOf(rows: readonly { id: string | null; body: string | null }[]): {
    messages: StoredMessage[];
    chars: number;
  } {
    let chars = 0;
    const messages: StoredMessage[] = [];
    for (const row of rows) {
      if (row.id === null || row.body === null) continue;
      chars += row.body.length;
      messages.push({ id: Number(row.id), message: this.#parse({ id: row.id, body: row.body }) });
    }
    return { messages, chars };
  }

  saveSummary(sessionId: string, write: SummaryWrite): Promise<boolean> {
    const nowMs = this.#now();
    return this.#transaction("saveSummary", async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
        pairing.StateLockClass.summary,
        `${this.profile}\n${sessionId}`,
      ]);
      const current = (
        await tx.query<{ through_id: string }>(
          "SELECT through_id FROM state_summaries WHERE profile = $1 AND session_id = $2",
          [this.profile, sessionId],
        )
      ).rows[0];
      const currentThrough = current === undefined ? undefined : Number(current.through_id);
      if (currentThrough !== write.baseThroughId) return false;
      if (write.throughId <= (currentThrough ?? 0)) return false;
      const known = await tx.query(
        "SELECT 1 FROM state_messages WHERE id = $1 AND profile = $2 AND session_id = $3",
        [write.throughId, this.profile, sessionId],
      );
      if (known.rowCount === 0) return false;
      await tx.query(
        `INSERT INTO state_summaries (profile, session_id, content, through_id, created_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (profile, session_id) DO UPDATE SET content = excluded.content,
           through_id = excluded.through_id, created_at = excluded.created_at`,
        [this.profile, sessionId, write.content, write.throughId, nowMs],
      );
      return true;
    });
  }

  clearHistory(sessionId: string): Promise<void> {
    return this.#transaction("clearHistory", (tx) => this.#deleteConversation(tx, sessionId));
  }

  async #deleteConversation(tx: Queryable, sessionId: string): Promise<void> {
    await tx.query("DELETE FROM state_messages WHERE profile = $1 AND session_id = $2", [
      this.profile,
      sessionId,
    ]);
    await tx.query("DELETE FROM state_summaries WHERE profile = $1 AND session_id = $2", [
      this.profile,
      sessionId,
    ]);
  }

  #parse(row: MessageRow): ChatMessage {
    let message: unknown;
    try {
      message = JSON.parse(row.body);
    } catch {
      message = undefined;
    }
    if (!isChatMessage(message)) {
      throw new StateStoreError("load", this.where, `message row ${row.id} is not a chat message`);
    }
    return repairedMessage(message);
  }

  now(): number {
    return this.#now();
  }

  isPaired(user: string): Promise<boolean> {
    return this.#run("isPaired", (db) => pairing.isPaired(db, this.profile, user));
  }

  requestPairing(
    requester: PairingRequester,
    limits: PairingLimits,
  ): Promise<PairingRequestResult> {
    const nowMs = this.#now();
    return this.#transaction("requestPairing", (tx) =>
      pairing.requestPairing(tx, this.profile, requester, nowMs, limits),
    );
  }

  approvePairing(
    code: string,
    approvedBy: Approver,
    guard?: ApprovalGuard,
  ): Promise<PairingApproveResult> {
    const nowMs = this.#now();
    return this.#transaction("approvePairing", (tx) =>
      pairing.approvePairing(tx, this.profile, code, nowMs, approvedBy, guard),
    );
  }

  revokePairing(
    target: { readonly user: string } | { readonly code: string },
  ): Promise<PairingRevokeResult> {
    return this.#transaction("revokePairing", (tx) =>
      pairing.revokePairing(tx, this.profile, target),
    );
  }

  listPairing(): Promise<PairingList> {
    const nowMs = this.#now();
    return this.#run("listPairing", (db) => pairing.listPairing(db, this.profile, nowMs));
  }

  recordUsage(record: UsageRecord): Promise<void> {
    const nowMs = this.#now();
    return this.#run("recordUsage", (db) => usage.insertUsage(db, this.profile, record, nowMs));
  }

  usagePeriods(scope: UsageScope, days: UsageDays): Promise<UsagePeriods> {
    return this.#run("usagePeriods", (db) => usage.selectPeriods(db, this.profile, scope, days));
  }

  usageOfDay(day: string): Promise<UsageTotals> {
    return this.#run("usageOfDay", (db) => usage.selectDay(db, this.profile, day));
  }

  usageDaily(fromDay: string): Promise<DailyUsage[]> {
    return this.#run("usageDaily", (db) => usage.selectDaily(db, this.profile, fromDay));
  }

  usageByUser(days: UsageDays): Promise<UserUsage[]> {
    return this.#run("usageByUser", (db) => usage.selectUsers(db, this.profile, days));
  }

  sessionModel(sessionKey: string): Promise<string | undefined> {
    return this.#run("sessionModel", (db) =>
      usage.selectSessionModel(db, this.profile, sessionKey),
    );
  }

  setSessionModel(sessionKey: string, model: string | undefined): Promise<void> {
    const nowMs = this.#now();
    return this.#run("setSessionModel", (db) =>
      usage.upsertSessionModel(db, this.profile, sessionKey, model, nowMs),
    );
  }

  /** The profile's scheduled tasks (docs/schedules.md). */
  get tasks(): TaskStore {
    this.#tasks ??= postgresTaskStore({
      profile: this.profile,
      now: this.#now,
      run: (operation, work) => this.#run(operation, work),
      transaction: (operation, work) => this.#transaction(operation, work),
    });
    return this.#tasks;
  }

  /** Waits for the calls made before it; later calls reject. The database stays open. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#conversations.close();
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Runs `work` on the pool, one statement at a time (each its own transaction). */
  #run<T>(operation: string, work: (db: Queryable) => Promise<T>): Promise<T> {
    const database = this.#database;
    const db: Queryable = { query: (sql, params) => database.query(operation, sql, params) };
    return this.#track(operation, () => work(db));
  }

  /** Runs `work` in one transaction (run again on a serialization failure or a deadlock). */
  #transaction<T>(operation: string, work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#track(operation, () => this.#database.transaction(operation, work));
  }

  #track<T>(operation: string, call: () => Promise<T>): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new StateStoreError(operation, this.where, "the store is closed"));
    }
    const result = call().catch((error: unknown) => {
      // The server's disk is full: the same condition, code and chat line as SQLite's.
      if (error instanceof PostgresStoreError && isDiskFull(error)) {
        throw new StateStoreError(operation, this.where, describe(error), { cause: error });
      }
      if (error instanceof MediagateError) throw error;
      throw new StateStoreError(operation, this.where, describe(error), { cause: error });
    });
    this.#inFlight.add(result);
    void result.then(
      () => this.#inFlight.delete(result),
      () => this.#inFlight.delete(result),
    );
    return result;
  }
}

/**
 * Brings the state tables of `database` to the latest schema: see `migratePostgres`. Resolves
 * to the version found and the version now.
 */
export function migratePostgresState(database: PostgresDatabase) {
  return migratePostgres(database, StateComponent, PostgresStateMigrations);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
