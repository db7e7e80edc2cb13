import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type { PlanRecord } from "@mediagate/media";
import { isPlanRecord } from "@mediagate/media/plan-record";
import { type InstanceId, instanceLiveness } from "@mediagate/sandbox/instance";
import Database from "better-sqlite3";
import type { ChatCursor, InboundMessage, StepResult } from "../channels/types.js";
import { storableText } from "../postgres/stored-text.js";
import { moveAsideCommand } from "../sqlite/damage.js";
import { type GroupedCommits, groupedCommits } from "../sqlite/grouped-commits.js";
import { StatementCache } from "../sqlite/statement-cache.js";
import { type Transactions, transactionsOf } from "../sqlite/transactions.js";
import { StateSchemaError } from "../state/errors.js";
import { migrate } from "../state/schema.js";
import {
  idList,
  isChatTarget,
  isInboundMessage,
  isStatusRecord,
  journalKey,
  parseJson,
  previewIds,
  ReleasedOwner,
  receiptIdsOf,
  receiptKey,
  Snowflake,
} from "./journal-records.js";
import { JOURNAL_MIGRATIONS } from "./journal-schema.js";
import type {
  JournalEntry,
  JournalOutcome,
  JournalState,
  LeftoverStatus,
  OutboxRecord,
  OutboxReply,
  OutboxState,
  RecordResult,
  StatusRecord,
} from "./types.js";

export { journalKey, ReleasedOwner } from "./journal-records.js";

/** What the journal database is opened with (plain data: it crosses to the worker thread). */
export interface JournalDatabaseSettings {
  /** How long a writer waits for another process's lock. */
  readonly busyTimeoutMs: number;
  /** This process (the owner of what it records and takes over). */
  readonly owner: InstanceId;
}

interface EntryRow {
  id: number;
  key: string;
  state: JournalState;
  owner: string;
  message: string;
  received_at: number;
  started_at: number | null;
}

interface StatusRow {
  id: number;
  profile: string;
  platform: InboundMessage["platform"];
  state: JournalState;
  status: string;
  previews: string | null;
}

interface ReplyRow {
  id: string;
  entry_id: number | null;
  profile: string;
  platform: InboundMessage["platform"];
  session_key: string;
  slot: string;
  target: string;
  text: string;
  state: OutboxState;
  owner: string;
  attempts: number;
  created_at: number;
  not_before: number;
  last_error: string | null;
  plan: string | null;
  plain: number;
}

/**
 * The synchronous side of the journal, run inside its worker thread (`SqliteJournal` in
 * journal.ts is what the gateway uses). Each method is one synchronous unit, so each
 * transaction is atomic; times come from the caller (`nowMs`).
 */
export class JournalDatabase {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #owner: InstanceId;
  /** Statements compiled once, by their SQL (each call used to compile its own). */
  readonly #statements: StatementCache;
  /** A batch's calls share one commit; `close` runs alone (sqlite/grouped-commits.ts). */
  readonly grouped: GroupedCommits;
  /** Made once: a transaction made per call costs more than its commit (sqlite/transactions.ts). */
  readonly #transactions: Transactions;

  private constructor(path: string, db: Database.Database, owner: InstanceId) {
    this.path = path;
    this.#db = db;
    this.#owner = owner;
    this.#statements = new StatementCache((sql) => db.prepare(sql));
    this.#transactions = transactionsOf(db);
    this.grouped = groupedCommits(db, new Set(["close"]));
  }

