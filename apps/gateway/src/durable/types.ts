import type { PlanRecord } from "@mediagate/media";
import type { InstanceId } from "@mediagate/sandbox";
import type { ChatCursor, ChatTarget, InboundMessage, StepResult } from "../channels/types.js";
import type { StorageError } from "./errors.js";

/**
 * Where a journal entry is (docs/durability.md):
 * - `received`: recorded, its turn has not started (after a crash it runs);
 * - `started`: its turn began (after a crash it was cut off: the chat gets a notice, or it
 *   runs again when `recovery.rerunInterrupted` is set);
 * - `done`: nothing is left to do for it (its reply, if any, is in the outbox).
 */
export type JournalState = "received" | "started" | "done";

/** How a journal entry ended, for the record and the logs. */
export type JournalOutcome =
  /** Its reply went to the outbox. */
  | "replied"
  /** Nothing to send (an empty reply, a refused user in a group). */
  | "silent"
  /** An admin command, handled. */
  | "command"
  /** Not allowed; refused or ignored. */
  | "refused"
  /** /stop or /reset dropped or aborted it (or a message sent in `interrupt` mode). */
  | "stopped"
  /** Its session already had `maxQueuedMessages` waiting; not run, and the chat was told. */
  | "overflow"
  /** The turn failed and the chat was told. */
  | "failed"
  /** Cut off by a crash or a stop; the chat was told after the restart. */
  | "interrupted";

/** One recorded inbound message. */
export interface JournalEntry {
  readonly id: number;
  /** `<profile>:<platform>:<receiptId>` (unique). */
  readonly key: string;
  readonly state: JournalState;
  /** The process that recorded it or last took it over. */
  readonly owner: InstanceId;
  readonly message: InboundMessage;
  readonly receivedAtMs: number;
  readonly startedAtMs?: number | undefined;
  /**
   * Handed to this process, its session's holder, by the replica that received it and had
   * not taken it over from the journal (docs/cluster.md): it is queued as a message just
   * received is, held to `maxQueuedMessages` (docs/sessions.md).
   */
  readonly handed?: boolean | undefined;
}

/**
 * A turn's live status message while it shows (docs/sessions.md, "Live progress"): kept with
 * the turn's journal entry from its post until it is deleted, so a restart can clear one a
 * crash left behind (docs/durability.md).
 */
export interface StatusRecord {
  readonly target: ChatTarget;
  /** The platform's id of the status message. */
  readonly messageId: string;
}

/** A status message a process that is gone left showing, with the turn it belonged to. */
export interface LeftoverStatus extends StatusRecord {
  readonly entryId: number;
  readonly profile: string;
  readonly platform: InboundMessage["platform"];
  /** Where its turn's entry is: `done` means the turn had ended (its reply was recorded). */
  readonly state: JournalState;
  /** The rollover messages of the turn's streamed preview, in the same chat (often none). */
  readonly previews: readonly string[];
}

/** What {@link Journal.record} found. */
export interface RecordResult {
  readonly id: number;
  /** `false` when the message was recorded before (a redelivery): do not run it again. */
  readonly fresh: boolean;
  /**
   * Set when some of the message's receipt ids were recorded (with another message: `id` is
   * that entry) and these were not: the message was not recorded, and its channel must hand
   * these items on as a message of their own.
   */
  readonly unrecorded?: readonly string[];
}

/** A finished turn's reply, as the outbox keeps it until it is delivered. */
export interface OutboxReply {
  readonly profile: string;
  readonly platform: InboundMessage["platform"];
  readonly sessionKey: string;
  /** The container slot the turn's tool calls ran in (its files are planned from there). */
  readonly slot: string;
  readonly target: ChatTarget;
  /**
   * The agent's reply as it gave it, `MEDIA:` tags included. Its media plan is recorded
   * (`OutboxRecord.plan`) before the first send; only a reply without one is planned from this.
   */
  readonly text: string;
  /**
   * The gateway's own words (a command's answer, docs/durability.md "Command answers"): sent
   * as written, without reading `MEDIA:` tags or applying the profile's format, as a chat
   * line the gateway says. Absent: an agent's reply.
   */
  readonly plain?: boolean | undefined;
}

/** Where an outbox record is. */
export type OutboxState = "pending" | "delivered" | "given_up";

/** One reply in the outbox. */
export interface OutboxRecord extends OutboxReply {
  /** Random, stable across restarts (Discord nonces derive from it). */
  readonly id: string;
  /** The journal entry it answers, if any. */
  readonly entryId?: number | undefined;
  readonly state: OutboxState;
  readonly owner: InstanceId;
  /** Steps done so far (see `DeliveryProgress`). */
  readonly steps: ReadonlyMap<string, StepResult>;
  /** Delivery attempts started so far. */
  readonly attempts: number;
  readonly createdAtMs: number;
  /** Not before this (a long `retry_after`); 0 = now. */
  readonly notBeforeMs: number;
  readonly lastError?: string | undefined;
  /**
   * What planning decided, recorded before the first send: every attempt delivers these steps
   * (docs/durability.md). Absent until the first attempt planned it, and for a reply recorded
   * by a version before plans were kept (it is planned from `text`, as then).
   */
  readonly plan?: PlanRecord | undefined;
}

/**
 * The per-install durable record of inbound messages and outbound replies:
 * `<root home>/journal.db`, SQLite in WAL mode, worked on off the event loop (a worker
 * thread), so a slow disk delays only the calls that write (`SqliteJournal`); or the schema
 * `journal` of the PostgreSQL store (`PostgresJournal`). Every method rejects with
 * `StorageError` (its `full` flag set for a full disk, `damaged` for a damaged file) when the
 * database cannot be written.
 */
