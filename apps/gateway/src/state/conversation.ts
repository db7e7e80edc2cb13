import type { ChatMessage } from "./types.js";

/** A stored message with its row id (ids grow with every append, across sessions). */
export interface StoredMessage {
  readonly id: number;
  readonly message: ChatMessage;
}

/**
 * The summary of a session's messages up to row `throughId` (docs/sessions.md, "Context budget
 * and compaction"): the model sees it instead of them.
 */
export interface ConversationSummary {
  readonly content: string;
  readonly throughId: number;
}

/** What the model sees of a session: its summary, if any, and the messages after it. */
export interface Conversation {
  readonly summary?: ConversationSummary | undefined;
  /** The messages after the summary (all of them without one), oldest first. */
  readonly messages: readonly StoredMessage[];
}

/**
 * A new summary for a session. `baseThroughId` is the `throughId` of the summary it was made
 * from (`undefined`: there was none): when another compaction wrote one in between, this one is
 * refused instead of replacing it.
 */
export interface SummaryWrite {
  readonly content: string;
  readonly throughId: number;
  readonly baseThroughId: number | undefined;
}

/**
 * What a store holds of a session's conversation, for the database to check against its rows
 * before it sends only the messages past it (state/conversation-cache.ts).
 */
export interface KnownConversation {
  /** The summary's `throughId`; 0 without a summary. */
  readonly throughId: number;
  /** The id of the last message held; `throughId` when none is held. */
  readonly lastId: number;
  /** How many messages are held (all those after the summary, up to `lastId`). */
  readonly count: number;
}

/**
 * A database's answer to a load that named a {@link KnownConversation}: the whole conversation
 * (nothing was known, or it no longer holds), or the messages after `lastId`, oldest first.
 * `chars` is the length of the stored text sent (message bodies and the summary), which the
 * cache weighs entries by.
 */
export type ConversationRead =
  | { readonly kind: "whole"; readonly conversation: Conversation; readonly chars: number }
  | { readonly kind: "after"; readonly messages: readonly StoredMessage[]; readonly chars: number };

/** The rows a database counted after `known.throughId` up to `known.lastId`, and the last id. */
export interface CountedRange {
  readonly count: number;
  readonly lastId: number | null;
}

/**
 * Whether what a store holds is still the conversation in the database, given the database's
 * summary (`throughId`, 0 without one) and its rows in `known`'s range. It holds exactly when
 * the summary is the same one and the rows from it up to `lastId` are the ones held: ids grow
 * and are never reused (AUTOINCREMENT, a sequence), a message row is never changed, and rows
 * are deleted only a whole conversation at a time (`clearHistory`, a session replaced), which
 * takes the last held row too. A summary is only ever replaced by one through a later message,
 * or deleted with the rows. So the same count and the same last id mean the same rows, and a
 * row committed late into the range (two appends at once to one session on PostgreSQL) changes
 * the count.
 */
export function stillHolds(
  known: KnownConversation,
  throughId: number,
  range: CountedRange,
): boolean {
  if (throughId !== known.throughId || range.count !== known.count) return false;
  return known.count === 0 || range.lastId === known.lastId;
}
