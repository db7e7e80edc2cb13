import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { type GroupedCommits, groupedCommits } from "../sqlite/grouped-commits.js";
import { storableStatements } from "../sqlite/storable-statements.js";
import { type Transactions, transactionsOf } from "../sqlite/transactions.js";
import {
  type AddApprovalResult,
  type ApprovalRecord,
  type ApprovalStatus,
  addApproval,
  type DecideResult,
  decideApproval,
  getApproval,
  latestPending,
  recentApprovals,
  sessionAllowed,
  setApprovalMessage,
} from "./approvals.js";
import { repairedMessage } from "./chat-repair.js";
import {
  type ConversationRead,
  type ConversationSummary,
  type CountedRange,
  type KnownConversation,
  type StoredMessage,
  type SummaryWrite,
  stillHolds,
} from "./conversation.js";
import { StateSchemaError, StateStoreError } from "./errors.js";
import {
  type ApprovalGuard,
  generatePairingCode,
  type PairedUser,
  type PairingApproveResult,
  type PairingLimits,
  type PairingList,
  type PairingRequester,
  type PairingRequestResult,
  type PairingRevokeResult,
  type PendingPairing,
  usedCode,
} from "./pairing.js";
import { migrate } from "./schema.js";
import type { Approver } from "./state-store.js";
import type {
  AddTaskResult,
  ChatReach,
  NewTask,
  ReachCount,
  TaskAdvance,
  TaskCaps,
  TaskRecord,
  TaskRun,
} from "./tasks.js";
import * as tasks from "./tasks-database.js";
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
import {
  insertUsage,
  selectDaily,
  selectDay,
  selectPeriods,
  selectSessionModel,
  selectUsers,
  upsertSessionModel,
} from "./usage-database.js";

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

interface SummaryRow {
  content: string;
  through_id: number;
}

interface CodeRow {
  code: string;
  user: string;
  user_name: string | null;
  chat_id: string;
  created_at: number;
  expires_at: number;
}

interface PairedRow {
  user: string;
  user_name: string | null;
  chat_id: string;
  approved_at: number;
  approved_by: string;
  code: string | null;
}

