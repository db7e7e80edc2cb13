import { type Schedule, scheduleWithTimer } from "@mediagate/io";
import { type ChatTarget, StatusCallError, type StatusMessages } from "../channels/types.js";
import { Defaults } from "../defaults.js";

/** The clock and timers of a {@link TurnProgress} (tests hand in manual ones). */
export interface ProgressClock {
  /** Now, in ms (only differences are used). */
  now(): number;
  /** Runs `run` once after `delayMs`; answers the function that cancels it. */
  schedule: Schedule;
}

/**
 * Real time: the monotonic clock (a step of the wall clock neither pauses edits for an hour nor
 * shows a turn running for eight) and unref'd timers (a status never keeps the process alive).
 */
export const RealProgressClock: ProgressClock = {
  now: () => performance.now(),
  schedule: scheduleWithTimer,
};

/** Defaults of {@link TurnProgress}. */
export const ProgressDefaults = {
  afterMs: Defaults.progress.afterSeconds * 1000,
  everyMs: Defaults.progress.everySeconds * 1000,
  maxFailedEdits: Defaults.progress.maxFailedEdits,
  requestTimeoutMs: Defaults.progress.requestTimeoutMs,
  /** The floor of `everyMs` whatever the configuration. */
  minEveryMs: Defaults.progress.minEverySeconds * 1000,
} as const;

/**
 * Where a turn keeps its status message while it shows (the turn's journal entry), so a
 * restart can clear one a crash left behind (docs/durability.md). Failures are reported to
 * `onProblem`; they never touch the turn.
 */
export interface StatusLedger {
  /** The status was posted as `messageId`. */
  shown(messageId: string): Promise<void>;
  /** The status is gone: deleted, or marked ended. */
  gone(): Promise<void>;
}

/** Options of {@link TurnProgress}. */
export interface ProgressOptions {
  /**
   * How long the turn runs before the status is posted. Default: `Defaults.progress.afterSeconds`.
   */
  readonly afterMs?: number | undefined;
  /**
   * At most one edit per this many ms (at least `Defaults.progress.minEverySeconds` and the
   * platform's floor). Default: `Defaults.progress.everySeconds`.
   */
  readonly everyMs?: number | undefined;
  readonly clock?: ProgressClock | undefined;
  /**
   * Edits failing in a row (not counting rate limits) before editing stops. Default:
   * `Defaults.progress.maxFailedEdits`.
   */
  readonly maxFailedEdits?: number | undefined;
  /** Bound of one status call. Default: `Defaults.progress.requestTimeoutMs`. */
  readonly requestTimeoutMs?: number | undefined;
  /** Told about each failed status call (logging); never throws. */
  readonly onProblem?: ((what: string, error: unknown) => void) | undefined;
  /** Keeps the status message while it shows. Default: kept nowhere. */
  readonly ledger?: StatusLedger | undefined;
}

/** How the elapsed time reads: seconds, then 10-second steps, then whole minutes. */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 600) {
    const tens = Math.floor((seconds % 60) / 10) * 10;
    return `${Math.floor(seconds / 60)}m ${String(tens).padStart(2, "0")}s`;
  }
  return `${Math.floor(seconds / 60)}m`;
}

/** What a command looks like in the status: its first line, at most 120 characters. */
export function describeCommand(command: string): string {
  const lines = command.trim().split("\n");
  const first = lines[0] ?? "";
  const cut = first.length > 120 ? `${first.slice(0, 119)}…` : first;
  return lines.length > 1 && !cut.endsWith("…") ? `${cut} …` : cut;
}

/** The status text: what the turn does and for how long. Starts with "⏳ working". */
export function statusText(elapsedMs: number, doing: string | undefined): string {
  const head = `⏳ working — ${formatElapsed(elapsedMs)}`;
  return doing === undefined ? head : `${head}\n${doing}`;
}

/**
 * The live status message of one turn (docs/sessions.md, "Live progress"). {@link start} posts
 * it once the turn ran `afterMs`; from then on it is edited with the elapsed time and what
 * the turn is doing ({@link doing}), at most once per `everyMs` and only when the text changed
 * (the elapsed time reads coarser as time goes, so a long turn is edited less often).
 * {@link finish} stops editing, waits for a call in flight and deletes the message; when the
 * delete fails the message is edited a last time to say the turn ended. The `ledger` is told
 * when the message is posted (before the first edit) and once it is gone; a status neither
 * deleted nor marked ended stays in it, for the next start to clear.
 *
 * Nothing here can break the turn or touch its reply: every call is caught, none is retried
 * (the post is never repeated, so there is never a second status, unless a rate limit refused
 * it: then it is made once the wait passed), a rate limit pauses the edits for as long as the
 * platform asked, and `maxFailedEdits` failures in a row stop them.
 */
export class TurnProgress {
  readonly #status: StatusMessages;
  readonly #target: ChatTarget;
  readonly #clock: ProgressClock;
  readonly #afterMs: number;
  readonly #everyMs: number;
  readonly #maxFailedEdits: number;
  readonly #requestTimeoutMs: number;
  readonly #onProblem: (what: string, error: unknown) => void;
  readonly #ledger: StatusLedger | undefined;
  #startedAtMs = 0;
  #doing: string | undefined;
  #messageId: string | undefined;
  #shown: string | undefined;
  #cancel: (() => void) | undefined;
  #inFlight: Promise<void> = Promise.resolve();
  #pausedUntilMs = 0;
  #failedEdits = 0;
  #editing = true;
  #finished: Promise<void> | undefined;
  /** Edits that got through, for the turn's report. */
  edits = 0;

