import { storeUnreachable } from "../postgres/errors.js";
import { StateStoreError } from "../state/errors.js";
import { sayAndFinish } from "./command-answer.js";
import { TurnFailedText } from "./run-turn.js";
import { failedStep, stepCause } from "./step-error.js";
import { type MessageContext, say } from "./types.js";

/** The line a chat gets when its session's state cannot be written (the profile's disk). */
export const StateFullText =
  "⚠️ Your message could not be handled: the gateway's disk is full. It is kept and will be handled after the gateway restarts with space again.";

/** The line a chat gets when the PostgreSQL store did not answer (docs/store.md). */
export const StoreDownText =
  "⚠️ Your message could not be handled: the gateway's database is not reachable. It is kept and will be handled once the database is back.";

/**
 * Reports a step failure no step handled: one error line naming the step
 * (`pipeline step "runTurn" failed`, with `step` and the step's error as `err`; the context's
 * logger adds profile, platform and session key), `notice` in the chat, and the message's
 * journal entry closed as failed; the turn's log line records the step too. A full state
 * database and an unreachable PostgreSQL store are the exceptions: the message stays in the
 * journal, and the chat is told so; the next start handles it, or, for the store, the gateway
 * once the store answers again (`services.keep`).
 */
export async function reportStepFailure(
  ctx: MessageContext,
  error: unknown,
  notice: string,
): Promise<void> {
  const step = failedStep(error) ?? "unknown";
  const cause = stepCause(error);
  ctx.turn?.failed(step, cause);
  if (cause instanceof StateStoreError && cause.full) {
    ctx.log.error(
      { err: cause, step },
      `pipeline step "${step}" failed: state database full; the message stays in the journal`,
    );
    await say(ctx, StateFullText);
    return;
  }
  if (storeUnreachable(cause)) {
    ctx.log.error(
      { err: cause, step },
      `pipeline step "${step}" failed: the database is not reachable; the message stays in the journal`,
    );
    await say(ctx, StoreDownText);
    if (ctx.entryId !== undefined) {
      ctx.services.keep?.({
        message: ctx.message,
        entryId: ctx.entryId,
        mergedEntryIds: ctx.mergedEntryIds ?? [],
        commandMayHaveRun: ctx.started === true,
      });
    }
    return;
  }
  ctx.log.error({ err: cause, step }, `pipeline step "${step}" failed`);
  await sayAndFinish(ctx, notice, "failed");
}

/**
 * The pipeline's error boundary (grammY's `errorBoundary`): the handler never rejects; a step
 * failure nobody handled is reported by {@link reportStepFailure} with the generic notice.
 */
export function withErrorBoundary(
  handle: (ctx: MessageContext) => Promise<void>,
): (ctx: MessageContext) => Promise<void> {
  return async (ctx) => {
    try {
      await handle(ctx);
    } catch (error) {
      await reportStepFailure(ctx, error, TurnFailedText);
    }
  };
}
