import { join } from "node:path";
import { Defaults } from "../defaults.js";
import { type CheckedDatabase, openChecked } from "../sqlite/checked-open.js";
import { type CallFailure, type DatabaseWorker, programUrl } from "../sqlite/database-worker.js";
import type { OpenCheck } from "../sqlite/integrity.js";
import { fromWire } from "../sqlite/protocol.js";
import type {
  AddApprovalResult,
  ApprovalRecord,
  ApprovalStatus,
  DecideResult,
} from "./approvals.js";
import type { Conversation, SummaryWrite } from "./conversation.js";
import { type ConversationScope, conversationScope } from "./conversation-cache.js";
import { StateSchemaError, StateStoreError } from "./errors.js";
import type {
  ApprovalGuard,
  PairingApproveResult,
  PairingLimits,
  PairingList,
  PairingRequester,
  PairingRequestResult,
  PairingRevokeResult,
} from "./pairing.js";
import type { StateDatabase } from "./state-database.js";
import type { Approver, CurrentSession, StateStore } from "./state-store.js";
import { sqliteTaskStore } from "./task-store.js";
import type { TaskStore } from "./tasks.js";
import type { ChatMessage } from "./types.js";
import type {
  DailyUsage,
  UsageDays,
  UsagePeriods,
  UsageRecord,
  UsageScope,
  UsageTotals,
  UserUsage,
} from "./usage.js";

/** Options of {@link SqliteStateStore.open}. */
export interface StateStoreOptions {
  /** Clock for the `created_at`/`updated_at` columns. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * How long a writer waits for another process's lock. Default: `Defaults.database.busyTimeoutMs`.
   */
  readonly busyTimeoutMs?: number;
  /**
   * How long `close()` waits for calls in flight and the final checkpoint (a stalled disk)
   * before it gives up on them. Default: `Defaults.database.closeTimeoutMs`.
   */
  readonly closeTimeoutMs?: number;
  /**
   * How long opening waits for the integrity check of an existing database before it goes on
   * without the verdict. Default `Defaults.database.integrityWaitMs`.
   */
  readonly integrityWaitMs?: number;
  /**
   * Whether an existing database is checked for damage before it is opened (default true). A
   * short command that reads or writes a few rows (`mediagate pairing`) skips the check, which
   * reads the whole file: a damaged page the command reads still fails with the damage and the
   * way out, and the gateway's start checks the whole file.
   */
  readonly integrityCheck?: boolean;
  /**
   * A conversation cache of this store's own, of this many characters of stored text; 0 reads
   * each conversation whole every time. Default: the process's (state/conversation-cache.ts).
   */
  readonly conversationCacheChars?: number | undefined;
}

/** Defaults of {@link StateStoreOptions}. */
export const StateStoreDefaults = {
  now: Date.now,
  busyTimeoutMs: Defaults.database.busyTimeoutMs,
  closeTimeoutMs: Defaults.database.closeTimeoutMs,
  integrityWaitMs: Defaults.database.integrityWaitMs,
  integrityCheck: true,
  conversationCacheChars: undefined,
} as const satisfies Required<StateStoreOptions>;

/** The state database of a profile home: `<profileHome>/state.db` (docs/sandbox.md). */
export function stateDbPath(profileHome: string): string {
  return join(profileHome, "state.db");
}

/**
 * The {@link StateStore} on SQLite (the default, docs/store.md): one SQLite file in WAL mode (readers never block the writer; several
 * gateway processes of one profile may share it), worked on in its own worker thread
 * (docs/durability.md): a slow or frozen disk delays the calls on this database, never the
 * event loop. Calls run in the order they are made. Every failure rejects with
 * {@link StateStoreError} (or {@link StateSchemaError} from `open`); its `damaged` is set for a
 * damaged file.
 */
export class SqliteStateStore implements StateStore {
  readonly path: string;
  /** The integrity check at open (its `early` verdict is `undefined` when it outlasted the wait). */
  readonly check: OpenCheck;
  readonly #database: CheckedDatabase<StateDatabase, StateStoreError>;
  readonly #worker: DatabaseWorker<StateDatabase>;
  readonly #now: () => number;
  readonly #conversations: ConversationScope;
  #rotations = 0;
  #tasks: TaskStore | undefined;

  private constructor(
    path: string,
    database: CheckedDatabase<StateDatabase, StateStoreError>,
    settings: Required<StateStoreOptions>,
  ) {
    this.path = path;
    this.#database = database;
    this.#worker = database.worker;
    this.#now = settings.now;
    this.#conversations = conversationScope(settings.conversationCacheChars);
    this.check = database.check;
  }

