import { type CombinedSignal, combinedSignal, type Schedule } from "@mediagate/io";
import type { ChatTarget } from "../channels/types.js";
import {
  type PreviousReaction,
  ReactionCallError,
  type ReactionStatus,
  type StatusReactions,
} from "../channels/types.js";
import { Defaults } from "../defaults.js";
import { RealProgressClock } from "./progress.js";

/** Options of {@link MessageReaction}. */
export interface MessageReactionOptions {
  /**
   * The reaction the message may carry already: `unknown` for a message taken over from the
   * journal (a previous process may have left one). Default `none`.
   */
  readonly previous?: PreviousReaction | undefined;
  /** Bound of one call. Default: `Defaults.reactions.requestTimeoutMs`. */
  readonly requestTimeoutMs?: number | undefined;
  /** The longest rate-limit wait honoured. Default: `Defaults.reactions.maxRetryAfterMs`. */
  readonly maxRetryAfterMs?: number | undefined;
  /**
   * `seen` and `working` show only once the message was accepted this long ago; a turn that
   * ends sooner leaves none, or 👎 alone when it failed (docs/sessions.md, "Status
   * reactions"). Default 0: at once.
   */
  readonly afterMs?: number | undefined;
  /** Timers of the rate-limit waits and of `afterMs`. Default: real, unref'd timers. */
  readonly schedule?: Schedule | undefined;
  /** Aborting it (the gateway's stop) ends the calls and waits: what is not set stays so. */
  readonly signal?: AbortSignal | undefined;
  /** Told once when the message's reactions are given up; never throws. */
  readonly onProblem?: ((error: unknown) => void) | undefined;
}

type Wanted = ReactionStatus | undefined;

/** The statuses of a message still on its way; `afterMs` holds them back. */
const passing: ReadonlySet<Wanted> = new Set<Wanted>(["seen", "working"]);

/**
 * The bot's status reaction on one user's message (docs/sessions.md, "Status reactions").
 * Best effort, never in the turn's way: {@link set} returns at once, and the calls run one at
 * a time behind it, each sending the latest status wanted (the ones overtaken meanwhile are
 * never sent). Until `afterMs` passed, `seen` and `working` are only remembered: a message
 * answered sooner costs no reaction call, since its reply says all they would (one failed
 * still gets 👎). A rate limit waits its `retry_after` (up to `maxRetryAfterMs`) and then sends
 * the latest status once; a longer wait, any other failure, or a second rate limit in a row
 * gives the message's reactions up: whatever shows stays.
 */
export class MessageReaction {
  readonly #reactions: StatusReactions;
  readonly #target: ChatTarget;
  readonly #messageId: string;
  readonly #settings: {
    readonly requestTimeoutMs: number;
    readonly maxRetryAfterMs: number;
    readonly schedule: Schedule;
  };
  readonly #signal: AbortSignal | undefined;
  readonly #onProblem: (error: unknown) => void;
  #shown: PreviousReaction;
  #wanted: Wanted | "unset" = "unset";
  #running: Promise<void> | undefined;
  #gaveUp = false;
  #handedOver = false;
  /** Cancels the `afterMs` wait while it runs. */
  #cancelHold: (() => void) | undefined;

  constructor(
    reactions: StatusReactions,
    target: ChatTarget,
    messageId: string,
    options: MessageReactionOptions = {},
  ) {
    this.#reactions = reactions;
    this.#target = target;
    this.#messageId = messageId;
    this.#signal = options.signal;
    this.#onProblem = options.onProblem ?? (() => {});
    this.#shown = options.previous ?? "none";
    this.#settings = {
      requestTimeoutMs: options.requestTimeoutMs ?? Defaults.reactions.requestTimeoutMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? Defaults.reactions.maxRetryAfterMs,
      schedule: options.schedule ?? RealProgressClock.schedule,
    };
    const afterMs = options.afterMs ?? 0;
    if (afterMs > 0) {
      this.#cancelHold = this.#settings.schedule(() => {
        this.#cancelHold = undefined;
        if (this.#wanted !== "unset") this.set(this.#wanted);
      }, afterMs);
    }
  }

  /** Asks for `status` (`undefined`: no reaction); returns at once. */
  set(status: ReactionStatus | undefined): void {
    if (this.#gaveUp) return;
    this.#wanted = status;
    if (this.#cancelHold !== undefined) {
      if (passing.has(status)) return;
      this.#cancelHold();
      this.#cancelHold = undefined;
      // Nothing shows yet, and the reply tells what `done` would.
      if (status === "done" && this.#shown === "none") return;
    }
    this.#running ??= this.#work().finally(() => {
      this.#running = undefined;
    });
  }

  /**
   * Its message was merged into another message's turn (`collect` mode), which sets this
   * reaction from now on; answers itself.
   */
  handOver(): MessageReaction {
    this.#handedOver = true;
    return this;
  }

  /** Whether another message's turn sets this reaction ({@link handOver}). */
  get handedOver(): boolean {
    return this.#handedOver;
  }

  /** Resolves once nothing is left to send (tests, and a stop that waits for the last one). */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #work(): Promise<void> {
    let limited = false;
    while (!this.#gaveUp && this.#wanted !== "unset" && !this.#isShown(this.#wanted)) {
      if (this.#signal?.aborted === true) return;
      const status = this.#wanted;
      const call = this.#callSignal();
      try {
        await this.#reactions.set(this.#target, this.#messageId, status, this.#shown, call.signal);
        this.#shown = status ?? "none";
        limited = false;
      } catch (error) {
        const waitMs = error instanceof ReactionCallError ? error.retryAfterMs : undefined;
        if (limited || waitMs === undefined || waitMs > this.#settings.maxRetryAfterMs) {
          this.#giveUp(error);
          return;
        }
        limited = true;
        if (!(await this.#wait(waitMs))) return;
      } finally {
        call.release();
      }
    }
  }

  #isShown(status: Wanted): boolean {
    return (status ?? "none") === this.#shown;
  }

  #giveUp(error: unknown): void {
    this.#gaveUp = true;
    this.#onProblem(error);
  }

  /** One call's signal: its timeout, and the stop (released once the call ended). */
  #callSignal(): CombinedSignal {
    const timeout = AbortSignal.timeout(this.#settings.requestTimeoutMs);
    return this.#signal === undefined
      ? { signal: timeout, release: () => {} }
      : combinedSignal([timeout, this.#signal]);
  }

  /** Waits `ms` (false: the stop came first). */
  #wait(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const signal = this.#signal;
      const onAbort = () => {
        cancel();
        resolve(false);
      };
      const cancel = this.#settings.schedule(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