  constructor(status: StatusMessages, target: ChatTarget, options: ProgressOptions = {}) {
    this.#status = status;
    this.#target = target;
    this.#clock = options.clock ?? RealProgressClock;
    this.#afterMs = options.afterMs ?? ProgressDefaults.afterMs;
    this.#everyMs = Math.max(
      options.everyMs ?? ProgressDefaults.everyMs,
      ProgressDefaults.minEveryMs,
      status.editIntervalMs(target),
    );
    this.#maxFailedEdits = options.maxFailedEdits ?? ProgressDefaults.maxFailedEdits;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? ProgressDefaults.requestTimeoutMs;
    this.#onProblem = options.onProblem ?? (() => {});
    this.#ledger = options.ledger;
  }

  /** The turn starts: the status is posted after `afterMs` unless it finishes first. */
  start(): void {
    this.#startedAtMs = this.#clock.now();
    this.#cancel = this.#clock.schedule(() => this.#post(), this.#afterMs);
  }

  /** What the turn does now (a command, a tool call), or `undefined` between them. */
  doing(activity: string | undefined): void {
    this.#doing = activity;
  }

  /** The status message's id once posted. */
  get messageId(): string | undefined {
    return this.#messageId;
  }

  /**
   * Stops editing and removes the status (or, when it cannot be deleted, says the turn
   * ended). Never rejects; safe to call twice.
   */
  finish(): Promise<void> {
    this.#finished ??= this.#finish();
    return this.#finished;
  }

  /**
   * The turn's streamed reply takes over (docs/streaming.md): the status is neither posted
   * nor edited any more. `keep`: the message stays for the preview to edit and later delete
   * (its id is answered; the ledger still holds it); otherwise it goes as at {@link finish}.
   * Never rejects.
   */
  async handOver(keep: boolean): Promise<string | undefined> {
    if (!keep) {
      await this.finish();
      return undefined;
    }
    this.#finished ??= this.#stop();
    await this.#finished;
    return this.#messageId;
  }

  async #stop(): Promise<void> {
    this.#cancel?.();
    this.#cancel = undefined;
    await this.#inFlight;
  }

  async #finish(): Promise<void> {
    await this.#stop();
    const id = this.#messageId;
    if (id === undefined) return;
    if (await this.#clear(id)) await this.#keep("gone", () => this.#ledger?.gone());
  }

  /** Deletes the status, or says the turn ended; false when neither got through. */
  async #clear(id: string): Promise<boolean> {
    try {
      await this.#status.remove(this.#target, id, this.#bound());
      return true;
    } catch (error) {
      this.#onProblem("could not delete the status message; marking it ended", error);
    }
    const text = `⌛ ended after ${formatElapsed(this.#clock.now() - this.#startedAtMs)}`;
    try {
      await this.#status.edit(this.#target, id, text, this.#bound());
      return true;
    } catch (error) {
      this.#onProblem("could not mark the status message ended", error);
      return false;
    }
  }

  /** Tells the ledger; a failure is reported, never thrown. */
  async #keep(what: "shown" | "gone", write: () => Promise<void> | undefined): Promise<void> {
    try {
      await write();
    } catch (error) {
      this.#onProblem(`could not record the status message ${what}`, error);
    }
  }

  #post(): void {
    if (this.#finished !== undefined) return;
    const text = this.#text();
    this.#inFlight = this.#status
      .post(this.#target, text, this.#bound())
      .then(async (id) => {
        this.#messageId = id;
        this.#shown = text;
        await this.#keep("shown", () => this.#ledger?.shown(id));
        this.#next();
      })
      .catch((error: unknown) => {
        // A rate limit is an answer that nothing was posted: the post is made once the wait
        // passed, unless the turn ended by then.
        const retryAfterMs = error instanceof StatusCallError ? error.retryAfterMs : undefined;
        if (retryAfterMs !== undefined && this.#finished === undefined) {
          this.#onProblem(`status post rate limited; posting it in ${retryAfterMs} ms`, error);
          this.#cancel = this.#clock.schedule(() => this.#post(), retryAfterMs);
          return;
        }
        // Not posted again: a post whose answer was lost may be in the chat already.
        this.#onProblem("could not post the status message; this turn shows none", error);
      });
  }

  #next(): void {
    if (this.#finished !== undefined || !this.#editing) return;
    this.#cancel = this.#clock.schedule(() => this.#tick(), this.#everyMs);
  }

  #tick(): void {
    const id = this.#messageId;
    if (this.#finished !== undefined || id === undefined) return;
    const text = this.#text();
    if (text === this.#shown || this.#clock.now() < this.#pausedUntilMs) {
      this.#next();
      return;
    }
    this.#inFlight = this.#status
      .edit(this.#target, id, text, this.#bound())
      .then(() => {
        this.#shown = text;
        this.#failedEdits = 0;
        this.edits += 1;
      })
      .catch((error: unknown) => this.#editFailed(error))
      .finally(() => this.#next());
  }

  #editFailed(error: unknown): void {
    const retryAfterMs = error instanceof StatusCallError ? error.retryAfterMs : undefined;
    if (retryAfterMs !== undefined) {
      this.#pausedUntilMs = this.#clock.now() + retryAfterMs;
      this.#onProblem(`status edit rate limited; pausing edits for ${retryAfterMs} ms`, error);
      return;
    }
    this.#failedEdits += 1;
    if (this.#failedEdits < this.#maxFailedEdits) {
      this.#onProblem("status edit failed; trying again at the next tick", error);
      return;
    }
    this.#editing = false;
    this.#onProblem(`${this.#failedEdits} status edits failed in a row; no more edits`, error);
  }

  #text(): string {
    return statusText(this.#clock.now() - this.#startedAtMs, this.#doing);
  }

  #bound(): AbortSignal {
    return AbortSignal.timeout(this.#requestTimeoutMs);
  }
}
