import { randomUUID } from "node:crypto";
import { type Sleep, sleep } from "@mediagate/io";
import type { PlanRecord } from "@mediagate/media";
import { currentInstanceId, type InstanceId } from "@mediagate/sandbox/instance";
import type pg from "pg";
import type { ChatCursor, InboundMessage, StepResult } from "../channels/types.js";
import { Defaults } from "../defaults.js";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { PostgresStoreError } from "../postgres/errors.js";
import { migratePostgres } from "../postgres/migrate.js";
import { CallOrder } from "./call-order.js";
import { StorageError } from "./errors.js";
import {
  idList,
  isStatusRecord,
  journalKey,
  parseJson,
  previewIds,
  ReleasedOwner,
  receiptIdsOf,
  receiptKey,
  Snowflake,
} from "./journal-records.js";
import {
  type EntryRow,
  entryOf,
  findReceipts,
  type Int8,
  type ReceiptRow,
  type ReplyRow,
  receiptEntries,
  repliesOf,
  statusGone,
} from "./postgres-journal-rows.js";
import { JournalComponent, POSTGRES_JOURNAL_MIGRATIONS } from "./postgres-journal-schema.js";
import {
  afterOwnerGrace,
  goneOwners,
  handedOwner,
  lockHolderOf,
  OwnerLock,
} from "./postgres-owner.js";
import { type LeasedSession, SessionLeaseLostError, type SessionLeases } from "./session-leases.js";
import type {
  Journal,
  JournalEntry,
  JournalOutcome,
  JournalState,
  LeftoverStatus,
  OutboxRecord,
  OutboxReply,
  RecordResult,
  StatusRecord,
} from "./types.js";

/** Options of {@link PostgresJournal.open}. */
export interface PostgresJournalOptions {
  /** Clock for the recorded times. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Who owns what this journal records (tests hand in another process's id). Default
   * `currentInstanceId()`.
   */
  readonly owner?: InstanceId;
  /**
   * How long after the server started a takeover waits before it judges owners gone.
   * Default `Defaults.postgres.ownerGraceMs`.
   */
  readonly ownerGraceMs?: number;
  /** How that wait is waited. Default: a timer. */
  readonly sleep?: Sleep;
  /**
   * The session leases replies are fenced by (docs/cluster.md): a reply of a session whose
   * lease this process held and lost is refused. Default: none (one process).
   */
  readonly fence?: SessionLeases;
}

/** Defaults of {@link PostgresJournalOptions}. */
export const PostgresJournalDefaults = {
  now: Date.now,
  ownerGraceMs: Defaults.postgres.ownerGraceMs,
  sleep,
} as const satisfies Required<Omit<PostgresJournalOptions, "owner" | "fence">>;

/** How often a `record` that lost a race on a receipt to another process is run again. */
const RecordAttempts = 3;
/** Keys kept in `#uncertain` at most; past it, the set starts again (outages are rare and short). */
const UncertainLimit = 10_000;
/** SQLSTATE `unique_violation`: another process recorded one of the receipts meanwhile. */
const UniqueViolation = "23505";

/**
 * The {@link Journal} on PostgreSQL: the same records and the same rules as `SqliteJournal`,
 * statement by statement, in the schema `journal` of a database the gateway's
 * {@link PostgresDatabase} points at (docs/durability.md, "The journal on PostgreSQL"). Every call is
 * asynchronous network I/O on the database's bounded pool, bounded by its timeouts. Calls that
 * concern one entry, one reply or one chat run in the order they were made; others run beside
 * them. Every failure rejects with {@link StorageError} (its `cause` the
 * `PostgresStoreError`, whose `unreachable` tells an outage from other failures).
 *
 * Who is gone: each owner (a process's instance id) holds a session-level advisory lock for as
 * long as it has a journal open ({@link OwnerLock}); an owner whose lock is free is gone, on any
 * host.
 */
export class PostgresJournal implements Journal {
  /** The owner this process records and takes over with. */
  readonly owner: InstanceId;
  /** `PostgreSQL host:port/database`, in errors. */
  readonly where: string;
  readonly #database: PostgresDatabase;
  readonly #lock: OwnerLock;
  readonly #now: () => number;
  readonly #order = new CallOrder();
  /**
   * Keys of messages whose `record` failed with the server unreachable: its COMMIT may have
   * gone through unheard (see {@link #committedUnseen}).
   */
  readonly #uncertain = new Set<string>();
  /** The server's `synchronous_commit` at open: `off` is the one setting a commit is not durable under. */
  readonly #asyncCommit: boolean;
  readonly #ownerGraceMs: number;
  readonly #sleep: Sleep;
  readonly #fence: SessionLeases | undefined;
  /**
   * Replies this process recorded in a leased turn: their sends are fenced by that lease;
   * `lost` once refused, until this process takes the reply over again.
   */
  readonly #leasedReplies = new Map<string, { session: LeasedSession; lost: boolean }>();
  /** Fenced replies refused, to give back to the cluster once the database takes the write. */
  readonly #repliesToGiveBack = new Set<string>();
  #closed: Promise<void> | undefined;

