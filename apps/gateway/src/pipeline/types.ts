import type { TranslateContext } from "@mediagate/media";
import type { Sandbox } from "@mediagate/sandbox";
import type { Access } from "../access-control/access.js";
import type { PairingRefusals } from "../access-control/pairing-refusals.js";
import type { Agent, TurnAttachment } from "../agents/types.js";
import type { ApprovalBroker } from "../approvals/broker.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChatTarget,
  InboundMessage,
} from "../channels/types.js";
import type { ProfileConfig } from "../config/types.js";
import type { Outbox } from "../durable/outbox.js";
import type { Journal } from "../durable/types.js";
import type { ClusterHealth, StoreHealth } from "../health/server.js";
import type { Logger } from "../log.js";
import type { SlotRegistry } from "../sandbox-access/slot-registry.js";
import type { TaskServices } from "../schedules/services.js";
import type { BusySessions } from "../session/busy.js";
import type { SessionContext } from "../session/context.js";
import type { LiveSessions } from "../session/live-sessions.js";
import type { RunLater, TurnQueue } from "../session/queue.js";
import type { StateStore } from "../state/state-store.js";
import type { ProgressClock } from "../turn-progress/progress.js";
import type { MessageReaction } from "../turn-progress/reactions.js";
import { PipelineStepError } from "./step-error.js";
import type { TurnReport } from "./turn-report.js";

/** The sandbox operations the pipeline and the commands use. */
export type SandboxOps = Pick<
  Sandbox,
  | "run"
  | "killSession"
  | "killSlot"
  | "cleanup"
  | "status"
  | "readFile"
  | "slotDirectory"
  | "saveToInbox"
>;

/** What the pipeline needs of a profile's runtime (`ProfileRuntime` implements it). */
export interface PipelineRuntime {
  readonly profile: ProfileConfig;
  /** The profile's logger: commands that act on the sandbox log their failures here. */
  readonly log: Logger;
  readonly agent: Agent;
  readonly store: Pick<
    StateStore,
    | "currentSessionId"
    | "rotateSessionId"
    | "rotations"
    | "now"
    | "isPaired"
    | "requestPairing"
    | "approvePairing"
    | "sessionModel"
    | "setSessionModel"
    | "usagePeriods"
  >;
  readonly sandbox: SandboxOps;
  /** Counts a code request refused because the profile's pending codes are full. */
  readonly pairingRefusals: Pick<PairingRefusals, "count">;
  slotFor(sessionKey: string | undefined): string;
  isSharedSlot(slot: string): boolean;
  /**
   * Media translation for a turn of `sessionKey` whose tool calls ran in `slot`'s container
   * (that one only); files read out of the container are read as that session's user.
   */
  translateContext(slot: string, sessionKey: string, signal?: AbortSignal): TranslateContext;
}

/** A message whose turn ended while the store did not answer, kept in the journal. */
export interface KeptTurn {
  readonly message: InboundMessage;
  readonly entryId: number;
  /** The entries of the messages merged into its turn (an album's items). */
  readonly mergedEntryIds: readonly number[];
  /**
   * The journal took the turn's start, so its first command may have run. `false` also when
   * the start's write went through unheard (the server's answer was lost): the command did
   * not run then, whatever the journal says, and the turn runs again.
   */
  readonly commandMayHaveRun: boolean;
}

