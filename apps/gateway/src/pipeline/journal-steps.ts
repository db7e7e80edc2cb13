import { SessionLeaseLostError } from "../durable/session-leases.js";
import type { JournalOutcome } from "../durable/types.js";
import type { StatusLedger } from "../turn-progress/progress.js";
import type { PreviewLedger } from "../turn-progress/stream-preview.js";
import { type MessageContext, sessionOf } from "./types.js";

/** The message's journal entry and those of the messages merged into its turn. */
export function entryIdsOf(ctx: MessageContext): number[] {
  return [...(ctx.entryId === undefined ? [] : [ctx.entryId]), ...(ctx.mergedEntryIds ?? [])];
}

/**
 * Closes the message's journal entry (and those of the messages merged into its turn, in one
 * transaction): nothing is left to do for it after a restart. A failure is logged, not thrown:
 * the worst outcome is that a restart sends the chat a notice for a message that was in fact
 * handled.
 */
export async function finishEntry(ctx: MessageContext, outcome: JournalOutcome): Promise<void> {
  const ids = entryIdsOf(ctx);
  if (ids.length === 0) return;
  try {
    await ctx.services.journal.finished(ids, outcome);
  } catch (error) {
    ctx.log.error(
      { err: error, entryId: ctx.entryId, merged: ctx.mergedEntryIds, outcome },
      "could not close the journal entry",
    );
  }
}

/**
 * Records that the turn's first command is about to run in its container: after a crash the
 * message counts as cut off (its chat is told), not as new. A turn cut off before that — in
 * the queue, provisioning its container, waiting for the model — ran no command and is simply
 * run again. The messages merged into a collected turn start with it, in one transaction.
 * With session leases the record is fenced: refused once this replica lost the session's
 * lease, which cuts the turn off (its messages go back to the cluster) before any command runs.
 */
export async function startEntry(ctx: MessageContext): Promise<void> {
  const ids = entryIdsOf(ctx);
  if (ids.length === 0) return;
  const session = { profile: ctx.message.profile, sessionKey: sessionOf(ctx).sessionKey };
  try {
    await ctx.services.journal.started(ids, session);
    ctx.started = true;
  } catch (error) {
    // The session's lease is lost: the whole turn is cut off, not only its command.
    if (error instanceof Error && error.cause instanceof SessionLeaseLostError)
      ctx.services.queue.abortRunning(session.sessionKey, error.cause);
    throw error;
  }
}

/**
 * The turn's status message, kept with the message's journal entry while it shows, so the
 * next start clears one a crash left behind (docs/durability.md). None without an entry.
 */
export function statusLedger(ctx: MessageContext): StatusLedger | undefined {
  const { entryId, target } = ctx;
  if (entryId === undefined) return undefined;
  const { journal } = ctx.services;
  return {
    shown: (messageId) => journal.statusShown(entryId, { target, messageId }),
    gone: () => journal.statusGone(entryId),
  };
}

/**
 * The turn's streamed preview messages, kept with the message's journal entry while they
 * show (its first message as the entry's status), so the next start deletes those a crash
 * left behind (docs/durability.md). None without an entry.
 */
export function previewLedger(ctx: MessageContext): PreviewLedger | undefined {
  const { entryId, target } = ctx;
  if (entryId === undefined) return undefined;
  const { journal } = ctx.services;
  return {
    first: (messageId) => journal.statusShown(entryId, { target, messageId }),
    rollovers: (messageIds) => journal.previewsShown(entryId, messageIds),
    gone: () => journal.statusGone(entryId),
  };
}