export interface Journal {
  /** The owner this process records, takes over and replies with (its instance id). */
  readonly owner: InstanceId;
  /**
   * Set once the journal was found damaged (a call failed on the damaged file, or the check at
   * open said so after the start went on): it stays set, since nothing heals it but moving the
   * file aside (`mediagate db move-aside`, docs/operations.md).
   */
  readonly damage: StorageError | undefined;
  /**
   * Records an inbound message before it is confirmed, by each of its receipt ids
   * (`receiptId` and `receiptIds`); dedupes on them. Discord messages move their chat's
   * cursor. Once it resolves the entry survives a crash of the process; {@link sync} makes it
   * survive a power cut too.
   */
  record(message: InboundMessage): Promise<RecordResult>;
  /** Which of `receiptIds` of `profile` on `platform` are recorded, with any message. */
  recorded(
    profile: string,
    platform: InboundMessage["platform"],
    receiptIds: readonly string[],
  ): Promise<string[]>;
  /**
   * Syncs to disk everything committed so far, with one flush for all of it. A channel calls
   * it (through `ChannelStartOptions.flush`) before it confirms recorded messages to their
   * platform.
   */
  sync(): Promise<void>;
  /**
   * Where entry `id` is, how it ended, and whether this process owns it (`mine`: false once
   * another process took it over or was handed it); `undefined` for an unknown id.
   */
  entryState(
    id: number,
  ): Promise<{ state: JournalState; outcome: string | null; mine: boolean } | undefined>;
  /**
   * The entry's turn starts (several: the messages of one collected turn, atomically). With
   * session leases (PostgreSQL) the write is fenced by `session`'s lease (docs/cluster.md).
   */
  started(
    ids: number | readonly number[],
    session?: { readonly profile: string; readonly sessionKey: string },
  ): Promise<void>;
  /** Nothing is left to do for the entry (or entries, atomically). */
  finished(ids: number | readonly number[], outcome: JournalOutcome): Promise<void>;
  /**
   * Entries not `done` whose owner process is gone, oldest first, taken over by this process
   * (owner set to it in the same transaction, so two starting processes never both take one).
   */
  takeOver(): Promise<JournalEntry[]>;
  /** The turn of entry `entryId` posted its status message. */
  statusShown(entryId: number, status: StatusRecord): Promise<void>;
  /**
   * The turn of entry `entryId` posted these rollover messages of its streamed preview, in
   * order (all of them so far; docs/streaming.md).
   */
  previewsShown(entryId: number, messageIds: readonly string[]): Promise<void>;
  /** The status message of entry `entryId`, and its preview's rollovers, are gone. */
  statusGone(entryId: number): Promise<void>;
  /**
   * The status messages still recorded with entries whose owner process is gone (or that a
   * stopped gateway released), oldest first. Takes nothing over: each is forgotten with
   * {@link statusGone} once it was cleared in its chat (one that does not read back is
   * forgotten at once).
   */
  leftoverStatuses(): Promise<LeftoverStatus[]>;
  /** The newest recorded Discord message per chat of `profile`. */
  cursors(profile: string): Promise<ChatCursor[]>;
  /**
   * Records a finished turn's reply (or a command's answer) and marks its entry `done` with
   * `outcome` (default `replied`), atomically; `merged` are the other entries a collected turn
   * answers, closed in the same transaction.
   */
  addReply(
    reply: OutboxReply,
    entryId: number | undefined,
    merged?: readonly number[],
    outcome?: JournalOutcome,
  ): Promise<OutboxRecord>;
  /** Records the reply's media plan, before anything of it is sent. */
  setPlan(replyId: string, plan: PlanRecord): Promise<void>;
  /**
   * Whether this process may send reply `replyId` now; rejects when not (with session leases:
   * a reply of a session whose lease it lost, given back to the cluster). Absent: always.
   */
  fenceReply?(replyId: string): Promise<void>;
  /** Records one delivered (or refused, or unconfirmed) step. */
  step(replyId: string, key: string, result: StepResult): Promise<void>;
  /** Forgets a step (one recorded `sending` whose request is known not to have gone out). */
  clearStep(replyId: string, key: string): Promise<void>;
  /** A delivery attempt starts (counts attempts). */
  attempt(replyId: string): Promise<void>;
  /** Tries again not before `notBeforeMs`; `error` says why (token-free). */
  reschedule(replyId: string, notBeforeMs: number, error: string): Promise<void>;
  /** The reply is delivered, or given up (`error` says why). */
  closeReply(replyId: string, state: "delivered" | "given_up", error?: string): Promise<void>;
  /** Pending replies whose owner is gone, taken over by this process, oldest first. */
  takeOverReplies(): Promise<OutboxRecord[]>;
  /**
   * The sandbox slots that `profile`'s pending replies (of any owner) were recorded with: the
   * orphan reap keeps their directories, which the files still to send are in.
   */
  pendingReplySlots(profile: string): Promise<string[]>;
  /**
   * Recent replies, newest first, the one with `id`, or those answering entry `entryId`
   * (oldest first); only reads (the web console, a kept turn's hand-on).
   */
  replies(query: { limit?: number; id?: string; entryId?: number }): Promise<OutboxRecord[]>;
  /**
   * At a graceful stop: this process's unfinished entries, pending replies and status messages
   * still showing are released, so the next start takes them over even if this process (e.g.
   * a test) keeps running.
   * Resolves with how many were released.
   */
  release(): Promise<number>;
  /** Deletes `done` entries and closed replies older than `olderThanMs` (epoch ms). */
  prune(olderThanMs: number): Promise<number>;
  close(): Promise<void>;
}