/** Process-wide services shared by every message. */
export interface PipelineServices {
  readonly queue: TurnQueue;
  /** The messages being collected per session (`collect` mode) and the overflow notices told. */
  readonly busy: BusySessions<MessageContext>;
  readonly slots: SlotRegistry;
  /** The per-install journal of inbound messages (and the outbox's records). */
  readonly journal: Journal;
  readonly outbox: Outbox;
  /** Each channel's health now (for `/status`). */
  readonly channels: () => readonly ChannelHealth[];
  /** The PostgreSQL store's health (for `/status`); absent, or `undefined`, with SQLite. */
  readonly store?: (() => Promise<StoreHealth | undefined>) | undefined;
  /** The cluster's replicas (admins' `/status`); absent, or `undefined`, with SQLite. */
  readonly cluster?: (() => Promise<ClusterHealth | undefined>) | undefined;
  /** Typing renewal period; default `Defaults.activity.intervalMs`. */
  readonly activityIntervalMs?: number | undefined;
  /** How long a turn runs before it shows typing (default `Defaults.activity.typingAfterMs`). */
  readonly typingAfterMs?: number | undefined;
  /** The clock and timers of turns' status messages; default real time (tests: manual). */
  readonly progressClock?: ProgressClock | undefined;
  /** What each session's turn does now, for the web console (absent: nobody asks). */
  readonly live?: LiveSessions | undefined;
  /** Default `Defaults.stopping.deliveryWaitMs` (tests: 0). */
  readonly deliveryWaitMs?: number | undefined;
  /** Asks before the agent acts (docs/approvals.md); absent: no profile's actions ask. */
  readonly approvals?: ApprovalBroker | undefined;
  /**
   * Posts a shared slot's /reset question with Confirm / Cancel buttons (docs/approvals.md);
   * false when the channel has no buttons (the typed `/reset confirm` is asked for then).
   */
  readonly resetButtons?:
    | {
        ask(
          channel: ChannelAdapter,
          target: ChatTarget,
          message: InboundMessage,
          sessionKey: string,
          question: string,
        ): Promise<boolean>;
        /** The gateway stops: closes the questions still waiting. Never rejects. */
        closeAll(): Promise<void>;
      }
    | undefined;
  /**
   * Posts a bare `/model`'s list with the sender's choices as buttons (docs/models-and-usage.md);
   * false when it did not (no buttons on the channel, nothing to choose): the text goes alone.
   */
  readonly modelButtons?:
    | {
        offer(
          channel: ChannelAdapter,
          target: ChatTarget,
          message: InboundMessage,
          runtime: PipelineRuntime,
          sessionKey: string,
          admin: boolean,
          text: string,
        ): Promise<boolean>;
      }
    | undefined;
  /**
   * A turn whose end the PostgreSQL store did not take (its entry stays unfinished in the
   * journal): the gateway runs it again once the store answers (docs/store.md). Absent: the
   * next start does.
   */
  readonly keep?: ((turn: KeptTurn) => void) | undefined;
  /** Scheduled tasks (docs/schedules.md): the task commands' scheduler and clock; absent: none. */
  readonly schedules?: TaskServices | undefined;
  /**
   * Told when the turn of the message these services were handed with starts, out of its
   * session's queue (merged into a collected turn: when that turn starts). A scheduled run's
   * timeout counts from there, not from its wait behind its owner's turns (docs/schedules.md).
   */
  readonly turnStarted?: (() => void) | undefined;
  /**
   * Which replica runs a session's turns (docs/cluster.md, "Sessions across replicas"); absent
   * with SQLite (one process runs them all).
   */
  readonly sessions?: SessionHold | undefined;
}

/** The session leases as the pipeline sees them (gateway/replica-sessions.ts). */
export interface SessionHold {
  /**
   * Claims the session for its turn about to start: true when this process holds its lease
   * and runs the turn; false when it may not (another live replica holds it and the entries
   * were handed to that one, or the database did not answer and they were given back): the
   * turn does not run here; {@link RunLater} when an older message of the session waits in
   * the queue to run first (docs/cluster.md): the turn goes back behind it.
   */
  acquire(turn: {
    readonly profile: string;
    readonly sessionKey: string;
    readonly entryIds: readonly number[];
    readonly log: Logger;
    /** The slot the turn runs in: a persistent or `shared:` one is pinned (docs/cluster.md). */
    readonly slot?: string | undefined;
    /** Says a line in the turn's chat (a pinned slot's files left behind, told once). */
    readonly tell?: ((text: string) => Promise<void>) | undefined;
    /** The turn's signal: `/stop` or the gateway's stop ends a wait for older messages. */
    readonly signal?: AbortSignal | undefined;
    /**
     * Accepted before (taken over from the journal): handed to another holder, it is not held
     * to that one's `maxQueuedMessages` (docs/cluster.md).
     */
    readonly recovered?: boolean | undefined;
  }): Promise<boolean | typeof RunLater>;
  /** A turn cut off because its lease was lost: its entries go back for the session's holder. */
  giveBack(entryIds: readonly number[]): void;
  /**
   * The message of these entries is in its session's queue here now: a newer turn held back
   * until it arrives ({@link acquire}, {@link RunLater}) looks again at once.
   */
  queued(entryIds: readonly number[]): void;
  /**
   * `/stop` or `/reset` for a session another live replica holds: asks that one to stop it
   * there; resolves with its id, or `undefined` when this process is the one to act.
   */
  askHolder(session: {
    readonly profile: string;
    readonly sessionKey: string;
  }): Promise<string | undefined>;
  /**
   * `/stop all`: asks every other live replica to stop what it runs on the session's slot
   * there (its container on that replica's engine); resolves with the replicas asked.
   */
  askEveryReplica(session: {
    readonly profile: string;
    readonly sessionKey: string;
  }): Promise<readonly string[]>;
  /**
   * `/stop`, `/stop all` or `/reset` here: closes as `stopped` the sessions' messages waiting
   * in the journal for this replica (handed to it, or left to the cluster), as their queued ones
   * are dropped; resolves with how many. One journal read per profile and platform, however
   * many sessions. Rejects when the journal does not answer.
   */
  dropWaiting(
    sessions: readonly { readonly profile: string; readonly sessionKey: string }[],
  ): Promise<number>;
}

/**
 * One inbound message on its way through the pipeline. Steps fill in the optional fields
 * for the steps after them.
 */
