import { open } from "node:fs/promises";
import { join } from "node:path";
import type { PlanRecord } from "@mediagate/media";
import { currentInstanceId, type InstanceId } from "@mediagate/sandbox/instance";
import type { ChatCursor, InboundMessage, StepResult } from "../channels/types.js";
import { Defaults } from "../defaults.js";
import { type CheckedDatabase, openChecked } from "../sqlite/checked-open.js";
import { type CallFailure, type DatabaseWorker, programUrl } from "../sqlite/database-worker.js";
import type { OpenCheck } from "../sqlite/integrity.js";
import { fromWire, toWire, wireCode } from "../sqlite/protocol.js";
import { StorageError } from "./errors.js";
import type { JournalDatabase } from "./journal-database.js";
import { findLostJournal, type LostJournal, markJournal } from "./journal-marker.js";
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

/** Options of {@link SqliteJournal.open}. */
export interface JournalOptions {
  /** Clock for the recorded times. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Who owns what this journal records (tests hand in another process's id). Default
   * `currentInstanceId()`.
   */
  readonly owner?: InstanceId;
  /**
   * How long a writer waits for another process's lock. Default: `Defaults.database.busyTimeoutMs`.
   */
  readonly busyTimeoutMs?: number;
  /**
   * How long `close()` waits for calls in flight (a stalled disk). Default:
   * `Defaults.database.closeTimeoutMs`.
   */
  readonly closeTimeoutMs?: number;
  /**
   * How long opening waits for the integrity check of an existing journal before it goes on
   * without the verdict. Default `Defaults.database.integrityWaitMs`.
   */
  readonly integrityWaitMs?: number;
}

/** Defaults of {@link JournalOptions}. */
export const JournalDefaults = {
  now: Date.now,
  busyTimeoutMs: Defaults.database.busyTimeoutMs,
  closeTimeoutMs: Defaults.database.closeTimeoutMs,
  integrityWaitMs: Defaults.database.integrityWaitMs,
} as const satisfies Required<Omit<JournalOptions, "owner">>;

/** The journal of an install: `<root home>/journal.db` (docs/durability.md). */
export function journalDbPath(rootHome: string): string {
  return join(rootHome, "journal.db");
}

/**
 * The {@link Journal} on SQLite: one file in WAL mode, worked on in
 * its own worker thread, so a slow or frozen disk delays the calls that need the journal and
 * nothing else. Calls run in the order they are made. Every failure rejects with
 * {@link StorageError} (`full` set for a full disk, nothing of the failed call was saved;
 * `damaged` for a damaged file, which no retry heals).
 */
export class SqliteJournal implements Journal {
  readonly path: string;
  /** The owner this process records and takes over with. */
  readonly owner: InstanceId;
  /**
   * The journal was gone at open while its marker said there was one (docs/durability.md): a
   * new one was made, and what the old one held is lost.
   */
  readonly lost: LostJournal | undefined;
  /** The integrity check at open (its `early` verdict is `undefined` when it outlasted the wait). */
  readonly check: OpenCheck;
  readonly #database: CheckedDatabase<JournalDatabase, StorageError>;
  readonly #worker: DatabaseWorker<JournalDatabase>;
  readonly #now: () => number;
  #closed = false;

  private constructor(
    path: string,
    owner: InstanceId,
    database: CheckedDatabase<JournalDatabase, StorageError>,
    now: () => number,
    lost: LostJournal | undefined,
  ) {
    this.path = path;
    this.owner = owner;
    this.#database = database;
    this.#worker = database.worker;
    this.#now = now;
    this.lost = lost;
    this.check = database.check;
  }

  /**
   * Opens (creating it owner-only, and its directory 0700, if needed) and migrates the journal
   * at `path` in a new worker thread. An existing journal is checked first (`quick_check`, in a
   * thread of its own, waited for up to `integrityWaitMs`): a damaged one rejects with a
   * {@link StorageError} whose `damaged` is set and whose message names the way out; a verdict
   * that comes later sets {@link damage}. A journal that was lost (see journal-marker.ts) is
   * made anew and reported as {@link lost}.
   */
  static async open(path: string, options: JournalOptions = {}): Promise<SqliteJournal> {
    const settings = { ...JournalDefaults, ...options };
    const owner = options.owner ?? currentInstanceId();
    const lost = await findLostJournal(path);
    const database = await openChecked<JournalDatabase, StorageError>({
      program: programUrl("./journal-database.js", import.meta.url),
      path,
      settings: { busyTimeoutMs: settings.busyTimeoutMs, owner },
      threadName: "mg-journal",
      revive: (failure) => revive(path, failure),
      closeTimeoutMs: settings.closeTimeoutMs,
      busyTimeoutMs: settings.busyTimeoutMs,
      integrityWaitMs: settings.integrityWaitMs,
      integrityCheck: true,
      isDamage: (error): error is StorageError => error instanceof StorageError && error.damaged,
      damaged: (problems) => damagedAtOpen(path, problems),
    });
    try {
      await markJournal(path, settings.now(), lost !== undefined);
    } catch (error) {
      await database.close().catch(() => {});
      throw revive(path, { operation: "open", error: toWire(error) });
    }
    return new SqliteJournal(path, owner, database, settings.now, lost);
  }

  /**
   * Why the journal is damaged, once a call failed on a damaged file (or the late integrity
   * check found it so); `undefined` while nothing says so. Nothing heals it: the gateway's
   * health reports it until the journal is moved aside (`mediagate db move-aside`).
   */
  get damage(): StorageError | undefined {
    return this.#database.damage;
  }

  record(message: InboundMessage): Promise<RecordResult> {
    return this.#worker.call("record", message, this.#now());
  }