  /**
   * Opens (creating it and its parent directories if needed) and migrates the database at
   * `path`, in a new worker thread. The file is made owner-only (0600): it holds conversations.
   * An existing database is checked first unless `integrityCheck` is false (`quick_check`, in a
   * thread of its own, waited for up to `integrityWaitMs`): a damaged one rejects with a
   * {@link StateStoreError} whose `damaged` is set and whose message names the way out; a
   * verdict that comes later sets {@link damage}.
   */
  static async open(path: string, options: StateStoreOptions = {}): Promise<SqliteStateStore> {
    const settings = { ...StateStoreDefaults, ...options };
    const database = await openChecked<StateDatabase, StateStoreError>({
      program: programUrl("./state-database.js", import.meta.url),
      path,
      settings: { busyTimeoutMs: settings.busyTimeoutMs },
      threadName: "mg-state",
      revive: (failure) => revive(path, failure),
      closeTimeoutMs: settings.closeTimeoutMs,
      busyTimeoutMs: settings.busyTimeoutMs,
      integrityWaitMs: settings.integrityWaitMs,
      integrityCheck: settings.integrityCheck,
      isDamage: (error): error is StateStoreError =>
        error instanceof StateStoreError && error.damaged,
      damaged: (problems) => damagedAtOpen(path, problems),
    });
    return new SqliteStateStore(path, database, settings);
  }

  /**
   * Set once the database was found damaged (a call failed on the damaged file, or the check at
   * open said so after the start went on); nothing heals it but moving the file aside.
   */
  get damage(): StateStoreError | undefined {
    return this.#database.damage;
  }

  /** The session id bound to `sessionKey`; a new random one is created and stored if absent. */
  currentSessionId(sessionKey: string): Promise<string> {
    return this.#worker.call("currentSessionId", sessionKey, this.#now());
  }

  /**
   * `/reset` and `/new`: binds a new random session id to `sessionKey` and deletes the history
   * and summary of the old one, in one transaction. Resolves to the new id.
   */
  rotateSessionId(sessionKey: string): Promise<string> {
    this.#rotations++;
    return this.#worker.call("rotateSessionId", sessionKey, this.#now());
  }

  /**
   * How many {@link rotateSessionId} calls this store has made. A session id read after the
   * count was taken is still the current one, as far as this process knows, while the count
   * stays the same: a turn that starts right after its message was bound need not read it
   * again (docs/sessions.md, "Session ids").
   */
  get rotations(): number {
    return this.#rotations;
  }

  /**
   * Stores a pending approval (docs/approvals.md) unless `maxPending` of the profile are
   * pending already; decided ones older than `keepMs` are dropped first.
   */
  addApproval(
    record: ApprovalRecord,
    maxPending: number,
    keepMs: number,
  ): Promise<AddApprovalResult> {
    return this.#worker.call("addApproval", record, maxPending, keepMs);
  }