  /** Opens (creating it owner-only, its directory 0700) and migrates the journal at `path`. */
  static open(path: string, settings: JournalDatabaseSettings): JournalDatabase {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Created owner-only before SQLite opens it: its -wal and -shm files copy its mode.
    closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
    const db = new Database(path);
    try {
      db.pragma("journal_mode = WAL");
      // A commit is written to the WAL (it survives a crash of the process) but not synced:
      // SqliteJournal.sync() syncs everything committed so far with one flush of the disk,
      // which the channels call before they confirm messages to their platform
      // (docs/durability.md).
      db.pragma("synchronous = NORMAL");
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(settings.busyTimeoutMs))}`);
      migrate(db, JOURNAL_MIGRATIONS);
      return new JournalDatabase(path, db, settings.owner);
    } catch (error) {
      db.close();
      if (error instanceof StateSchemaError) {
        throw new Error(
          `schema version ${error.found} is newer than this mediagate supports (${error.supported}); upgrade mediagate or move ${path} aside (\`${moveAsideCommand(path)}\`)`,
        );
      }
      throw error;
    }
  }

  #prepare<P extends unknown[] | object = unknown[], R = unknown>(
    sql: string,
  ): Database.Statement<P, R> {
    return this.#statements.get<P, R>(sql);
  }

  /**
   * A message none of whose receipt ids is recorded becomes a new entry, recorded by all of
   * them. One whose receipt ids are all recorded is a redelivery; one with some recorded and
   * some not is not recorded either, and the result names the ones missing.
   */
  record(message: InboundMessage, nowMs: number): RecordResult {
    const ids = receiptIdsOf(message);
    return this.#transactions.immediate((): RecordResult => {
      if (message.platform === "discord") this.#moveCursor(message, nowMs);
      const receipts = this.#receipts(message.profile, message.platform, ids);
      const known = receipts.find((receipt) => receipt !== undefined)?.entry_id;
      if (known !== undefined) {
        const unrecorded = ids.filter((_, i) => receipts[i] === undefined);
        return unrecorded.length === 0
          ? { id: known, fresh: false }
          : { id: known, fresh: false, unrecorded };
      }
      const inserted = this.#prepare<
        [string, string, string, string, string, number],
        { id: number }
      >(
        `INSERT INTO entries (key, profile, platform, state, owner, message, received_at)
             VALUES (?, ?, ?, 'received', ?, ?, ?) RETURNING id`,
      ).get(
        journalKey(message),
        message.profile,
        message.platform,
        this.#owner,
        JSON.stringify(message),
        nowMs,
      );
      if (inserted === undefined) throw new Error("the entry was not inserted");
      const receipt = this.#prepare("INSERT INTO receipts (key, entry_id) VALUES (?, ?)");
      for (const id of ids) {
        receipt.run(receiptKey(message.profile, message.platform, id), inserted.id);
      }
      return { id: inserted.id, fresh: true };
    });
  }

  /** Which of `receiptIds` (of `profile` on `platform`) are recorded, with any message. */
  recorded(profile: string, platform: string, receiptIds: readonly string[]): string[] {
    const receipts = this.#receipts(profile, platform, receiptIds);
    return receiptIds.filter((_, i) => receipts[i] !== undefined);
  }

  /**
   * The receipt row of each of `receiptIds`, `undefined` for one not recorded. When the first
   * is an entry's recorded before receipts were (schema version 3), it stands for them all:
   * that version recorded an album by its first update alone.
   */
  #receipts(
    profile: string,
    platform: string,
    receiptIds: readonly string[],
  ): ({ entry_id: number; whole: number } | undefined)[] {
    const find = this.#prepare<[string], { entry_id: number; whole: number }>(
      "SELECT entry_id, whole FROM receipts WHERE key = ?",
    );
    const receipts = receiptIds.map((id) => find.get(receiptKey(profile, platform, id)));
    const first = receipts[0];
    return first?.whole === 1 ? receiptIds.map(() => first) : receipts;
  }

  /** Keeps the numerically largest message id per chat (ids are 64-bit: compared as BigInt). */
  #moveCursor(message: InboundMessage, nowMs: number): void {
    if (!Snowflake.test(message.messageId)) return;
    const channelId = message.threadId ?? message.chatId;
    const current = this.#prepare<[string, string], { last_message_id: string }>(
      "SELECT last_message_id FROM cursors WHERE profile = ? AND channel_id = ?",
    ).get(message.profile, channelId);
    if (
      current !== undefined &&
      Snowflake.test(current.last_message_id) &&
      BigInt(current.last_message_id) >= BigInt(message.messageId)
    ) {
      return;
    }
    this.#prepare(
      `INSERT INTO cursors (profile, channel_id, last_message_id, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (profile, channel_id) DO UPDATE
           SET last_message_id = excluded.last_message_id, updated_at = excluded.updated_at`,
    ).run(message.profile, channelId, message.messageId, nowMs);
  }

  /** Several entries (the messages of one merged turn) start in one transaction. */
  started(ids: number | readonly number[], nowMs: number): void {
    const update = this.#prepare(
      "UPDATE entries SET state = 'started', started_at = ? WHERE id = ? AND state = 'received'",
    );
    this.#transactions.immediate(() => {
      for (const id of idList(ids)) update.run(nowMs, id);
    });
  }

  /**
   * The first outcome stays: an entry already `done` (e.g. by `addReply`) is left as it is.
   * Several entries (the messages of one merged turn) are closed in one transaction.
   */
  finished(ids: number | readonly number[], outcome: JournalOutcome, nowMs: number): void {
    const update = this.#prepare(
      "UPDATE entries SET state = 'done', outcome = ?, finished_at = ? WHERE id = ? AND state <> 'done'",
    );
    this.#transactions.immediate(() => {
      for (const id of idList(ids)) update.run(outcome, nowMs, id);
    });
  }

  /**
   * The owners among `owners` whose process is gone (`unknown` counts as alive), and what a
   * stopped gateway released.
   */
  #gone(owners: readonly string[]): string[] {
    return owners.filter(
      (owner) =>
        owner === ReleasedOwner || (owner !== this.#owner && instanceLiveness(owner) === "gone"),
    );
  }

  clearStep(replyId: string, key: string): void {
    this.#prepare("DELETE FROM reply_steps WHERE reply_id = ? AND key = ?").run(replyId, key);
  }

  /** Where entry `id` is and how it ended (`undefined` for an unknown id). */
  entryState(
    id: number,
  ): { state: JournalState; outcome: string | null; mine: boolean } | undefined {
    const row = this.#prepare<
      [string, number],
      { state: JournalState; outcome: string | null; mine: number }
    >("SELECT state, outcome, owner = ? AS mine FROM entries WHERE id = ?").get(this.#owner, id);
    return row === undefined ? undefined : { ...row, mine: row.mine === 1 };
  }

  statusShown(entryId: number, status: StatusRecord): void {
    this.#prepare("UPDATE entries SET status = ? WHERE id = ?").run(
      JSON.stringify({ target: status.target, messageId: status.messageId }),
      entryId,
    );
  }

  previewsShown(entryId: number, messageIds: readonly string[]): void {
    this.#prepare("UPDATE entries SET previews = ? WHERE id = ?").run(
      JSON.stringify(messageIds),
      entryId,
    );
  }

  statusGone(entryId: number): void {
    this.#prepare(
      "UPDATE entries SET status = NULL, previews = NULL WHERE id = ? AND (status IS NOT NULL OR previews IS NOT NULL)",
    ).run(entryId);
  }

  /**
   * Status messages recorded with entries of gone owners, oldest first. One that does not read
   * back (it cannot, short of editing the file) is forgotten.
   */
  leftoverStatuses(): LeftoverStatus[] {
    const owners = this.#prepare<[], { owner: string }>(
      "SELECT DISTINCT owner FROM entries WHERE status IS NOT NULL",
    )
      .all()
      .map((row) => row.owner);
    const rows = this.#gone(owners).flatMap((owner) =>
      this.#prepare<[string], StatusRow>(
        "SELECT id, profile, platform, state, status, previews FROM entries WHERE owner = ? AND status IS NOT NULL",
      ).all(owner),
    );
    rows.sort((a, b) => a.id - b.id);
    return rows.flatMap((row) => {
      const status = parseJson(row.status);
      if (!isStatusRecord(status)) {
        this.statusGone(row.id);
        return [];
      }
      return [
        {
          entryId: row.id,
          profile: row.profile,
          platform: row.platform,
          state: row.state,
          target: status.target,
          messageId: status.messageId,
          previews: previewIds(row.previews),
        },
      ];
    });
  }

  /**
   * Hands this owner's unfinished entries, pending replies and status messages still showing to
   * whoever starts next.
   */
  release(): number {
    return this.#transactions.immediate(() => {
      const entries = this.#prepare(
        "UPDATE entries SET owner = ? WHERE owner = ? AND (state <> 'done' OR status IS NOT NULL)",
      ).run(ReleasedOwner, this.#owner).changes;
      const replies = this.#prepare(
        "UPDATE replies SET owner = ? WHERE owner = ? AND state = 'pending'",
      ).run(ReleasedOwner, this.#owner).changes;
      return entries + replies;
    });
  }

  takeOver(nowMs: number): JournalEntry[] {
    return this.#transactions.immediate(() => {
      const owners = this.#prepare<[], { owner: string }>(
        "SELECT DISTINCT owner FROM entries WHERE state <> 'done'",
      )
        .all()
        .map((row) => row.owner);
      const taken: EntryRow[] = [];
      const take = this.#prepare<[string, string], EntryRow>(
        `UPDATE entries SET owner = ? WHERE owner = ? AND state <> 'done'
           RETURNING id, key, state, owner, message, received_at, started_at`,
      );
      for (const gone of this.#gone(owners)) taken.push(...take.all(this.#owner, gone));
      taken.sort((a, b) => a.id - b.id);
      return taken.flatMap((row) => this.#entryOf(row, nowMs));
    });
  }

  /** A row whose message cannot be read is closed as `failed` instead of blocking every start. */
  #entryOf(row: EntryRow, nowMs: number): JournalEntry[] {
    const message = parseJson(row.message);
    if (!isInboundMessage(message)) {
      this.finished(row.id, "failed", nowMs);
      return [];
    }
    return [
      {
        id: row.id,
        key: row.key,
        state: row.state,
        owner: row.owner,
        message,
        receivedAtMs: row.received_at,
        startedAtMs: row.started_at ?? undefined,
      },
    ];
  }

  cursors(profile: string): ChatCursor[] {
    return this.#prepare<[string], { channel_id: string; last_message_id: string }>(
      "SELECT channel_id, last_message_id FROM cursors WHERE profile = ? ORDER BY channel_id",
    )
      .all(profile)
      .map((row) => ({ channelId: row.channel_id, lastMessageId: row.last_message_id }));
  }

  /** `merged`: the other entries the reply answers (a collected turn), closed with it. */
  addReply(
    reply: OutboxReply,
    entryId: number | undefined,
    merged: readonly number[],
    outcome: JournalOutcome,
    nowMs: number,
  ): OutboxRecord {
    const id = randomUUID();
    this.#transactions.immediate(() => {
      this.#prepare(
        `INSERT INTO replies (id, entry_id, profile, platform, session_key, slot, target, text,
                                  state, owner, attempts, created_at, not_before, plain)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, 0, ?, 0, ?)`,
      ).run(
        id,
        entryId ?? null,
        reply.profile,
        reply.platform,
        reply.sessionKey,
        reply.slot,
        JSON.stringify(reply.target),
        reply.text,
        this.#owner,
        nowMs,
        reply.plain === true ? 1 : 0,
      );
      const close = this.#prepare(
        "UPDATE entries SET state = 'done', outcome = ?, finished_at = ? WHERE id = ? AND state <> 'done'",
      );
      for (const id of entryId === undefined ? merged : [entryId, ...merged])
        close.run(outcome, nowMs, id);
    });
    return {
      ...reply,
      id,
      entryId,
      state: "pending",
      owner: this.#owner,
      steps: new Map(),
      attempts: 0,
      createdAtMs: nowMs,
      notBeforeMs: 0,
      lastError: undefined,
    };
  }

  step(replyId: string, key: string, result: StepResult, nowMs: number): void {
    this.#transactions.immediate(() => {
      this.#requireReply(replyId);
      this.#prepare(
        `INSERT INTO reply_steps (reply_id, key, result, recorded_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (reply_id, key) DO UPDATE
               SET result = excluded.result, recorded_at = excluded.recorded_at`,
      ).run(replyId, key, result, nowMs);
    });
  }

  /** Records the reply's media plan (before its first send). */
  setPlan(replyId: string, plan: PlanRecord): void {
    this.#updateReply(replyId, "UPDATE replies SET plan = ? WHERE id = ?", [JSON.stringify(plan)]);
  }

  attempt(replyId: string): void {
    this.#updateReply(replyId, "UPDATE replies SET attempts = attempts + 1 WHERE id = ?", []);
  }

  reschedule(replyId: string, notBeforeMs: number, error: string): void {
    this.#updateReply(replyId, "UPDATE replies SET not_before = ?, last_error = ? WHERE id = ?", [
      Math.trunc(notBeforeMs),
      storableText(error),
    ]);
  }

  closeReply(
    replyId: string,
    state: "delivered" | "given_up",
    error: string | undefined,
    nowMs: number,
  ): void {
    this.#updateReply(
      replyId,
      "UPDATE replies SET state = ?, last_error = coalesce(?, last_error), closed_at = ? WHERE id = ?",
      [state, error === undefined ? null : storableText(error), nowMs],
    );
  }

  #requireReply(replyId: string): void {
    const row = this.#prepare("SELECT 1 FROM replies WHERE id = ?").get(replyId);
    if (row === undefined) throw new Error(`no outbox reply ${replyId}`);
  }

  #updateReply(replyId: string, sql: string, params: readonly (string | number | null)[]): void {
    const { changes } = this.#prepare(sql).run(...params, replyId);
    if (changes === 0) throw new Error(`no outbox reply ${replyId}`);
  }

  replies(limit: number, id: string | undefined, entryId?: number): OutboxRecord[] {
    const rows =
      id !== undefined
        ? this.#prepare<[string], ReplyRow>("SELECT * FROM replies WHERE id = ?").all(id)
        : entryId !== undefined
          ? this.#prepare<[number], ReplyRow>(
              "SELECT * FROM replies WHERE entry_id = ? ORDER BY rowid",
            ).all(entryId)
          : this.#prepare<[number], ReplyRow>(
              "SELECT * FROM replies ORDER BY created_at DESC, rowid DESC LIMIT ?",
            ).all(limit);
    return rows.map((row) => this.#replyOf(row));
  }

  takeOverReplies(): OutboxRecord[] {
    return this.#transactions.immediate(() => {
      const owners = this.#prepare<[], { owner: string }>(
        "SELECT DISTINCT owner FROM replies WHERE state = 'pending'",
      )
        .all()
        .map((row) => row.owner);
      const take = this.#prepare<[string, string], ReplyRow & { seq: number }>(
        "UPDATE replies SET owner = ? WHERE owner = ? AND state = 'pending' RETURNING *, rowid AS seq",
      );
      const taken = this.#gone(owners).flatMap((gone) => take.all(this.#owner, gone));
      taken.sort((a, b) => a.created_at - b.created_at || a.seq - b.seq);
      return taken.map((row) => this.#replyOf(row));
    });
  }

  pendingReplySlots(profile: string): string[] {
    return this.#prepare<[string], { slot: string }>(
      "SELECT DISTINCT slot FROM replies WHERE state = 'pending' AND profile = ?",
    )
      .all(profile)
      .map((row) => row.slot);
  }

  #replyOf(row: ReplyRow): OutboxRecord {
    const target = parseJson(row.target);
    if (!isChatTarget(target)) throw new Error(`outbox reply ${row.id} has no valid target`);
    const steps = new Map(
      this.#prepare<[string], { key: string; result: StepResult }>(
        "SELECT key, result FROM reply_steps WHERE reply_id = ? ORDER BY rowid",
      )
        .all(row.id)
        .map((step) => [step.key, step.result] as const),
    );
    // A plan that does not read back (it cannot, short of editing the file) is planned anew.
    const plan = row.plan === null ? undefined : parseJson(row.plan);
    return {
      id: row.id,
      entryId: row.entry_id ?? undefined,
      profile: row.profile,
      platform: row.platform,
      sessionKey: row.session_key,
      slot: row.slot,
      target,
      text: row.text,
      state: row.state,
      owner: row.owner,
      steps,
      attempts: row.attempts,
      createdAtMs: row.created_at,
      notBeforeMs: row.not_before,
      lastError: row.last_error ?? undefined,
      plan: isPlanRecord(plan) ? plan : undefined,
      ...(row.plain === 1 ? { plain: true } : {}),
    };
  }

  prune(olderThanMs: number): number {
    return this.#transactions.immediate(() => {
      this.#prepare(
        `DELETE FROM receipts WHERE entry_id IN
               (SELECT id FROM entries WHERE state = 'done' AND finished_at < ?)`,
      ).run(olderThanMs);
      const entries = this.#prepare(
        "DELETE FROM entries WHERE state = 'done' AND finished_at < ?",
      ).run(olderThanMs).changes;
      this.#prepare(
        `DELETE FROM reply_steps WHERE reply_id IN
               (SELECT id FROM replies WHERE state <> 'pending' AND closed_at < ?)`,
      ).run(olderThanMs);
      const replies = this.#prepare(
        "DELETE FROM replies WHERE state <> 'pending' AND closed_at < ?",
      ).run(olderThanMs).changes;
      return entries + replies;
    });
  }

  /** Closes the database (the last connection checkpoints the WAL). Safe to call twice. */
  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

/** The worker thread's entry point (see sqlite/database-worker.ts). */
export function openInWorker(path: string, settings: JournalDatabaseSettings): JournalDatabase {
  return JournalDatabase.open(path, settings);
}