  recorded(
    profile: string,
    platform: InboundMessage["platform"],
    receiptIds: readonly string[],
  ): Promise<string[]> {
    return this.#worker.call("recorded", profile, platform, receiptIds);
  }

  /**
   * Makes everything committed so far survive a power cut: one `fdatasync` of the
   * write-ahead log, which holds every commit not yet checkpointed into the database file (a
   * checkpoint syncs the database file before the log is reused) — what `synchronous = FULL`
   * does at each commit, once for all of them. A crash of the process alone loses nothing
   * already committed. It runs on Node's file-system threads, not the journal's: turns' calls
   * do not queue behind a slow sync, and a stalled disk holds up only its caller. No log file
   * (nothing written since the last connection closed) means nothing is waiting.
   */
  async sync(): Promise<void> {
    const wal = `${this.path}-wal`;
    try {
      if (this.#closed) throw new Error("the journal is closed");
      const handle = await open(wal, "r").catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      });
      if (handle === undefined) return;
      try {
        await handle.datasync();
      } finally {
        await handle.close();
      }
    } catch (error) {
      throw new StorageError({
        operation: "sync",
        path: this.path,
        reason: error instanceof Error ? error.message : String(error),
        systemCode: (error as NodeJS.ErrnoException).code,
        cause: error,
      });
    }
  }

  started(ids: number | readonly number[]): Promise<void> {
    return this.#worker.call("started", ids, this.#now());
  }

  /** The first outcome stays: an entry already `done` (by `addReply`) is left as it is. */
  finished(ids: number | readonly number[], outcome: JournalOutcome): Promise<void> {
    return this.#worker.call("finished", ids, outcome, this.#now());
  }

  /**
   * Entries not `done` whose owner is gone (`instanceLiveness` says `gone`; `unknown`, e.g.
   * another host, counts as alive), re-owned by this process in one transaction, oldest first.
   */
  takeOver(): Promise<JournalEntry[]> {
    return this.#worker.call("takeOver", this.#now());
  }

  statusShown(entryId: number, status: StatusRecord): Promise<void> {
    return this.#worker.call("statusShown", entryId, status);
  }

  previewsShown(entryId: number, messageIds: readonly string[]): Promise<void> {
    return this.#worker.call("previewsShown", entryId, [...messageIds]);
  }

  statusGone(entryId: number): Promise<void> {
    return this.#worker.call("statusGone", entryId);
  }

  leftoverStatuses(): Promise<LeftoverStatus[]> {
    return this.#worker.call("leftoverStatuses");
  }

  cursors(profile: string): Promise<ChatCursor[]> {
    return this.#worker.call("cursors", profile);
  }

  addReply(
    reply: OutboxReply,
    entryId: number | undefined,
    merged: readonly number[] = [],
    outcome: JournalOutcome = "replied",
  ): Promise<OutboxRecord> {
    return this.#worker.call("addReply", reply, entryId, merged, outcome, this.#now());
  }

  /** Records a step's result (a later result for the same key replaces it). */
  step(replyId: string, key: string, result: StepResult): Promise<void> {
    return this.#worker.call("step", replyId, key, result, this.#now());
  }

  clearStep(replyId: string, key: string): Promise<void> {
    return this.#worker.call("clearStep", replyId, key);
  }

  setPlan(replyId: string, plan: PlanRecord): Promise<void> {
    return this.#worker.call("setPlan", replyId, plan);
  }

  attempt(replyId: string): Promise<void> {
    return this.#worker.call("attempt", replyId);
  }

  reschedule(replyId: string, notBeforeMs: number, error: string): Promise<void> {
    return this.#worker.call("reschedule", replyId, notBeforeMs, error);
  }

  closeReply(replyId: string, state: "delivered" | "given_up", error?: string): Promise<void> {
    return this.#worker.call("closeReply", replyId, state, error, this.#now());
  }

  /** Where entry `id` is and how it ended (for `doctor`, tests and support). */
  entryState(
    id: number,
  ): Promise<{ state: JournalState; outcome: string | null; mine: boolean } | undefined> {
    return this.#worker.call("entryState", id);
  }

  /** Recent replies, newest first (or the one with `id`); only reads (the web console). */
  replies(query: { limit?: number; id?: string; entryId?: number }): Promise<OutboxRecord[]> {
    return this.#worker.call("replies", query.limit ?? 50, query.id, query.entryId);
  }

  release(): Promise<number> {
    return this.#worker.call("release");
  }

  takeOverReplies(): Promise<OutboxRecord[]> {
    return this.#worker.call("takeOverReplies");
  }

  pendingReplySlots(profile: string): Promise<string[]> {
    return this.#worker.call("pendingReplySlots", profile);
  }

  prune(olderThanMs: number): Promise<number> {
    return this.#worker.call("prune", olderThanMs);
  }

  /**
   * Stops the integrity check of the open if it still runs, lets the calls made before it
   * finish, closes the database (checkpointing its WAL) and ends the worker thread. Later calls
   * reject. Safe to call twice.
   */
  close(): Promise<void> {
    this.#closed = true;
    return this.#database.close();
  }
}

function revive(path: string, { operation, error }: CallFailure): StorageError {
  return new StorageError({
    operation,
    path,
    reason: error.message,
    systemCode: wireCode(error),
    cause: fromWire(error),
  });
}

/** The error of a journal the integrity check found damaged: SQLite's words, the way out. */
function damagedAtOpen(path: string, problems: readonly string[]): StorageError {
  return new StorageError({
    operation: "open",
    path,
    reason: problems.join("; "),
    systemCode: "SQLITE_CORRUPT",
  });
}
