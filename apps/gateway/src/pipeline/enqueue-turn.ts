import { MediagateError } from "@mediagate/io";
import type { InboundAttachment } from "../channels/types.js";
import { interruptSession } from "../commands/stop.js";
import { SessionLeaseLostError } from "../durable/session-leases.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import type { SessionContext } from "../session/context.js";
import { RunLater, type TurnOutcome } from "../session/queue.js";
import { abortedByStop } from "../session/stopping.js";
import { reportStepFailure } from "./boundary.js";
import { sayAndFinish } from "./command-answer.js";
import { entryIdsOf, finishEntry } from "./journal-steps.js";
import { TurnFailedText } from "./run-turn.js";
import { PipelineStepError } from "./step-error.js";
import { TurnReport } from "./turn-report.js";
import { type MessageContext, type Middleware, say, sessionOf } from "./types.js";

/** What the chat gets when a finished turn's reply cannot be recorded or delivered. */
export const DeliveryFailedText = "⚠️ The reply could not be delivered.";

/** The line a message that waits behind its session's turn gets (`busyMode: queue`). */
export function queuedText(ahead: number, admin: boolean): string {
  return `⏳ queued — ${ahead} ahead${admin ? "; /stop cancels" : ""}`;
}

/** The line a message collected for the session's next turn gets (`busyMode: collect`). */
export function collectedText(count: number, admin: boolean): string {
  const head =
    count === 1
      ? "⏳ queued for the next turn"
      : `⏳ queued — ${count} messages go in the next turn together`;
  return `${head}${admin ? "; /stop cancels" : ""}`;
}

/** The line a message that stopped its session's running turn gets (`busyMode: interrupt`). */
export const InterruptedTurnText = "⏹ stopped the running turn; this message runs next";

/** The line a chat gets once when its session already has `max` messages waiting. */
export function queueFullText(max: number, admin: boolean): string {
  return `⚠️ ${max} messages are already waiting in this chat: this one was not run, nor will any sent before they are done. Send it again later${admin ? ", or /stop to cancel them" : ""}.`;
}

/** The abort reason of a turn stopped by a newer message (`busyMode: interrupt`). */
export class InterruptedByMessageError extends MediagateError {
  override readonly name = "InterruptedByMessageError";
  readonly code = "MG_TURN_INTERRUPTED";
  constructor() {
    super("interrupted by a newer message of the session");
  }
}