  private constructor(
    database: PostgresDatabase,
    owner: InstanceId,
    lock: OwnerLock,
    asyncCommit: boolean,
    settings: Required<Omit<PostgresJournalOptions, "owner" | "fence">>,
    fence: SessionLeases | undefined,
  ) {
    this.#database = database;
    this.owner = owner;
    this.where = `PostgreSQL ${database.where}`;
    this.#lock = lock;
    this.#asyncCommit = asyncCommit;
    this.#now = settings.now;
    this.#ownerGraceMs = settings.ownerGraceMs;
    this.#sleep = settings.sleep;
    this.#fence = fence;
  }

  /**
   * Migrates the journal's schema on `database` (under the migrations' lock) and takes this
   * owner's lock. Rejects with the database's errors as they are: `PostgresSchemaError` for a
   * schema newer than this build, `PostgresStoreError` for a server that cannot be reached,
   * `OwnerTakenError` for an owner another connection holds. The database stays the caller's:
   * {@link close} does not close it.
   */
  static async open(
    database: PostgresDatabase,
    options: PostgresJournalOptions = {},
  ): Promise<PostgresJournal> {
    const settings = { ...PostgresJournalDefaults, ...options };
    const owner = options.owner ?? currentInstanceId();
    await migratePostgres(database, JournalComponent, POSTGRES_JOURNAL_MIGRATIONS);
    const mode = await database.query<{ mode: string }>(
      "open",
      "SELECT current_setting('synchronous_commit') AS mode",
    );
    const lock = await OwnerLock.acquire(database, owner);
    return new PostgresJournal(
      database,
      owner,
      lock,
      mode.rows[0]?.mode === "off",
      settings,
      options.fence,
    );
  }

  /** A server has no damaged file of ours to report: its own failures are errors of the calls. */
  get damage(): StorageError | undefined {
    return undefined;
  }

  /** Whether this process holds its owner lock right now (not while reconnecting after a loss). */
  get ownerHeld(): boolean {
    return this.#lock.held;
  }