export interface MessageContext {
  /**
   * The message. In `collect` mode the turn that runs the messages collected while its session
   * was busy replaces it, when it starts, with one message holding all their texts (one per
   * line) and files (`enqueueTurn`).
   */
  message: InboundMessage;
  readonly channel: ChannelAdapter;
  readonly runtime: PipelineRuntime;
  readonly services: PipelineServices;
  readonly target: ChatTarget;
  /** The message's journal entry (absent only when it could not be recorded). */
  readonly entryId?: number | undefined;
  /**
   * The journal entries of the other messages merged into this turn (`collect` mode): they
   * start, end and are answered with this one's.
   */
  mergedEntryIds?: readonly number[];
  /**
   * Taken over from the journal at start-up (not just sent): it gets no "queued"
   * acknowledgement and is not held to `maxQueuedMessages` (it was accepted before).
   */
  readonly recovered?: boolean | undefined;
  /**
   * Taken from the journal, but handed over by the replica that received it just now
   * (docs/cluster.md): it is queued as a message just sent is, with its "queued" line and
   * held to `maxQueuedMessages`, here on its session's holder.
   */
  readonly handed?: boolean | undefined;
  log: Logger;
  access?: Access;
  session?: SessionContext;
  /**
   * The store's {@link StateStore.rotations} when `session`'s id was read: while it is the
   * same, no /reset of this process rotated an id since, and the turn uses that id as read.
   */
  sessionReadAt?: number;
  /** The container slot of the session's tool calls. */
  slot?: string;
  /** The running turn's signal (aborted by /stop). */
  signal?: AbortSignal;
  /** The message's files, saved in the session's inbox (`saveAttachments`). */
  attachments?: readonly TurnAttachment[];
  /** The agent's final reply text. */
  reply?: string;
  /** The running turn's report, logged when it ends (set by `enqueueTurn`). */
  turn?: TurnReport;
  /**
   * What the command handling the message says, collected while it runs and recorded with the
   * entry's close (pipeline/command-answer.ts); absent: `say` sends at once.
   */
  answer?: AnswerCollector | undefined;
  /** The message's status reaction, when it shows one (`reactToMessage`). */
  reaction?: MessageReaction;
  /** The journal took the turn's start (`startEntry`): its first command may run from then. */
  started?: boolean;
  /** The status reactions of the messages merged into this turn (`collect` mode). */
  mergedReactions?: readonly MessageReaction[];
}

/**
 * What a command says while it runs, collected to be recorded with its entry's close
 * (`CommandAnswer` in pipeline/command-answer.ts).
 */
export interface AnswerCollector {
  /** Adds a line to the answer. */
  add(text: string): void;
  /**
   * The answer is posted with buttons by `post` (false: it was not); `text` is what the chat
   * gets instead, with typed answers (also after a crash between the record and the post).
   */
  offer(text: string, post: () => Promise<boolean>): void;
}

/** One pipeline step: do something, then call `next` to continue (or don't, to stop here). */
export type Middleware = (ctx: MessageContext, next: () => Promise<void>) => Promise<void>;

/**
 * Runs `steps` in order, each deciding whether to call the next (grammY-style). An error a
 * step throws comes out as a {@link PipelineStepError} naming that step (by its function
 * name); the steps it passes through on the way out do not rename it.
 */
export function compose(steps: readonly Middleware[]): (ctx: MessageContext) => Promise<void> {
  return (ctx) => {
    const dispatch = async (index: number): Promise<void> => {
      const step = steps[index];
      if (step === undefined) return;
      const name = step.name || `step ${index}`;
      let called = false;
      ctx.log.debug({ step: name }, "pipeline step");
      try {
        await step(ctx, () => {
          if (called) return Promise.reject(new Error(`pipeline step "${name}" called next twice`));
          called = true;
          return dispatch(index + 1);
        });
      } catch (error) {
        throw error instanceof PipelineStepError ? error : new PipelineStepError(name, error);
      }
    };
    return dispatch(0);
  };
}

/**
 * Says a line in the message's chat: into the command's answer while one is collected
 * (`ctx.answer`, recorded with the entry's close), else sent at once ({@link sayNow}).
 */
export async function say(ctx: MessageContext, text: string): Promise<void> {
  if (ctx.answer !== undefined) {
    ctx.answer.add(text);
    return;
  }
  await sayNow(ctx, text);
}

/**
 * Offers `text` with buttons: into the command's answer while one is collected (posted by
 * `post` once recorded), else at once (`post`, or the text alone when it declines).
 */
export async function offerButtons(
  ctx: MessageContext,
  text: string,
  post: () => Promise<boolean>,
): Promise<void> {
  if (ctx.answer !== undefined) {
    ctx.answer.offer(text, post);
    return;
  }
  if (!(await post())) await sayNow(ctx, text);
}

/**
 * Sends a line to the message's chat at once; failures are logged, never thrown. It gives up
 * when the gateway's stop aborts the outbox (not on /stop: a command's answer must still go out).
 */
export async function sayNow(ctx: MessageContext, text: string): Promise<void> {
  try {
    await ctx.channel.sendText(ctx.target, text, ctx.services.outbox.signal);
  } catch (error) {
    ctx.log.warn({ err: error }, "could not send a message to the chat");
  }
}

/** The session of the context; a step that needs it runs after `bindSession`. */
export function sessionOf(ctx: MessageContext): SessionContext {
  if (ctx.session === undefined) throw new Error("no session bound: bindSession must run first");
  return ctx.session;
}