/**
 * Step 4: queues the rest of the pipeline as the session's next turn (one at a time per
 * session, global cap across sessions). When the turn starts, the session id is read again if
 * a /reset rotated one since the message was bound (it may have been this session's, while the
 * message waited), and the context is bound anew: the job runs from whatever turn finished
 * before it, so the identity must not be inherited.
 *
 * A job's place in its session's queue is its journal entry id (the order the messages were
 * received in): with replicas a message handed over or taken over may arrive after a later
 * one, and goes before it (docs/cluster.md, "Each session's messages in order").
 *
 * A message that arrives while its session is busy (docs/sessions.md, "Busy sessions": a turn
 * running that has not handed its reply over for delivery, or messages waiting) gets one line
 * saying so, and the profile's `busyMode` decides: `queue` waits its turn;
 * `interrupt` stops the running turn the way /stop does (abort, kill the session's
 * processes) and runs next; `collect` joins the messages waiting for the next turn, which runs
 * them as one message (texts one per line, every file), its journal entries started, closed
 * and answered together. At most `maxQueuedMessages` wait per session; one more is not run,
 * is closed in the journal as `overflow` (never redelivered) and the chat is told once.
 * Messages taken over from the journal at start-up get no line, are not capped and interrupt
 * nothing (they wait for the turn before them, as in `queue` mode); with replicas, the cap is
 * the holder's: a message another replica received and handed to it is told, capped and
 * interrupts there ({@link MessageContext.handed}), one accepted before does not.
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
  const { queue, slots, busy } = ctx.services;
  if (queue.closed) {
    ctx.log.info("gateway is stopping; the message stays in the journal for the next start");
    return;
  }
  const key = queued.sessionKey;
  const { busyMode, maxQueuedMessages } = ctx.runtime.profile;
  // A turn whose reply is already on its way is not one to wait behind (nor to interrupt).
  const running = queue.isAnswering(key);
  const waiting = queue.queued(key);
  // What it waits for: one handed over by another replica may go before later ones.
  const order = orderOf(ctx);
  const ahead = queue.aheadOf(key, order);
  // Taken over from the journal: accepted before, not told again nor capped; unless another
  // replica just received it and handed it to this one, its session's holder (docs/cluster.md).
  const tell = ctx.recovered !== true || ctx.handed === true;
  const admin = ctx.access?.admin === true;

  if (busyMode === "collect") {
    const collecting = busy.collecting(key, waiting);
    if (collecting !== undefined) {
      if (tell && collecting.size >= maxQueuedMessages) {
        await refuseFull(ctx, key, maxQueuedMessages, admin);
        return;
      }
      collecting.join(ctx);
      busy.accepted(key);
      ctx.log.info({ collected: collecting.size }, "message collected for the session's next turn");
      if (tell) await say(ctx, collectedText(collecting.size, admin));
      // Its turn is the owner's: entries, reply and logs are done there.
      await collecting.settled;
      return;
    }
  } else if (tell && waiting >= maxQueuedMessages) {
    await refuseFull(ctx, key, maxQueuedMessages, admin);
    return;
  }
  busy.accepted(key);
  const collected = busyMode === "collect" ? busy.collect(key, ctx) : undefined;
  // Once only: a turn sent back behind an older message ({@link RunLater}) starts again with
  // its context already merged, and merging again would repeat every member after the owner.
  let merged = false;
  const merge = () => {
    if (collected === undefined || merged) return;
    merged = true;
    mergeCollected(ctx, collected.close());
  };
  // The abort happens now, before this message is queued; the kill finishes before it runs.
  // A message taken over from the journal was accepted before and runs in its order, after
  // the turn before it: stopping that turn would drop a message nobody is told of.
  const interrupting =
    busyMode === "interrupt" && running && tell
      ? interruptSession(ctx.runtime, ctx.services, key, new InterruptedByMessageError())
      : undefined;

  // Known on its slot from now, not from when its turn starts: `/stop all` drops a message
  // that waits for a turn to free up as well as one behind its own session's turn.
  const slot = ctx.runtime.slotFor(key);
  slots.note(SlotRegistry.slotId(queued.profile, slot), key);
  let stopping: AbortSignal | undefined;
  const queuedAtMs = performance.now();
  const outcome = queue.enqueue(
    key,
    async (signal) => {
      stopping = signal;
      let later = false;
      const turn = new TurnReport(queuedAtMs);
      ctx.turn = turn;
      ctx.services.live?.turnStarted(key);
      ctx.services.turnStarted?.();
      try {
        merge();
        if (interrupting !== undefined) {
          const interrupted = await interrupting;
          ctx.log.info(interrupted, "the session's previous turn was interrupted by this message");
        }
        const held = await heldHere(ctx, key, slot, signal, !tell);
        if (held === RunLater) {
          later = true;
          return RunLater;
        }
        if (!held) {
          turn.exit = "elsewhere";
          return;
        }
        queue.admitted(key);
        const session = { ...queued, sessionId: await currentSessionId(ctx, queued) };
        ctx.session = session;
        ctx.slot = slot;
        ctx.signal = signal;
        await next();
      } catch (error) {
        if (abortedByStop(signal)) {
          turn.exit = "cut_off";
          return;
        }
        if (leaseLost(signal, error)) {
          ctx.log.warn("the session's lease was lost: the turn is cut off and left to its holder");
          ctx.services.sessions?.giveBack(entryIdsOf(ctx));
          turn.exit = "cut_off";
          return;
        }
        // The steps after this one come out named; a failure binding the turn is this step's.
        const failure =
          error instanceof PipelineStepError ? error : new PipelineStepError("enqueueTurn", error);
        const notice = failure.step === "sendReply" ? DeliveryFailedText : TurnFailedText;
        await reportStepFailure(ctx, failure, notice);
      } finally {
        // A turn cut off by a lost lease leaves its messages to the session's new holder.
        if (leaseLost(signal, undefined)) ctx.services.sessions?.giveBack(entryIdsOf(ctx));
        ctx.services.live?.turnEnded(key);
        if (!later) ctx.log.info(turn.fields(), "turn finished");
      }
    },
    order,
  );
  ctx.services.sessions?.queued(entryIdsOf(ctx));
  if (tell && interrupting !== undefined) await say(ctx, InterruptedTurnText);
  else if (tell && collected !== undefined && (running || waiting > 0)) {
    await say(ctx, collectedText(1, admin));
  } else if (tell && collected === undefined && ahead > 0) {
    await say(ctx, queuedText(ahead, admin));
  }
  let result: TurnOutcome;
  try {
    result = await outcome;
    if (result !== "dropped") return;
    // Dropped before it started: the messages collected for it share its fate.
    merge();
    if (queue.stopping || abortedByStop(stopping)) {
      ctx.log.info("gateway stopped before this message's turn; kept for the next start");
      return;
    }
    ctx.log.info("queued message dropped by /stop or /reset");
    await finishEntry(ctx, "stopped");
  } finally {
    if (collected !== undefined) busy.ended(key, collected);
  }
};

/**
 * Whether this process runs the session's turn: always with one process (no session leases);
 * with replicas, when it holds the session's lease, once the session's older messages ran
 * ({@link RunLater} until then: docs/cluster.md).
 */
