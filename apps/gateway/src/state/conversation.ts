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