  /** Notes the message that shows an approval's buttons. */
  setApprovalMessage(id: string, messageId: string): Promise<void> {
    return this.#worker.call("setApprovalMessage", id, messageId);
  }

  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return this.#worker.call("getApproval", id);
  }

  /** Decides a pending approval; only the first decision counts (`decided` says if it was this one). */
  decideApproval(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    decidedBy: string,
    decidedByName: string | undefined,
  ): Promise<DecideResult> {
    return this.#worker.call("decideApproval", id, status, decidedBy, decidedByName, this.#now());
  }

  /** Whether an approver allowed `sessionId` to act without asking ("Allow for this session"). */
  sessionAllowed(sessionId: string): Promise<boolean> {
    return this.#worker.call("sessionAllowed", sessionId);
  }

  /** The newest pending approval of a chat (and thread): what a typed `/allow` decides. */
  latestPendingApproval(
    platform: string,
    chatId: string,
    threadId: string | undefined,
  ): Promise<ApprovalRecord | undefined> {
    return this.#worker.call("latestPendingApproval", platform, chatId, threadId);
  }

  /** The profile's newest approvals, newest first (the web console). */
  recentApprovals(limit: number): Promise<ApprovalRecord[]> {
    return this.#worker.call("recentApprovals", limit);
  }

  /**
   * The history of `sessionId`, oldest first. With `limit`, only the newest `limit`
   * messages (the cut may fall inside a tool exchange; callers that send history to a
   * model trim it to a turn boundary). Rejects with {@link StateStoreError} on a corrupt row.
   */
  loadHistory(sessionId: string, limit?: number): Promise<ChatMessage[]> {
    return this.#worker.call("loadHistory", sessionId, limit);
  }

  /** See {@link StateStore.appendHistory}. */
  appendHistory(
    sessionId: string,
    messages: readonly ChatMessage[],
    current?: CurrentSession,
  ): Promise<boolean> {
    return this.#worker.call(
      "appendHistory",
      sessionId,
      messages,
      this.#now(),
      current?.sessionKey,
    );
  }

  /**
   * What the model sees of `sessionId`: its summary and the messages after it, oldest first,
   * read together. Rejects with {@link StateStoreError} on a corrupt row. Reads only the
   * messages added since this store last loaded it, when nothing else changed
   * (state/conversation-cache.ts).
   */
  loadConversation(sessionId: string): Promise<Conversation> {
    return this.#conversations.load(sessionId, (known) =>
      this.#worker.call("readConversation", sessionId, known),
    );
  }

  /**
   * Stores a compaction's summary of `sessionId` (docs/sessions.md, "Context budget and
   * compaction"); the summarized messages stay stored. Resolves `false`, writing nothing, when
   * another compaction changed the summary since `write.baseThroughId` or `write.throughId` is
   * not one of the session's messages past it.
   */
  saveSummary(sessionId: string, write: SummaryWrite): Promise<boolean> {
    return this.#worker.call("saveSummary", sessionId, write, this.#now());
  }

  /** Deletes the history and summary of `sessionId` (the session key keeps its id). */
  clearHistory(sessionId: string): Promise<void> {
    return this.#worker.call("clearHistory", sessionId);
  }

  /** The store's clock (the one its rows are stamped with; pairing codes expire by it). */
  now(): number {
    return this.#now();
  }

  /** Whether `user` (`<platform>:<id>`) was approved by pairing and not revoked since. */
  isPaired(user: string): Promise<boolean> {
    return this.#worker.call("isPaired", user);
  }

  /**
   * An unknown user's code request (docs/security.md, "Pairing"): their pending code, a new
   * one, or `full` when `limits.maxPending` codes are waiting. Atomic across processes.
   */
  requestPairing(
    requester: PairingRequester,
    limits: PairingLimits,
  ): Promise<PairingRequestResult> {
    return this.#worker.call("requestPairing", requester, this.#now(), limits);
  }

  /**
   * Approves the user of the pending `code` (normalized, see `normalizePairingCode`). Chat
   * approvals pass a `guard` (the attempt cap); the CLI passes none.
   */
  approvePairing(
    code: string,
    approvedBy: Approver,
    guard?: ApprovalGuard,
  ): Promise<PairingApproveResult> {
    return this.#worker.call("approvePairing", code, this.#now(), approvedBy, guard);
  }

  /** Removes an approved user and their pending code (by user), or one pending code. */
  revokePairing(
    target: { readonly user: string } | { readonly code: string },
  ): Promise<PairingRevokeResult> {
    return this.#worker.call("revokePairing", target);
  }

  /** The pending codes (not expired), the approved users and the chat approvals' lock. */
  listPairing(): Promise<PairingList> {
    return this.#worker.call("listPairing", this.#now());
  }

  /**
   * Stores one model call's usage, stamped now (docs/models-and-usage.md). Written on its own
   * right after the call: a crash before it loses at most that call's record.
   */
  recordUsage(usage: UsageRecord): Promise<void> {
    return this.#worker.call("recordUsage", usage, this.#now());
  }

  /** The totals of `scope` for today, the week and all time, by `days`. */
  usagePeriods(scope: UsageScope, days: UsageDays): Promise<UsagePeriods> {
    return this.#worker.call("usagePeriods", scope, days);
  }

  /** The profile's totals of one UTC day (`YYYY-MM-DD`). */
  usageOfDay(day: string): Promise<UsageTotals> {
    return this.#worker.call("usageOfDay", day);
  }

  /** The profile's totals per UTC day from `fromDay` on, oldest first; days without calls absent. */
  usageDaily(fromDay: string): Promise<DailyUsage[]> {
    return this.#worker.call("usageDaily", fromDay);
  }

  /** Each user's totals, the biggest spender first. */
  usageByUser(days: UsageDays): Promise<UserUsage[]> {
    return this.#worker.call("usageByUser", days);
  }

  /** The model `/model` picked for `sessionKey`; `undefined`: the default. */
  sessionModel(sessionKey: string): Promise<string | undefined> {
    return this.#worker.call("sessionModel", sessionKey);
  }

  /** Stores `/model`'s pick for `sessionKey` (kept across /reset); `undefined`: the default. */
  setSessionModel(sessionKey: string, model: string | undefined): Promise<void> {
    return this.#worker.call("setSessionModel", sessionKey, model, this.#now());
  }

  /** The profile's scheduled tasks (docs/schedules.md). */
  get tasks(): TaskStore {
    this.#tasks ??= sqliteTaskStore(this.#worker, this.#now);
    return this.#tasks;
  }

  /**
   * Stops the integrity check of the open if it still runs, lets the calls made before it
   * finish, closes the database (checkpointing its WAL) and ends the worker thread. Later calls
   * reject. Safe to call twice.
   */
  close(): Promise<void> {
    this.#conversations.close();
    return this.#database.close();
  }
}

/** The main-thread error for a failure in (or of) the worker thread. */
function revive(path: string, { operation, error }: CallFailure): Error {
  const cause = error.cause === undefined ? undefined : fromWire(error.cause);
  const { fields } = error;
  if (error.name === "StateSchemaError") {
    return new StateSchemaError(Number(fields.found), Number(fields.supported));
  }
  if (error.name === "StateStoreError") {
    const failedOperation = typeof fields.operation === "string" ? fields.operation : operation;
    const reason = typeof fields.reason === "string" ? fields.reason : error.message;
    return new StateStoreError(failedOperation, path, reason, { cause });
  }
  return new StateStoreError(operation, path, error.message, { cause: fromWire(error) });
}

/** The error of a database the integrity check found damaged: SQLite's words, the way out. */
function damagedAtOpen(path: string, problems: readonly string[]): StateStoreError {
  const cause = Object.assign(new Error(problems.join("; ")), { code: "SQLITE_CORRUPT" });
  return new StateStoreError("open", path, cause.message, { cause });
}