async function heldHere(
  ctx: MessageContext,
  sessionKey: string,
  slot: string,
  signal: AbortSignal,
  recovered: boolean,
): Promise<boolean | typeof RunLater> {
  const sessions = ctx.services.sessions;
  if (sessions === undefined) return true;
  return sessions.acquire({
    profile: ctx.message.profile,
    sessionKey,
    entryIds: entryIdsOf(ctx),
    log: ctx.log,
    slot,
    tell: (text) => say(ctx, text),
    signal,
    recovered,
  });
}

/** The message's place in its session's queue: its journal entry, the order it was received in. */
function orderOf(ctx: MessageContext): number | undefined {
  const ids = entryIdsOf(ctx);
  return ids.length === 0 ? undefined : Math.min(...ids);
}

/** Whether the turn ended because its session's lease was lost (the abort, or a fenced write). */
function leaseLost(signal: AbortSignal, error: unknown): boolean {
  if (signal.aborted && signal.reason instanceof SessionLeaseLostError) return true;
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof SessionLeaseLostError) return true;
  }
  return false;
}

/**
 * The session id the turn runs with: the one read when the message was bound, unless a /reset
 * of this process rotated any session's id since (the message may have waited behind it), in
 * which case it is read again. A turn that starts right away so costs no second read.
 */
async function currentSessionId(ctx: MessageContext, bound: SessionContext): Promise<string> {
  const { store } = ctx.runtime;
  if (ctx.sessionReadAt === store.rotations) return bound.sessionId;
  return store.currentSessionId(bound.sessionKey);
}

/**
 * Makes the owner's context the collected turn's (`collect` mode): one message with every
 * member's text (one per line, empty ones left out) and files, in the order they came, and
 * the other members' journal entries to start and close with it.
 */
function mergeCollected(ctx: MessageContext, members: readonly MessageContext[]): void {
  const others = members.slice(1);
  if (others.length === 0) return;
  const texts = members.map((m) => m.message.text).filter((text) => text.trim() !== "");
  const attachments: InboundAttachment[] = members.flatMap((m) => m.message.attachments ?? []);
  ctx.message = { ...ctx.message, text: texts.join("\n"), attachments };
  ctx.mergedEntryIds = others.flatMap((m) => (m.entryId === undefined ? [] : [m.entryId]));
  for (const member of others) member.services.turnStarted?.();
  ctx.mergedReactions = others.flatMap((m) => m.reaction?.handOver() ?? []);
  ctx.log.info(
    { messages: members.length, files: attachments.length },
    "collected messages run as one turn",
  );
}

/** The session's queue is full: the message is not run, closed as `overflow`, told once. */
async function refuseFull(
  ctx: MessageContext,
  sessionKey: string,
  max: number,
  admin: boolean,
): Promise<void> {
  ctx.log.warn({ maxQueuedMessages: max }, "session queue full: message not run");
  const told = ctx.services.busy.tellFull(sessionKey);
  await sayAndFinish(ctx, told ? queueFullText(max, admin) : undefined, "overflow");
}
