import type { DeliveryItem } from "../durable/delivery-items.js";
import type { AttemptResult } from "../durable/outbox.js";

/**
 * How a turn ended: `ok` (the agent answered; its reply went to the outbox), `error` (the agent,
 * its sandbox or a step failed; the chat got a notice), `stopped` (by /stop or /reset),
 * `cut_off` (by the gateway's stop, or its session's lease was lost; the chat is told after the
 * restart or by the replica that takes the session), `elsewhere` (another replica holds the
 * session and runs it there), `refused` (its user's pairing was revoked while it waited).
 */
export type TurnExit = "ok" | "error" | "stopped" | "cut_off" | "elsewhere" | "refused";

/**
 * What one agent turn did, filled in by the steps as they run and logged once at its end as
 * the turn's info line (docs/operations.md). It holds sizes, outcomes and error messages,
 * never message or reply text.
 */
export class TurnReport {
  readonly #startedAtMs: number;
  readonly #queuedMs: number;
  readonly #now: () => number;
  exit: TurnExit | undefined;
  /** Commands the turn ran in its sandbox, and the last one's exit code. */
  commands = 0;
  exitCode: number | undefined;
  /** The reply's length in characters (UTF-16 code units, as the platforms count them). */
  replyChars: number | undefined;
  /** The first delivery attempt's result and what became of each part of the reply. */
  delivery: AttemptResult | undefined;
  deliveries: readonly DeliveryItem[] | undefined;
  failedStep: string | undefined;
  /** Edits of the turn's status message that got through (none posted: undefined). */
  statusEdits: number | undefined;
  /** Calls of the turn's streamed preview that got through (nothing streamed: undefined). */
  previewCalls: number | undefined;
  /** Why it failed (the error's message). */
  reason: string | undefined;

  /**
   * @param queuedAtMs when the message joined its session's queue (clock of `now`).
   * @param now a monotonic clock: the durations logged do not jump with the wall clock.
   */
  constructor(queuedAtMs: number, now: () => number = () => performance.now()) {
    this.#now = now;
    this.#startedAtMs = now();
    this.#queuedMs = Math.max(0, this.#startedAtMs - queuedAtMs);
  }

  /** The turn failed: `step` threw (or the agent failed, `step` then being `runTurn`). */
  failed(step: string, cause: unknown): void {
    this.exit = "error";
    this.failedStep = step;
    this.reason = cause instanceof Error ? cause.message : String(cause);
  }

  /** The fields of the turn's log line (unset ones left out). */
  fields(): Record<string, unknown> {
    const fields = {
      durationMs: Math.max(0, this.#now() - this.#startedAtMs),
      queuedMs: this.#queuedMs,
      exit: this.exit ?? "error",
      commands: this.commands,
      exitCode: this.exitCode,
      replyChars: this.replyChars,
      delivery: this.delivery,
      deliveries: this.deliveries,
      statusEdits: this.statusEdits,
      previewCalls: this.previewCalls,
      step: this.failedStep,
      reason: this.reason,
    };
    return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  }
}