interface GuardRow {
  failed_attempts: number;
  locked_until: number;
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
  /** The session lookup (every message makes one), compiled once. */
  readonly #sessionOf: Database.Statement<[string], SessionRow>;
  /** A batch's calls share one commit; `close` runs alone (sqlite/grouped-commits.ts). */
  readonly grouped: GroupedCommits;
  /** Made once: a transaction made per call costs more than its commit (sqlite/transactions.ts). */
  readonly #transactions: Transactions;

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.#db = storableStatements(db);
    this.#sessionOf = this.#db.prepare<[string], SessionRow>(
      "SELECT session_id FROM sessions WHERE session_key = ?",
    );
    this.#transactions = transactionsOf(this.#db);
    this.grouped = groupedCommits(this.#db, new Set(["close"]));
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
      return this.#transactions.immediate(() => {
        const row = this.#sessionOf.get(sessionKey);
        if (row) return row.session_id;
        const id = randomUUID();
        this.#db
          .prepare(
            "INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
          )
          .run(sessionKey, id, nowMs, nowMs);
        return id;
      });
    });
  }

  /**
   * `/reset` and `/new`: binds a new random session id to `sessionKey` and deletes the history
   * and summary of the old one, in one transaction. Returns the new id.
   */
  rotateSessionId(sessionKey: string, nowMs: number): string {
    return this.#run("rotate", () =>
      this.#transactions.immediate(() => {
        const old = this.#sessionOf.get(sessionKey);
        if (old) this.#deleteConversation(old.session_id);
        const id = randomUUID();
        this.#db
          .prepare(
            `INSERT INTO sessions (session_key, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id,
                                                      updated_at = excluded.updated_at`,
          )
          .run(sessionKey, id, nowMs, nowMs);
        return id;
      }),
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
      return rows.map((row) => this.#parse(row));
    });
  }

  /**
   * Appends `messages` to the history of `sessionId` in one transaction: either all of them
   * are stored or, when any is invalid or a write fails, none.
   */
  appendHistory(
    sessionId: string,
    messages: readonly ChatMessage[],
    nowMs: number,
    sessionKey?: string,
  ): boolean {
    return this.#run("append", () => {
      const insert = this.#db.prepare(
        "INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, ?)",
      );
      return this.#transactions.immediate(() => {
        if (sessionKey !== undefined && this.#sessionOf.get(sessionKey)?.session_id !== sessionId) {
          return false;
        }
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
        return true;
      });
    });
  }

  /** Deletes the history and summary of `sessionId` (the session key keeps its id). */
  clearHistory(sessionId: string): void {
    this.#run("clear", () => {
      this.#transactions.immediate(() => this.#deleteConversation(sessionId));
    });
  }

  #deleteConversation(sessionId: string): void {
    this.#db.prepare("DELETE FROM messages WHERE session_id = ?").run(sessionId);
    this.#db.prepare("DELETE FROM summaries WHERE session_id = ?").run(sessionId);
  }

  /**
   * What the model sees of `sessionId`: its summary and the messages after it, read in one
   * transaction (a compaction in between cannot pair a summary with the wrong messages). With
   * `known`, what the caller holds of it (state/conversation-cache.ts): when that still holds,
   * only the messages after it.
   */
  readConversation(sessionId: string, known: KnownConversation | undefined): ConversationRead {
    return this.#run("load", () =>
      this.#transactions.deferred((): ConversationRead => {
        const summary = this.#summaryOf(sessionId);
        if (known !== undefined) {
          const range = this.#db
            .prepare<[string, number, number], CountedRange>(
              `SELECT count(*) AS count, max(id) AS lastId FROM messages
               WHERE session_id = ? AND id > ? AND id <= ?`,
            )
            .get(sessionId, known.throughId, known.lastId) as CountedRange;
          if (stillHolds(known, summary?.throughId ?? 0, range)) {
            const { messages, chars } = this.#messagesAfter(sessionId, known.lastId);
            return { kind: "after", messages, chars };
          }
        }
        const { messages, chars } = this.#messagesAfter(sessionId, summary?.throughId ?? 0);
        const conversation = summary === undefined ? { messages } : { summary, messages };
        return { kind: "whole", conversation, chars: chars + (summary?.content.length ?? 0) };
      }),
    );
  }

  #messagesAfter(sessionId: string, afterId: number): { messages: StoredMessage[]; chars: number } {
    const rows = this.#db
      .prepare<[string, number], MessageRow>(
        "SELECT id, body FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
      )
      .all(sessionId, afterId);
    let chars = 0;
    const messages = rows.map((row) => {
      chars += row.body.length;
      return { id: row.id, message: this.#parse(row) };
    });
    return { messages, chars };
  }

  /**
   * Stores a new summary of `sessionId` (one row written: a crash keeps the old one or this
   * one). Refused (`false`) when the session's summary is no longer the one it was made from,
   * or `throughId` is not one of the session's messages past it.
   */
  saveSummary(sessionId: string, write: SummaryWrite, nowMs: number): boolean {
    return this.#run("summary", () =>
      this.#transactions.immediate((): boolean => {
        const current = this.#summaryOf(sessionId);
        if (current?.throughId !== write.baseThroughId) return false;
        if (write.throughId <= (current?.throughId ?? 0)) return false;
        const known = this.#db
          .prepare("SELECT 1 FROM messages WHERE id = ? AND session_id = ?")
          .get(write.throughId, sessionId);
        if (known === undefined) return false;
        this.#db
          .prepare(
            `INSERT INTO summaries (session_id, content, through_id, created_at) VALUES (?, ?, ?, ?)
               ON CONFLICT (session_id) DO UPDATE SET content = excluded.content,
                 through_id = excluded.through_id, created_at = excluded.created_at`,
          )
          .run(sessionId, write.content, write.throughId, nowMs);
        return true;
      }),
    );
  }

  #summaryOf(sessionId: string): ConversationSummary | undefined {
    const row = this.#db
      .prepare<[string], SummaryRow>(
        "SELECT content, through_id FROM summaries WHERE session_id = ?",
      )
      .get(sessionId);
    return row === undefined ? undefined : { content: row.content, throughId: row.through_id };
  }

  #parse(row: MessageRow): ChatMessage {
    const message: unknown = JSON.parse(row.body);
    if (!isChatMessage(message)) {
      throw new StateStoreError("load", this.path, `message row ${row.id} is not a chat message`);
    }
    return repairedMessage(message);
  }

  /** Whether `user` (`<platform>:<id>`) was approved by pairing and not revoked since. */
  isPaired(user: string): boolean {
    return this.#run("paired", () => {
      const row = this.#db.prepare("SELECT 1 FROM paired_users WHERE user = ?").get(user);
      return row !== undefined;
    });
  }

  /**
   * An unknown user asks in a DM (docs/security.md, "Pairing"): their pending code if it has
   * not expired (the same one, never a new one per message), else a new code unless
   * `limits.maxPending` codes are already waiting. Expired codes are dropped first.
   */
  requestPairing(
    requester: PairingRequester,
    nowMs: number,
    limits: PairingLimits,
  ): PairingRequestResult {
    return this.#run("pairing request", () =>
      this.#transactions.immediate((): PairingRequestResult => {
        this.#dropExpiredCodes(nowMs);
        const pending = this.#db
          .prepare<[string], CodeRow>("SELECT * FROM pairing_codes WHERE user = ?")
          .get(requester.user);
        if (pending !== undefined) {
          return { status: "pending", code: pending.code, expiresAtMs: pending.expires_at };
        }
        const waiting = this.#db
          .prepare<[], { n: number }>("SELECT count(*) AS n FROM pairing_codes")
          .get()!.n;
        if (waiting >= limits.maxPending) return { status: "full" };
        const exists = this.#db.prepare("SELECT 1 FROM pairing_codes WHERE code = ?");
        let code = generatePairingCode();
        while (exists.get(code) !== undefined) code = generatePairingCode();
        const expiresAtMs = nowMs + limits.codeTtlMs;
        this.#db
          .prepare(
            "INSERT INTO pairing_codes (code, user, user_name, chat_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          )
          .run(
            code,
            requester.user,
            requester.userName ?? null,
            requester.chatId,
            nowMs,
            expiresAtMs,
          );
        return { status: "issued", code, expiresAtMs };
      }),
    );
  }

  /**
   * Approves the user of the pending `code` (normalized): the code is used up and the user
   * paired. With a `guard` (chat approvals), a code that matches nothing counts against the
   * attempt cap, `guard.maxFailed` of them in a row lock approvals for `guard.lockMs`, and
   * while locked no code is checked at all; an approval resets the count.
   */
  approvePairing(
    code: string,
    nowMs: number,
    approvedBy: Approver,
    guard?: ApprovalGuard,
  ): PairingApproveResult {
    return this.#run("pairing approve", () =>
      this.#transactions.immediate((): PairingApproveResult => {
        const state = this.#guard();
        if (guard !== undefined && state.locked_until > nowMs) {
          return { status: "locked", lockedUntilMs: state.locked_until };
        }
        this.#dropExpiredCodes(nowMs);
        const row = this.#db
          .prepare<[string], CodeRow>("SELECT * FROM pairing_codes WHERE code = ?")
          .get(code);
        if (row === undefined) {
          const used = this.#db
            .prepare<[string], PairedRow>(
              "SELECT * FROM paired_users WHERE code = ? ORDER BY approved_at DESC LIMIT 1",
            )
            .get(code);
          if (used !== undefined) return usedCode(used.user, used);
          if (guard === undefined) return { status: "unknown" };
          const failed = state.failed_attempts + 1;
          if (failed >= guard.maxFailed) {
            const lockedUntilMs = nowMs + guard.lockMs;
            this.#setGuard(0, lockedUntilMs, nowMs);
            return { status: "unknown", attemptsLeft: 0, lockedUntilMs };
          }
          this.#setGuard(failed, 0, nowMs);
          return { status: "unknown", attemptsLeft: guard.maxFailed - failed };
        }
        this.#db.prepare("DELETE FROM pairing_codes WHERE code = ?").run(code);
        this.#db
          .prepare(
            `INSERT INTO paired_users (user, user_name, chat_id, approved_at, approved_by, code) VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT (user) DO UPDATE SET user_name = excluded.user_name, chat_id = excluded.chat_id,
                 approved_at = excluded.approved_at, approved_by = excluded.approved_by, code = excluded.code`,
          )
          .run(row.user, row.user_name, row.chat_id, nowMs, approvedBy, code);
        if (guard !== undefined) this.#setGuard(0, 0, nowMs);
        return {
          status: "approved",
          user: row.user,
          ...(row.user_name === null ? {} : { userName: row.user_name }),
          chatId: row.chat_id,
        };
      }),
    );
  }

  /** Removes an approved user and their pending code (by user), or one pending code (by code). */
  revokePairing(
    target: { readonly user: string } | { readonly code: string },
  ): PairingRevokeResult {
    return this.#run("pairing revoke", () =>
      this.#transactions.immediate((): PairingRevokeResult => {
        if ("code" in target) {
          const pending = this.#db
            .prepare("DELETE FROM pairing_codes WHERE code = ?")
            .run(target.code).changes;
          return { approved: 0, pending };
        }
        const approved = this.#db
          .prepare("DELETE FROM paired_users WHERE user = ?")
          .run(target.user).changes;
        const pending = this.#db
          .prepare("DELETE FROM pairing_codes WHERE user = ?")
          .run(target.user).changes;
        return { approved, pending };
      }),
    );
  }

  /** The codes that have not expired, the approved users (oldest first), and the lock. */
  listPairing(nowMs: number): PairingList {
    return this.#run("pairing list", () => {
      const pending = this.#db
        .prepare<[number], CodeRow>(
          "SELECT * FROM pairing_codes WHERE expires_at > ? ORDER BY created_at, code",
        )
        .all(nowMs)
        .map(
          (row): PendingPairing => ({
            code: row.code,
            user: row.user,
            ...(row.user_name === null ? {} : { userName: row.user_name }),
            chatId: row.chat_id,
            createdAtMs: row.created_at,
            expiresAtMs: row.expires_at,
          }),
        );
      const approved = this.#db
        .prepare<[], PairedRow>("SELECT * FROM paired_users ORDER BY approved_at, user")
        .all()
        .map(
          (row): PairedUser => ({
            user: row.user,
            ...(row.user_name === null ? {} : { userName: row.user_name }),
            chatId: row.chat_id,
            approvedAtMs: row.approved_at,
            approvedBy: row.approved_by,
          }),
        );
      const lockedUntil = this.#guard().locked_until;
      return { pending, approved, ...(lockedUntil > nowMs ? { lockedUntilMs: lockedUntil } : {}) };
    });
  }

  #dropExpiredCodes(nowMs: number): void {
    this.#db.prepare("DELETE FROM pairing_codes WHERE expires_at <= ?").run(nowMs);
  }

  #guard(): GuardRow {
    return (
      this.#db
        .prepare<[], GuardRow>(
          "SELECT failed_attempts, locked_until FROM pairing_guard WHERE id = 1",
        )
        .get() ?? { failed_attempts: 0, locked_until: 0 }
    );
  }

  #setGuard(failed: number, lockedUntilMs: number, nowMs: number): void {
    this.#db
      .prepare(
        `INSERT INTO pairing_guard (id, failed_attempts, locked_until, updated_at) VALUES (1, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET failed_attempts = excluded.failed_attempts,
                                        locked_until = excluded.locked_until,
                                        updated_at = excluded.updated_at`,
      )
      .run(failed, lockedUntilMs, nowMs);
  }

  /** Stores one model call's usage (usage-database.ts). */
  recordUsage(usage: UsageRecord, nowMs: number): void {
    this.#run("usage record", () => insertUsage(this.#db, usage, nowMs));
  }

  /** The totals of `scope` for today, the week and all time. */
  usagePeriods(scope: UsageScope, days: UsageDays): UsagePeriods {
    return this.#run("usage totals", () => selectPeriods(this.#db, scope, days));
  }

  /** The profile's totals of one UTC day. */
  usageOfDay(day: string): UsageTotals {
    return this.#run("usage totals", () => selectDay(this.#db, day));
  }

  /** The profile's totals per day from `fromDay` on. */
  usageDaily(fromDay: string): DailyUsage[] {
    return this.#run("usage daily", () => selectDaily(this.#db, fromDay));
  }

  /** Each user's totals. */
  usageByUser(days: UsageDays): UserUsage[] {
    return this.#run("usage users", () => selectUsers(this.#db, days));
  }

  /** The model `/model` picked for `sessionKey`, if any. */
  sessionModel(sessionKey: string): string | undefined {
    return this.#run("session model", () => selectSessionModel(this.#db, sessionKey));
  }

  /** Stores `/model`'s pick; `undefined` goes back to the default. */
  setSessionModel(sessionKey: string, model: string | undefined, nowMs: number): void {
    this.#run("session model", () => upsertSessionModel(this.#db, sessionKey, model, nowMs));
  }

  /** docs/approvals.md: see approvals.ts for each. */
  addApproval(record: ApprovalRecord, maxPending: number, keepMs: number): AddApprovalResult {
    return this.#run("approval add", () =>
      this.#transactions.deferred(() => addApproval(this.#db, record, maxPending, keepMs)),
    );
  }

  setApprovalMessage(id: string, messageId: string): void {
    this.#run("approval message", () => setApprovalMessage(this.#db, id, messageId));
  }

  getApproval(id: string): ApprovalRecord | undefined {
    return this.#run("approval get", () => getApproval(this.#db, id));
  }

  decideApproval(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    decidedBy: string,
    decidedByName: string | undefined,
    nowMs: number,
  ): DecideResult {
    return this.#run("approval decide", () =>
      decideApproval(this.#db, id, status, decidedBy, decidedByName, nowMs),
    );
  }

  sessionAllowed(sessionId: string): boolean {
    return this.#run("approval session", () => sessionAllowed(this.#db, sessionId));
  }

  latestPendingApproval(
    platform: string,
    chatId: string,
    threadId: string | undefined,
  ): ApprovalRecord | undefined {
    return this.#run("approval latest", () => latestPending(this.#db, platform, chatId, threadId));
  }

  recentApprovals(limit: number): ApprovalRecord[] {
    return this.#run("approval list", () => recentApprovals(this.#db, limit));
  }

  /** docs/schedules.md: see tasks-database.ts for each. */
  addTask(task: NewTask, caps: TaskCaps, nowMs: number): AddTaskResult {
    return this.#run("task add", () =>
      this.#transactions.immediate(() => tasks.addTask(this.#db, task, caps, nowMs)),
    );
  }

  getTask(id: string): TaskRecord | undefined {
    return this.#run("task get", () => tasks.getTask(this.#db, id));
  }

  listTasks(owner: string | undefined): TaskRecord[] {
    return this.#run("task list", () => tasks.listTasks(this.#db, owner));
  }

  dueTasks(nowMs: number): TaskRecord[] {
    return this.#run("task due", () => tasks.dueTasks(this.#db, nowMs));
  }

  nextTaskDue(): number | undefined {
    return this.#run("task next", () => tasks.nextDue(this.#db));
  }

  advanceTask(advance: TaskAdvance, overlapsInARow: number): boolean {
    return this.#run("task advance", () =>
      this.#transactions.immediate(() => tasks.advanceTask(this.#db, advance, overlapsInARow)),
    );
  }

  recordTaskRun(run: TaskRun): void {
    this.#run("task run", () => this.#transactions.deferred(() => tasks.recordRun(this.#db, run)));
  }

  recentTaskRuns(taskId: string, limit: number): TaskRun[] {
    return this.#run("task runs", () => tasks.recentRuns(this.#db, taskId, limit));
  }

  recordTaskReach(id: string, reach: ChatReach): ReachCount | undefined {
    return this.#run("task reach", () =>
      this.#transactions.immediate(() => tasks.recordReach(this.#db, id, reach)),
    );
  }

  setTaskPaused(id: string, paused: boolean, nextDueMs: number): boolean {
    return this.#run("task pause", () => tasks.setPaused(this.#db, id, paused, nextDueMs));
  }

  deleteTask(id: string): boolean {
    return this.#run("task delete", () =>
      this.#transactions.deferred(() => tasks.deleteTask(this.#db, id)),
    );
  }

  userTimezone(user: string): string | undefined {
    return this.#run("user timezone", () => tasks.userTimezone(this.#db, user));
  }

  setUserTimezone(user: string, timezone: string | undefined, nowMs: number): void {
    this.#run("user timezone set", () => tasks.setUserTimezone(this.#db, user, timezone, nowMs));
  }

  syncOperatorTasks(list: readonly NewTask[], nowMs: number): void {
    this.#run("task sync", () =>
      this.#transactions.immediate(() => tasks.syncOperatorTasks(this.#db, list, nowMs)),
    );
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
