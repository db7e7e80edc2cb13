import type { JournalOutcome } from "../durable/types.js";
import type { MessageContext } from "./types.js";

/**
 * Closes the message's journal entry: nothing is left to do for it after a restart. A failure
 * is logged, not thrown: the worst outcome is that a restart sends the chat a notice for a
 * message that was in fact handled.
 */
export async function finishEntry(ctx: MessageContext, outcome: JournalOutcome): Promise<void> {
  if (ctx.entryId === undefined) return;
  try {
    await ctx.services.journal.finished(ctx.entryId, outcome);
  } catch (error) {
    ctx.log.error(
      { err: error, entryId: ctx.entryId, outcome },
      "could not close the journal entry",
    );
  }
}

/**
 * Records that the turn's first command is about to run in its container: after a crash the
 * message counts as cut off (its chat is told), not as new. A turn cut off before that — in
 * the queue, provisioning its container, waiting for the model — ran no command and is simply
 * run again.
 */
export async function startEntry(ctx: MessageContext): Promise<void> {
  if (ctx.entryId === undefined) return;
  await ctx.services.journal.started(ctx.entryId);
}
