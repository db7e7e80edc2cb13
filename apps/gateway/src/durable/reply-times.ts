import type { Clock } from "@mediagate/io";
import type { OutboxRecord } from "./types.js";

/** When a reply taken over after a restart is attempted, and what its times say of the clock. */
export interface ResumedTiming {
  /** How long to wait before its attempt; 0: it is due now. */
  readonly waitMs: number;
  /**
   * How far, at least, the wall clock stepped back since the reply's times were recorded (0:
   * no sign of it): its creation lies in the future, or its retry time further ahead than
   * the longest wait it can have been given.
   */
  readonly stepBackMs: number;
}

/**
 * The outbox's ages and waits (docs/durability.md, "Clock steps"). Inside the process a reply's
 * age counts on the monotonic clock, so a step of the wall clock neither gives a young reply
 * up nor keeps an old one; the times recorded in the journal (its creation, its next attempt)
 * stay wall-clock times, the only ones a restarted process has. Such a process reads them with
 * a negative age counted as 0 and a retry time further ahead than `longestWaitMs` as due.
 */
export class ReplyTimes {
  readonly #clock: Clock;
  readonly #longestWaitMs: number;
  /** Each reply's creation on the monotonic clock, for the replies this process handles. */
  readonly #born = new Map<string, number>();

  constructor(clock: Clock, longestWaitMs: number) {
    this.#clock = clock;
    this.#longestWaitMs = longestWaitMs;
  }

  /** Reply `id` was recorded at `monoMs` (the monotonic clock when its record was asked for). */
  recorded(id: string, monoMs: number): void {
    this.#born.set(id, monoMs);
  }

  /**
   * Reads a reply a process that is gone left pending: its age so far is its recorded one (a
   * creation in the future counts as now), and it is attempted at its retry time, counted from
   * its creation when that lies in the future, or at once when that time lies further ahead
   * than `longestWaitMs`.
   */
  resumed(record: OutboxRecord): ResumedTiming {
    const wallMs = this.#clock.wallMs();
    const fromMs = Math.max(wallMs, record.createdAtMs);
    this.#born.set(record.id, this.#clock.monoMs() - (fromMs - record.createdAtMs));
    const waitMs = record.notBeforeMs - fromMs;
    const tooFarMs = Math.max(0, waitMs - this.#longestWaitMs);
    return {
      waitMs: tooFarMs > 0 ? 0 : Math.max(0, waitMs),
      stepBackMs: Math.max(fromMs - wallMs, tooFarMs),
    };
  }

  /** The reply's age now. */
  ageMs(record: OutboxRecord): number {
    let born = this.#born.get(record.id);
    if (born === undefined) {
      // Neither recorded nor resumed here: its recorded age, a negative one counted as 0.
      born = this.#clock.monoMs() - Math.max(0, this.#clock.wallMs() - record.createdAtMs);
      this.#born.set(record.id, born);
    }
    return this.#clock.monoMs() - born;
  }

  /** The wall-clock time, to record, of an attempt `delayMs` from now. */
  notBeforeMs(delayMs: number): number {
    return this.#clock.wallMs() + delayMs;
  }

  /** The reply is closed (delivered or given up): nothing more to count. */
  forget(id: string): void {
    this.#born.delete(id);
  }
}
