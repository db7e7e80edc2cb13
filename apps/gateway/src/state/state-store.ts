import type {
  AddApprovalResult,
  ApprovalRecord,
  ApprovalStatus,
  DecideResult,
} from "./approvals.js";
import type { Conversation, SummaryWrite } from "./conversation.js";
import type { StateStoreError } from "./errors.js";
import type {
  ApprovalGuard,
  PairingApproveResult,
  PairingLimits,
  PairingList,
  PairingRequester,
  PairingRequestResult,
  PairingRevokeResult,
} from "./pairing.js";
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

/** Who approved a user: an admin's `<platform>:<id>`, or `cli`. */
export type Approver = string;

/**
 * One profile's state (docs/store.md): the session id behind each session key, each session's
 * conversation and summary, pairing, approvals, usage and `/model` picks. Two backends keep it
 * with the same semantics: {@link SqliteStateStore} (`<profile home>/state.db`, the default)
 * and {@link PostgresStateStore} (every profile in one PostgreSQL database). Calls never block
 * the event loop. A message or row that is not what the agents rely on rejects with
 * {@link StateStoreError}; so does every failure of the SQLite backend, while the PostgreSQL one
 * rejects with `PostgresStoreError` when the server failed or could not be reached.
 */
/** The session key an append belongs to ({@link StateStore.appendHistory}). */
export interface CurrentSession {
  readonly sessionKey: string;
}

export interface StateStore {
  /**
   * Set once the store is known to be damaged (a SQLite file: nothing heals it but moving it
   * aside); never set on PostgreSQL, whose server keeps its own integrity.
   */
  readonly damage: StateStoreError | undefined;
  /** The profile's scheduled tasks (docs/schedules.md). */
  readonly tasks: TaskStore;

  /** The session id bound to `sessionKey`; a new random one is created and stored if absent. */
  currentSessionId(sessionKey: string): Promise<string>;
  /**
   * `/reset` and `/new`: binds a new random session id to `sessionKey` and deletes the history
   * and summary of the old one, in one transaction. Resolves to the new id.
   */
  rotateSessionId(sessionKey: string): Promise<string>;
  /**
   * How many {@link rotateSessionId} calls this store has made. A session id read after the
   * count was taken is still the current one, as far as this process knows, while the count
   * stays the same: a turn that starts right after its message was bound need not read it
   * again (docs/sessions.md, "Session ids").
   */
  readonly rotations: number;

  /**
   * Stores a pending approval (docs/approvals.md) unless `maxPending` of the profile are
   * pending already; decided ones older than `keepMs` are dropped first.
   */
  addApproval(
    record: ApprovalRecord,
    maxPending: number,
    keepMs: number,
  ): Promise<AddApprovalResult>;
  /** Notes the message that shows an approval's buttons. */
  setApprovalMessage(id: string, messageId: string): Promise<void>;
  getApproval(id: string): Promise<ApprovalRecord | undefined>;
  /** Decides a pending approval; only the first decision counts (`decided` says if it was this one). */
  decideApproval(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    decidedBy: string,
    decidedByName: string | undefined,
  ): Promise<DecideResult>;
  /** Whether an approver allowed `sessionId` to act without asking ("Allow for this session"). */
  sessionAllowed(sessionId: string): Promise<boolean>;
  /** The newest pending approval of a chat (and thread): what a typed `/allow` decides. */
  latestPendingApproval(
    platform: string,
    chatId: string,
    threadId: string | undefined,
  ): Promise<ApprovalRecord | undefined>;
  /** The profile's newest approvals, newest first (the web console). */
  recentApprovals(limit: number): Promise<ApprovalRecord[]>;

  /**
   * The history of `sessionId`, oldest first. With `limit`, only the newest `limit`
   * messages (the cut may fall inside a tool exchange; callers that send history to a
   * model trim it to a turn boundary). Rejects with {@link StateStoreError} on a corrupt row.
   */
  loadHistory(sessionId: string, limit?: number): Promise<ChatMessage[]>;
  /**
   * Appends `messages` to the history of `sessionId` in one transaction: either all of them
   * are stored or, when any is invalid or a write fails, none. With `current`, only while
   * `current.sessionKey` still has `sessionId`: a `/new` or `/reset` that replaced it meanwhile
   * (its conversation deleted) leaves nothing written, and the answer is false; the check and
   * the write are one step against such a replacement, on either store.
   */
  appendHistory(
    sessionId: string,
    messages: readonly ChatMessage[],
    current?: CurrentSession,
  ): Promise<boolean>;
  /**
   * What the model sees of `sessionId`: its summary and the messages after it, oldest first,
   * read together. Rejects with {@link StateStoreError} on a corrupt row.
   */
  loadConversation(sessionId: string): Promise<Conversation>;
  /**
   * Stores a compaction's summary of `sessionId` (docs/sessions.md, "Context budget and
   * compaction"); the summarized messages stay stored. Resolves `false`, writing nothing, when
   * another compaction changed the summary since `write.baseThroughId` or `write.throughId` is
   * not one of the session's messages past it.
   */
  saveSummary(sessionId: string, write: SummaryWrite): Promise<boolean>;
  /** Deletes the history and summary of `sessionId` (the session key keeps its id). */
  clearHistory(sessionId: string): Promise<void>;

  /** The store's clock (the one its rows are stamped with; pairing codes expire by it). */
  now(): number;

  /** Whether `user` (`<platform>:<id>`) was approved by pairing and not revoked since. */
  isPaired(user: string): Promise<boolean>;
  /**
   * An unknown user's code request (docs/security.md, "Pairing"): their pending code, a new
   * one, or `full` when `limits.maxPending` codes are waiting. Atomic across processes.
   */
  requestPairing(requester: PairingRequester, limits: PairingLimits): Promise<PairingRequestResult>;
  /**
   * Approves the user of the pending `code` (normalized, see `normalizePairingCode`). Chat
   * approvals pass a `guard` (the attempt cap); the CLI passes none.
   */
  approvePairing(
    code: string,
    approvedBy: Approver,
    guard?: ApprovalGuard,
  ): Promise<PairingApproveResult>;
  /** Removes an approved user and their pending code (by user), or one pending code. */
  revokePairing(
    target: { readonly user: string } | { readonly code: string },
  ): Promise<PairingRevokeResult>;
  /** The pending codes (not expired), the approved users and the chat approvals' lock. */
  listPairing(): Promise<PairingList>;

  /**
   * Stores one model call's usage, stamped now (docs/models-and-usage.md). Written on its own
   * right after the call: a crash before it loses at most that call's record.
   */
  recordUsage(usage: UsageRecord): Promise<void>;
  /** The totals of `scope` for today, the week and all time, by `days`. */
  usagePeriods(scope: UsageScope, days: UsageDays): Promise<UsagePeriods>;
  /** The profile's totals of one UTC day (`YYYY-MM-DD`). */
  usageOfDay(day: string): Promise<UsageTotals>;
  /** The profile's totals per UTC day from `fromDay` on, oldest first; days without calls absent. */
  usageDaily(fromDay: string): Promise<DailyUsage[]>;
  /** Each user's totals, the biggest spender first. */
  usageByUser(days: UsageDays): Promise<UserUsage[]>;

  /** The model `/model` picked for `sessionKey`; `undefined`: the default. */
  sessionModel(sessionKey: string): Promise<string | undefined>;
  /** Stores `/model`'s pick for `sessionKey` (kept across /reset); `undefined`: the default. */
  setSessionModel(sessionKey: string, model: string | undefined): Promise<void>;

  /** Lets the calls made before it finish; later calls reject. Safe to call twice. */
  close(): Promise<void>;
}
