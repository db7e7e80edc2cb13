import { SlotRegistry } from "../runtime/slot-registry.js";
import { abortedByStop } from "../session/stopping.js";
import { reportStepFailure } from "./boundary.js";
import { finishEntry } from "./journal-steps.js";
import { TurnFailedText } from "./run-turn.js";
import { PipelineStepError } from "./step-error.js";
import { TurnReport } from "./turn-report.js";
import { type Middleware, sessionOf } from "./types.js";

/** What the chat gets when a finished turn's reply cannot be recorded or delivered. */
export const DeliveryFailedText = "⚠️ The reply could not be delivered.";

/**
 * Step 4: queues the rest of the pipeline as the session's next turn (one at a time per
 * session, global cap across sessions). When the turn starts, the session id is read again (a /reset may have rotated it while the message
 * waited) and the context is bound anew: the job runs from whatever turn finished before it,
 * so the identity must not be inherited.
 *
 * A message the gateway's stop finds still queued is left in the journal as received: the next
 * start runs it (docs/durability.md). One dropped by /stop or /reset is closed.
 *
 * Each turn that runs ends with one info line, `turn finished`, from its {@link TurnReport}
 * (docs/operations.md); a step failing inside the turn is reported by name, and the chat gets
 * {@link DeliveryFailedText} when it was the delivery, the generic notice otherwise.
 */
export const enqueueTurn: Middleware = async (ctx, next) => {
  const queued = sessionOf(ctx);
  const { queue, scope, slots } = ctx.services;
  if (queue.closed) {
    ctx.log.info("gateway is stopping; the message stays in the journal for the next start");
    return;
  }
  let stopping: AbortSignal | undefined;
  const queuedAtMs = Date.now();
  const outcome = await queue.enqueue(queued.sessionKey, async (signal) => {
    stopping = signal;
    const turn = new TurnReport(queuedAtMs);
    ctx.turn = turn;
    try {
      const session = {
        ...queued,
        sessionId: await ctx.runtime.store.currentSessionId(queued.sessionKey),
      };
      const slot = ctx.runtime.slotFor(session.sessionKey);
      ctx.session = session;
      ctx.slot = slot;
      ctx.signal = signal;
      slots.note(SlotRegistry.slotId(session.profile, slot), session.sessionKey);
      await scope.run(session, next);
    } catch (error) {
      if (abortedByStop(signal)) {
        turn.exit = "cut_off";
        return;
      }
      // The steps after this one come out named; a failure binding the turn is this step's.
      const failure =
        error instanceof PipelineStepError ? error : new PipelineStepError("enqueueTurn", error);
      const notice = failure.step === "sendReply" ? DeliveryFailedText : TurnFailedText;
      await reportStepFailure(ctx, failure, notice);
    } finally {
      ctx.log.info(turn.fields(), "turn finished");
    }
  });
  if (outcome !== "dropped") return;
  if (queue.stopping || abortedByStop(stopping)) {
    ctx.log.info("gateway stopped before this message's turn; kept for the next start");
    return;
  }
  ctx.log.info("queued message dropped by /stop or /reset");
  await finishEntry(ctx, "stopped");
};