  record(message: InboundMessage): Promise<RecordResult> {
    const nowMs = this.#now();
    const chat = `chat:${message.profile}:${message.platform}:${message.chatId}`;
    const key = journalKey(message);
    return this.#call("record", [chat], async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          const result = await this.#record(this.#query("record"), message, nowMs);
          this.#uncertain.delete(key);
          return result;
        } catch (error) {
          if (error instanceof PostgresStoreError && error.unreachable) {
            if (this.#uncertain.size >= UncertainLimit) this.#uncertain.clear();
            this.#uncertain.add(key);
          }
          if (attempt >= RecordAttempts || sqlState(error) !== UniqueViolation) throw error;
        }
      }
    });
  }

  /**
   * One statement (one round trip, one commit): moves a Discord chat's cursor, looks the
   * receipts up and, when none is recorded, inserts the entry and all its receipts.
   */
  async #record(tx: Queryable, message: InboundMessage, nowMs: number): Promise<RecordResult> {
    const ids = receiptIdsOf(message);
    const keys = ids.map((id) => receiptKey(message.profile, message.platform, id));
    const cursor = message.platform === "discord" && Snowflake.test(message.messageId);
    const result = await tx.query<{ inserted: Int8 | null; found: ReceiptRow[] }>(
      `WITH cursor_moved AS (
         INSERT INTO journal.cursors AS c (profile, channel_id, last_message_id, updated_at)
           SELECT $3, $8::text, $9, $7 WHERE $8::text IS NOT NULL
           ON CONFLICT (profile, channel_id) DO UPDATE
             SET last_message_id = excluded.last_message_id, updated_at = excluded.updated_at
             WHERE CASE WHEN c.last_message_id ~ '^[0-9]{1,20}$'
                        THEN c.last_message_id::numeric < excluded.last_message_id::numeric
                        ELSE true END
       ), found AS (
         SELECT key, entry_id, whole FROM journal.receipts WHERE key = ANY($1::text[])
       ), inserted AS (
         INSERT INTO journal.entries (key, profile, platform, state, owner, message, received_at)
           SELECT $2, $3, $4, 'received', $5, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM found)
           RETURNING id
       ), receipts AS (
         INSERT INTO journal.receipts (key, entry_id)
           SELECT receipt, inserted.id FROM inserted, unnest($1::text[]) AS receipt
       )
       SELECT (SELECT id FROM inserted) AS inserted,
              coalesce((SELECT json_agg(found) FROM found), '[]'::json) AS found`,
      [
        keys,
        journalKey(message),
        message.profile,
        message.platform,
        this.owner,
        JSON.stringify(message),
        nowMs,
        cursor ? (message.threadId ?? message.chatId) : null,
        cursor ? message.messageId : null,
      ],
    );
    const row = result.rows[0];
    if (row?.inserted !== null && row?.inserted !== undefined) {
      return { id: Number(row.inserted), fresh: true };
    }
    const receipts = receiptEntries(keys, row?.found ?? []);
    const known = receipts.find((receipt) => receipt !== undefined);
    if (known === undefined) throw new Error("the entry was neither found nor inserted");
    const unrecorded = ids.filter((_, i) => receipts[i] === undefined);
    if (unrecorded.length > 0) return { id: known, fresh: false, unrecorded };
    return { id: known, fresh: await this.#committedUnseen(tx, message, known) };
  }

  /**
   * Whether entry `id`, found for `message`, is one an earlier `record` of this process
   * committed without hearing so (the connection was lost after its COMMIT went out): the
   * caller was told it failed and did not run it, so it is fresh now. Only while it is still
   * this process's and `received`.
   */
  async #committedUnseen(tx: Queryable, message: InboundMessage, id: number): Promise<boolean> {
    if (!this.#uncertain.has(journalKey(message))) return false;
    const entry = await tx.query<{ owner: string; state: JournalState }>(
      "SELECT owner, state FROM journal.entries WHERE id = $1",
      [id],
    );
    return entry.rows[0]?.owner === this.owner && entry.rows[0]?.state === "received";
  }

  recorded(
    profile: string,
    platform: InboundMessage["platform"],
    receiptIds: readonly string[],
  ): Promise<string[]> {
    return this.#call("recorded", [], async () => {
      const receipts = await findReceipts(this.#query("recorded"), profile, platform, receiptIds);
      return receiptIds.filter((_, i) => receipts[i] !== undefined);
    });
  }

  /**
   * With `synchronous_commit` on (the server's default, or `local`, `remote_write`,
   * `remote_apply`), a commit was flushed to the server's disk before it was answered: there is
   * nothing left to sync. Under `off`, one transaction that writes and commits with it on
   * flushes the server's write-ahead log up to there, and so everything committed before it.
   */
  sync(): Promise<void> {
    return this.#call("sync", [], async () => {
      if (!this.#asyncCommit) return;
      await this.#database.transaction("sync", async (tx) => {
        await tx.query("SET LOCAL synchronous_commit = on");
        // A commit flushes the log only when its transaction wrote some: one row's no-op update.
        await tx.query("UPDATE mediagate_schema SET updated_at = updated_at WHERE component = $1", [
          JournalComponent,
        ]);
      });
    });
  }

  /**
   * With `session` and session leases, fenced: refused with `SessionLeaseLostError` (as the
   * cause) unless this process still holds the session's lease, by its clock and with the
   * token it claimed it with, so a stale holder never starts a turn another replica took over.
   */
  started(ids: number | readonly number[], session?: LeasedSession): Promise<void> {
    const nowMs = this.#now();
    const fence = session === undefined ? undefined : this.#fence;
    return this.#call("started", entryKeys(idList(ids)), async () => {
      const write = async (tx: Queryable) => {
        await tx.query(
          `UPDATE journal.entries SET state = 'started', started_at = $1
             WHERE id = ANY($2::bigint[]) AND state = 'received'`,
          [nowMs, idList(ids)],
        );
      };
      if (fence === undefined || session === undefined) return write(this.#query("started"));
      await this.#database.transaction("started", async (tx) => {
        await fence.fence(tx, session, "starting the turn");
        await write(tx);
      });
    });
  }

  /**
   * The first outcome stays: an entry already `done` (by `addReply`) is left as it is. Fenced
   * by ownership: only entries this process still owns are closed, so a stale holder's late
   * close never touches an entry it gave back, handed over or had taken over (docs/cluster.md).
   */
  finished(ids: number | readonly number[], outcome: JournalOutcome): Promise<void> {
    const nowMs = this.#now();
    return this.#call("finished", entryKeys(idList(ids)), async () => {
      await this.#query("finished").query(
        `UPDATE journal.entries SET state = 'done', outcome = $1, finished_at = $2
           WHERE id = ANY($3::bigint[]) AND state <> 'done' AND owner = $4`,
        [outcome, nowMs, idList(ids), this.owner],
      );
    });
  }

  /**
   * Entries not `done` whose owner is gone (its lock is free, on any host), re-owned by this
   * process in one transaction, oldest first. Rows another process is taking over at the same
   * moment are skipped (`FOR UPDATE SKIP LOCKED`), and so is an owner whose lock that process
   * holds while it judges it: no entry goes to two processes.
   */
  takeOver(): Promise<JournalEntry[]> {
    const nowMs = this.#now();
    return this.#takeOverRows<EntryRow, JournalEntry>(
      "takeOver",
      "journal.entries",
      "state <> 'done'",
      "id, key, state, owner, message, received_at, started_at",
      async (tx, taken) => {
        const rows = [...taken].sort((a, b) => Number(a.id) - Number(b.id));
        const entries: JournalEntry[] = [];
        for (const row of rows) {
          const entry = entryOf(row);
          if (entry !== undefined) entries.push(entry);
          else {
            // A row whose message cannot be read is closed as `failed` instead of blocking every start.
            await tx.query(
              "UPDATE journal.entries SET state = 'done', outcome = 'failed', finished_at = $1 WHERE id = $2",
              [nowMs, row.id],
            );
          }
        }
        return entries;
      },
    );
  }

  /**
   * Hands entries this process recorded to `holder`, the live process holding their session
   * (docs/cluster.md): it picks them up with {@link takeHandedOver}; when it dies first,
   * {@link takeOver} gives them to whoever takes its work. `recovered`: this process took them
   * over from the journal (accepted before), so the holder does not hold them to its queue's
   * cap; others come to it {@link JournalEntry.handed}. Resolves with the ids handed.
   */
  handOver(ids: readonly number[], holder: string, recovered = false): Promise<number[]> {
    return this.#call("handOver", entryKeys(ids), async () => {
      const handed = await this.#query("handOver").query<{ id: Int8 }>(
        `UPDATE journal.entries SET owner = $1
           WHERE id = ANY($2::bigint[]) AND owner = $3 AND state <> 'done' RETURNING id`,
        [handedOwner(holder, recovered), ids, this.owner],
      );
      return handed.rows.map((row) => Number(row.id));
    });
  }

  /**
   * Gives entries of this process back to the cluster (owner `released`, as a stop leaves
   * them): whichever process takes over next runs them, or tells their chat a turn was cut
   * off. For a session whose lease this process lost (docs/cluster.md).
   */
  releaseEntries(ids: readonly number[]): Promise<number> {
    return this.#call("releaseEntries", entryKeys(ids), async () => {
      const released = await this.#query("releaseEntries").query(
        `UPDATE journal.entries SET owner = $1
           WHERE id = ANY($2::bigint[]) AND owner = $3 AND state <> 'done'`,
        [ReleasedOwner, ids, this.owner],
      );
      return released.rowCount ?? 0;
    });
  }

  /**
   * Entries other processes handed to this one ({@link handOver}), now its own, oldest first;
   * those handed as just received are {@link JournalEntry.handed}.
   */
  takeHandedOver(): Promise<JournalEntry[]> {
    return this.#call("takeHandedOver", [], async () => {
      const taken = await this.#query("takeHandedOver").query<EntryRow & { handed: boolean }>(
        `UPDATE journal.entries e SET owner = $1
           FROM (SELECT id, owner FROM journal.entries
                   WHERE owner = ANY($2::text[]) AND state <> 'done' FOR UPDATE SKIP LOCKED) h
           WHERE e.id = h.id
           RETURNING e.id, e.key, e.state, e.owner, e.message, e.received_at, e.started_at,
                     h.owner = $3 AS handed`,
        [
          this.owner,
          [handedOwner(this.owner), handedOwner(this.owner, true)],
          handedOwner(this.owner),
        ],
      );
      return [...taken.rows]
        .sort((a, b) => Number(a.id) - Number(b.id))
        .flatMap((row) => {
          const entry = entryOf(row);
          if (entry === undefined) return [];
          return row.handed ? [{ ...entry, handed: true }] : [entry];
        });
    });
  }

  /**
   * The open entries of one session older than entry `beforeId` (received before it), for the
   * session's holder about to run that entry (docs/cluster.md, "Each session's messages in
   * order"). `profile`, `platform` and `chatId` narrow the rows read (no `chatId`: every chat
   * of the platform, for sessions of several chats at once); `sameSession` says whether a
   * message is the session's (or one of them). In one transaction, oldest first, it re-owns those
   * handed to this process, given back to the cluster (`released`), left by a gone owner (but
   * not one whose status message still shows: the take-over clears it first), or this
   * process's own listed in `reclaim` (turns cut off by a lost lease, not given back yet), and
   * resolves with them as `taken`; the others (this process's own, a live owner's, or those
   * left to the take-over) are `waiting`, with their owner.
   */
  takeOlder(query: {
    readonly profile: string;
    readonly platform: string;
    readonly chatId: string | undefined;
    readonly beforeId: number;
    readonly sameSession: (message: InboundMessage) => boolean;
    readonly reclaim?: ReadonlySet<number>;
  }): Promise<{ taken: JournalEntry[]; waiting: { id: number; owner: string }[] }> {
    return this.#call("takeOlder", [], async () => {
      const open = await this.#query("takeOlder").query<EntryRow>(
        `SELECT id, key, state, owner, message, received_at, started_at FROM journal.entries
           WHERE profile = $1 AND platform = $2 AND id < $3 AND state <> 'done' ORDER BY id`,
        [query.profile, query.platform, query.beforeId],
      );
      const ids = open.rows
        .filter((row) => {
          const entry = entryOf(row);
          if (entry === undefined) return false;
          if (query.chatId !== undefined && entry.message.chatId !== query.chatId) return false;
          return query.sameSession(entry.message);
        })
        .map((row) => Number(row.id));
      if (ids.length === 0) return { taken: [], waiting: [] };
      return this.#database.transaction("takeOlder", async (tx) => {
        const rows = await tx.query<EntryRow & { shown: boolean }>(
          `SELECT id, key, state, owner, message, received_at, started_at,
                  status IS NOT NULL AS shown
             FROM journal.entries WHERE id = ANY($1::bigint[]) AND state <> 'done'
             ORDER BY id FOR UPDATE`,
          [ids],
        );
        const foreign = [
          ...new Set(rows.rows.filter((row) => !row.shown).map((row) => row.owner)),
        ].filter((owner) => owner !== this.owner && lockHolderOf(owner) !== this.owner);
        const gone = new Set(await this.#gone(tx, foreign));
        const taken: JournalEntry[] = [];
        const waiting: { id: number; owner: string }[] = [];
        for (const row of rows.rows) {
          const id = Number(row.id);
          // A gone owner's entry whose status message still shows is left to the round's
          // take-over, which clears that message first (gateway/recovery.ts).
          const handed = row.owner === handedOwner(this.owner);
          const ours =
            handed ||
            row.owner === handedOwner(this.owner, true) ||
            (gone.has(row.owner) && !row.shown) ||
            (row.owner === this.owner && query.reclaim?.has(id) === true);
          const entry = entryOf(row);
          if (!ours) waiting.push({ id, owner: row.owner });
          else if (entry !== undefined)
            taken.push({ ...entry, owner: this.owner, ...(handed ? { handed: true } : {}) });
          else {
            // Unreadable, as takeOver closes it: it must not hold the session's turns back.
            await tx.query(
              "UPDATE journal.entries SET state = 'done', outcome = 'failed', finished_at = $1 WHERE id = $2",
              [this.#now(), id],
            );
          }
        }
        if (taken.length > 0) {
          await tx.query("UPDATE journal.entries SET owner = $1 WHERE id = ANY($2::bigint[])", [
            this.owner,
            taken.map((entry) => entry.id),
          ]);
        }
        return { taken, waiting };
      });
    });
  }

  /** Fenced by ownership as {@link finished} is: a stale holder never overwrites the new one's. */
  statusShown(entryId: number, status: StatusRecord): Promise<void> {
    return this.#call("statusShown", entryKeys([entryId]), async () => {
      await this.#query("statusShown").query(
        "UPDATE journal.entries SET status = $1 WHERE id = $2 AND owner = $3",
        [
          JSON.stringify({ target: status.target, messageId: status.messageId }),
          entryId,
          this.owner,
        ],
      );
    });
  }

  /** Fenced by ownership as {@link finished} is. */
  previewsShown(entryId: number, messageIds: readonly string[]): Promise<void> {
    return this.#call("previewsShown", entryKeys([entryId]), async () => {
      await this.#query("previewsShown").query(
        "UPDATE journal.entries SET previews = $1 WHERE id = $2 AND owner = $3",
        [JSON.stringify(messageIds), entryId, this.owner],
      );
    });
  }

  statusGone(entryId: number): Promise<void> {
    return this.#call("statusGone", entryKeys([entryId]), () =>
      statusGone(this.#query("statusGone"), entryId),
    );
  }

  /**
   * Status messages recorded with entries of gone owners, oldest first. One that does not read
   * back (it cannot, short of editing the table) is forgotten.
   */
  leftoverStatuses(): Promise<LeftoverStatus[]> {
    return this.#withGoneOwners(
      "leftoverStatuses",
      "SELECT DISTINCT owner FROM journal.entries WHERE status IS NOT NULL",
      [],
      async (tx, gone) => {
        const rows = await tx.query<{
          id: Int8;
          profile: string;
          platform: InboundMessage["platform"];
          state: JournalState;
          status: string;
          previews: string | null;
        }>(
          `SELECT id, profile, platform, state, status, previews FROM journal.entries
             WHERE owner = ANY($1::text[]) AND status IS NOT NULL ORDER BY id`,
          [gone],
        );
        const leftovers: LeftoverStatus[] = [];
        for (const row of rows.rows) {
          const status = parseJson(row.status);
          if (!isStatusRecord(status)) {
            await statusGone(tx, Number(row.id));
            continue;
          }
          leftovers.push({
            entryId: Number(row.id),
            profile: row.profile,
            platform: row.platform,
            state: row.state,
            target: status.target,
            messageId: status.messageId,
            previews: previewIds(row.previews),
          });
        }
        return leftovers;
      },
    );
  }

  cursors(profile: string): Promise<ChatCursor[]> {
    return this.#call("cursors", [], async () => {
      // Ordered as SQLite orders text (by code point), whatever the database's collation.
      const rows = await this.#query("cursors").query<{
        channel_id: string;
        last_message_id: string;
      }>(
        `SELECT channel_id, last_message_id FROM journal.cursors
           WHERE profile = $1 ORDER BY channel_id COLLATE "C"`,
        [profile],
      );
      return rows.rows.map((row) => ({
        channelId: row.channel_id,
        lastMessageId: row.last_message_id,
      }));
    });
  }

  addReply(
    reply: OutboxReply,
    entryId: number | undefined,
    merged: readonly number[] = [],
    outcome: JournalOutcome = "replied",
  ): Promise<OutboxRecord> {
    const nowMs = this.#now();
    const id = randomUUID();
    const closed = entryId === undefined ? merged : [entryId, ...merged];
    const leased = typeof this.#fence?.fenceOf(reply) === "object";
    return this.#call("addReply", [...entryKeys(closed), `reply:${id}`], async () => {
      await this.#database.transaction("addReply", async (tx) => {
        await this.#fence?.fence(tx, reply, "addReply");
        await tx.query(
          `INSERT INTO journal.replies (id, entry_id, profile, platform, session_key, slot, target,
                                        text, state, owner, attempts, created_at, not_before,
                                        plain)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, 0, $10, 0, $11)`,
          [
            id,
            entryId ?? null,
            reply.profile,
            reply.platform,
            reply.sessionKey,
            reply.slot,
            JSON.stringify(reply.target),
            JSON.stringify(reply.text),
            this.owner,
            nowMs,
            reply.plain === true,
          ],
        );
        if (closed.length > 0) {
          await tx.query(
            `UPDATE journal.entries SET state = 'done', outcome = $3, finished_at = $1
               WHERE id = ANY($2::bigint[]) AND state <> 'done'`,
            [nowMs, closed, outcome],
          );
        }
      });
      if (leased) {
        const session = { profile: reply.profile, sessionKey: reply.sessionKey };
        this.#leasedReplies.set(id, { session, lost: false });
      }
      return {
        ...reply,
        id,
        entryId,
        state: "pending",
        owner: this.owner,
        steps: new Map(),
        attempts: 0,
        createdAtMs: nowMs,
        notBeforeMs: 0,
        lastError: undefined,
      };
    });
  }

  /**
   * Whether this process may send reply `replyId` now: refused with `SessionLeaseLostError`
   * (as the cause) for a reply it recorded in a leased turn whose lease it no longer holds, by
   * its clock or on the database (the token moved on). The reply is then given back to the
   * cluster (owner `released`, once the database takes the write), so the replica that takes
   * it over sends it, never this one and that one both. Replies taken over are not fenced.
   */
  fenceReply(replyId: string): Promise<void> {
    return this.#call("fenceReply", [`reply:${replyId}`], async () => {
      await this.#fenceReply(this.#query("fenceReply"), replyId, "sending the reply");
    });
  }

  async #fenceReply(tx: Queryable, replyId: string, operation: string): Promise<void> {
    const leased = this.#leasedReplies.get(replyId);
    if (leased === undefined || this.#fence === undefined) return;
    if (leased.lost) throw new SessionLeaseLostError(leased.session, operation);
    try {
      await this.#fence.fence(tx, leased.session, operation);
    } catch (error) {
      if (!(error instanceof SessionLeaseLostError)) throw error;
      leased.lost = true;
      this.#repliesToGiveBack.add(replyId);
      await this.#giveBackReplies().catch(() => {});
      throw error;
    }
  }

  /** Gives the fenced replies refused back to the cluster; kept for the next try on failure. */
  async #giveBackReplies(): Promise<void> {
    if (this.#repliesToGiveBack.size === 0) return;
    const ids = [...this.#repliesToGiveBack];
    await this.#query("giveBackReplies").query(
      `UPDATE journal.replies SET owner = $1
         WHERE id = ANY($2::text[]) AND owner = $3 AND state = 'pending'`,
      [ReleasedOwner, ids, this.owner],
    );
    for (const id of ids) this.#repliesToGiveBack.delete(id);
  }

  /**
   * Records a step's result (a later result for the same key replaces it). A step of a fenced
   * reply is refused as {@link fenceReply} says, in the same transaction.
   */
  step(replyId: string, key: string, result: StepResult): Promise<void> {
    const nowMs = this.#now();
    return this.#call("step", [`reply:${replyId}`], async () => {
      if (this.#leasedReplies.has(replyId)) {
        await this.#database.transaction("step", async (tx) => {
          await this.#fenceReply(tx, replyId, "recording a reply step");
          await this.#writeStep(tx, replyId, key, result, nowMs);
        });
        return;
      }
      await this.#writeStep(this.#query("step"), replyId, key, result, nowMs);
    });
  }

  async #writeStep(
    tx: Queryable,
    replyId: string,
    key: string,
    result: StepResult,
    nowMs: number,
  ): Promise<void> {
    const written = await tx.query(
      `INSERT INTO journal.reply_steps (reply_id, key, result, recorded_at)
         SELECT $1::text, $2, $3, $4
           WHERE EXISTS (SELECT 1 FROM journal.replies WHERE id = $1::text)
         ON CONFLICT (reply_id, key) DO UPDATE
           SET result = excluded.result, recorded_at = excluded.recorded_at`,
      [replyId, key, result, nowMs],
    );
    if (written.rowCount === 0) throw new Error(`no outbox reply ${replyId}`);
  }

  clearStep(replyId: string, key: string): Promise<void> {
    return this.#call("clearStep", [`reply:${replyId}`], async () => {
      await this.#query("clearStep").query(
        "DELETE FROM journal.reply_steps WHERE reply_id = $1 AND key = $2",
        [replyId, key],
      );
    });
  }

  /** Records the reply's media plan (before its first send). */
  setPlan(replyId: string, plan: PlanRecord): Promise<void> {
    return this.#updateReply("setPlan", replyId, "plan = $1", [JSON.stringify(plan)]);
  }

  attempt(replyId: string): Promise<void> {
    return this.#updateReply("attempt", replyId, "attempts = attempts + 1", []);
  }

  reschedule(replyId: string, notBeforeMs: number, error: string): Promise<void> {
    return this.#updateReply("reschedule", replyId, "not_before = $1, last_error = $2", [
      Math.trunc(notBeforeMs),
      error,
    ]);
  }

  closeReply(replyId: string, state: "delivered" | "given_up", error?: string): Promise<void> {
    return this.#updateReply(
      "closeReply",
      replyId,
      "state = $1, last_error = coalesce($2, last_error), closed_at = $3",
      [state, error ?? null, this.#now()],
    );
  }

  #updateReply(
    operation: string,
    replyId: string,
    set: string,
    params: readonly (string | number | null)[],
  ): Promise<void> {
    return this.#call(operation, [`reply:${replyId}`], async () => {
      const { rowCount } = await this.#query(operation).query(
        `UPDATE journal.replies SET ${set} WHERE id = $${params.length + 1}`,
        [...params, replyId],
      );
      if (rowCount === 0) throw new Error(`no outbox reply ${replyId}`);
    });
  }

  /** Where entry `id` is and how it ended (for `doctor`, tests and support). */
  entryState(
    id: number,
  ): Promise<{ state: JournalState; outcome: string | null; mine: boolean } | undefined> {
    return this.#call("entryState", [], async () => {
      const rows = await this.#query("entryState").query<{
        state: JournalState;
        outcome: string | null;
        mine: boolean;
      }>("SELECT state, outcome, owner = $2 AS mine FROM journal.entries WHERE id = $1", [
        id,
        this.owner,
      ]);
      return rows.rows[0];
    });
  }

  /** Recent replies, newest first (or the one with `id`); only reads (the web console). */
  replies(query: { limit?: number; id?: string; entryId?: number }): Promise<OutboxRecord[]> {
    return this.#call("replies", [], async () => {
      const tx = this.#query("replies");
      const rows =
        query.id !== undefined
          ? await tx.query<ReplyRow>("SELECT * FROM journal.replies WHERE id = $1", [query.id])
          : query.entryId !== undefined
            ? await tx.query<ReplyRow>(
                "SELECT * FROM journal.replies WHERE entry_id = $1 ORDER BY seq",
                [query.entryId],
              )
            : await tx.query<ReplyRow>(
                "SELECT * FROM journal.replies ORDER BY created_at DESC, seq DESC LIMIT $1",
                [query.limit ?? 50],
              );
      return repliesOf(tx, rows.rows);
    });
  }

  /**
   * Pending replies whose owner is gone (or given back to the cluster), taken over by this
   * process, oldest first; first gives back the fenced replies refused ({@link fenceReply}).
   */
  async takeOverReplies(): Promise<OutboxRecord[]> {
    await this.#call("giveBackReplies", [], () => this.#giveBackReplies());
    const taken = await this.#takeOverRows<ReplyRow & { seq: Int8 }, OutboxRecord>(
      "takeOverReplies",
      "journal.replies",
      "state = 'pending'",
      "*",
      (tx, taken) => {
        const rows = [...taken].sort(
          (a, b) => Number(a.created_at) - Number(b.created_at) || Number(a.seq) - Number(b.seq),
        );
        return repliesOf(tx, rows);
      },
    );
    // Taken over, a reply is this process's to send as a restart's would be: not fenced.
    for (const reply of taken) this.#leasedReplies.delete(reply.id);
    return taken;
  }

  pendingReplySlots(profile: string): Promise<string[]> {
    return this.#call("pendingReplySlots", [], async () => {
      const rows = await this.#query("pendingReplySlots").query<{ slot: string }>(
        "SELECT DISTINCT slot FROM journal.replies WHERE state = 'pending' AND profile = $1",
        [profile],
      );
      return rows.rows.map((row) => row.slot);
    });
  }

  /**
   * Hands this owner's unfinished entries, pending replies and status messages still showing to
   * whoever starts next.
   */
  release(): Promise<number> {
    return this.#call("release", "all", () =>
      this.#database.transaction("release", async (tx) => {
        const entries = await tx.query(
          `UPDATE journal.entries SET owner = $1
             WHERE owner = $2 AND (state <> 'done' OR status IS NOT NULL)`,
          [ReleasedOwner, this.owner],
        );
        const replies = await tx.query(
          "UPDATE journal.replies SET owner = $1 WHERE owner = $2 AND state = 'pending'",
          [ReleasedOwner, this.owner],
        );
        return (entries.rowCount ?? 0) + (replies.rowCount ?? 0);
      }),
    );
  }

  /** Deletes `done` entries and closed replies older than `olderThanMs` (epoch ms). */
  prune(olderThanMs: number): Promise<number> {
    return this.#call("prune", "all", () =>
      this.#database.transaction("prune", async (tx) => {
        await tx.query(
          `DELETE FROM journal.receipts WHERE entry_id IN
             (SELECT id FROM journal.entries WHERE state = 'done' AND finished_at < $1)`,
          [olderThanMs],
        );
        const entries = await tx.query(
          "DELETE FROM journal.entries WHERE state = 'done' AND finished_at < $1",
          [olderThanMs],
        );
        await tx.query(
          `DELETE FROM journal.reply_steps WHERE reply_id IN
             (SELECT id FROM journal.replies WHERE state <> 'pending' AND closed_at < $1)`,
          [olderThanMs],
        );
        const replies = await tx.query(
          "DELETE FROM journal.replies WHERE state <> 'pending' AND closed_at < $1",
          [olderThanMs],
        );
        return (entries.rowCount ?? 0) + (replies.rowCount ?? 0);
      }),
    );
  }

  /**
   * Lets the calls made before it finish, then gives up this journal's share of the owner
   * lock (the last journal of the owner in this process unlocks it, and the owner is gone).
   * Later calls reject. Leaves the database open. Safe to call twice.
   */
  close(): Promise<void> {
    this.#closed ??= this.#order
      .run("all", () => Promise.resolve())
      .then(() => this.#lock.release());
    return this.#closed;
  }

  /**
   * Waits out the owners' grace after a server start (`afterOwnerGrace`), then runs `work` in
   * one transaction with the owners `ownersSql` lists (with `params`) that are gone, judged
   * under their locks (`goneOwners`); none gone, none run.
   */
  #withGoneOwners<T>(
    operation: string,
    ownersSql: string,
    params: readonly unknown[],
    work: (tx: Queryable, gone: string[]) => Promise<T[]>,
  ): Promise<T[]> {
    return this.#call(operation, "all", async () => {
      await afterOwnerGrace(this.#database, operation, this.#ownerGraceMs, this.#sleep);
      return this.#database.transaction(operation, async (tx) => {
        const owners = await tx.query<{ owner: string }>(ownersSql, params);
        const gone = await this.#gone(
          tx,
          owners.rows.map((row) => row.owner),
        );
        return gone.length === 0 ? [] : work(tx, gone);
      });
    });
  }

  /**
   * Re-owns the rows of `table` matching `open` (still to be handled) whose owner is gone,
   * and hands the rows (`returning`) to `use`. Rows another process takes over at the same
   * moment are skipped (`FOR UPDATE SKIP LOCKED`): no row goes to two processes.
   */
  #takeOverRows<Row extends pg.QueryResultRow, T>(
    operation: string,
    table: "journal.entries" | "journal.replies",
    open: string,
    returning: string,
    use: (tx: Queryable, taken: Row[]) => Promise<T[]>,
  ): Promise<T[]> {
    return this.#withGoneOwners(
      operation,
      `SELECT DISTINCT owner FROM ${table} WHERE ${open} AND owner <> $1`,
      [this.owner],
      async (tx, gone) => {
        const taken = await tx.query<Row>(
          `UPDATE ${table} SET owner = $1
             WHERE id IN (SELECT id FROM ${table}
                            WHERE owner = ANY($2::text[]) AND ${open}
                            FOR UPDATE SKIP LOCKED)
             RETURNING ${returning}`,
          [this.owner, gone],
        );
        return use(tx, taken.rows);
      },
    );
  }

  /**
   * {@link goneOwners}, less the owners whose process still holds a session lease (with
   * replicas: docs/cluster.md).
   */
  async #gone(tx: Queryable, owners: readonly string[]): Promise<string[]> {
    // The leases first: an owner still holding one is not tried (its lock is left alone, so a
    // replica restarting under its id meanwhile never finds it held by this transaction).
    const unleased =
      this.#fence === undefined
        ? owners
        : await this.#fence.withoutLiveHolders(tx, owners, lockHolderOf);
    return goneOwners(tx, unleased, this.owner);
  }

  /** One statement on the pool, its failure named after `operation`. */
  #query(operation: string): Queryable {
    return {
      query: <Row extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]) =>
        this.#database.query<Row>(operation, sql, params),
    };
  }

  /** Runs `work` in its place in the call order; every failure becomes a {@link StorageError}. */
  #call<T>(operation: string, keys: readonly string[] | "all", work: () => Promise<T>): Promise<T> {
    if (this.#closed !== undefined) {
      return Promise.reject(this.#error(operation, new Error("the journal is closed")));
    }
    return this.#order.run(keys, work).catch((error: unknown) => {
      throw this.#error(operation, error);
    });
  }

  #error(operation: string, error: unknown): StorageError {
    const failure = error instanceof PostgresStoreError ? error : undefined;
    const message = error instanceof Error ? error.message : String(error);
    // The store error's message starts with where and what failed, which StorageError says.
    const said = failure === undefined ? "" : `${this.where}: ${failure.operation} failed: `;
    const reason = said !== "" && message.startsWith(said) ? message.slice(said.length) : message;
    return new StorageError({
      operation,
      path: this.where,
      reason,
      systemCode: sqlState(failure?.cause ?? error),
      cause: error,
    });
  }
}

function entryKeys(ids: readonly number[]): string[] {
  return ids.map((id) => `entry:${id}`);
}

/** The SQLSTATE (or the socket's errno code) of a failure, looking through a store error. */
function sqlState(error: unknown): string | undefined {
  const cause = error instanceof PostgresStoreError ? error.cause : error;
  if (typeof cause !== "object" || cause === null) return undefined;
  const code = (cause as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}
