import { type Clock, systemClock } from "@mediagate/io";
import { InBrowser, printable } from "../printable.js";
import type { SessionContext } from "../session/context.js";

/** One session as the web console's Sessions page shows it. */
export interface LiveSession {
  readonly sessionKey: string;
  readonly profile: string;
  readonly platform: string;
  readonly chat: string;
  readonly user: string;
  readonly slot: string;
  lastActivityMs: number;
  /** When its running turn started; `undefined` between turns. */
  turnStartedMs?: number | undefined;
  /** What the running turn does now (`$ command`, `reading /path`). */
  doing?: string | undefined;
}

/** What changed in a {@link LiveSessions}. */
export type LiveChange = "sessions" | "deliveries";

/**
 * The sessions this process has seen and what their turns do right now, for the web console
 * (docs/web-console.md). Fed by the pipeline (a message bound to its session, a turn starting,
 * running a command, ending); every call is a map update, and listeners exist only while a
 * browser watches. At most `max` sessions are kept, the least recently active dropped first.
 */
export class LiveSessions {
  readonly #sessions = new Map<string, LiveSession>();
  readonly #listeners = new Set<(what: LiveChange) => void>();
  /** When recent turns ended, on the monotonic clock (a wall-clock step would skew the rate). */
  readonly #turnEnds: number[] = [];
  readonly #max: number;
  readonly #clock: Clock;

  /**
   * @param options.clock the wall clock stamps the sessions' activity (shown as times), the
   * monotonic one counts {@link turnsPerMinute}. Default `systemClock`.
   */
  constructor(options: { max: number; clock?: Clock }) {
    this.#max = options.max;
    this.#clock = options.clock ?? systemClock;
  }

  /** A message of the session arrived (bound to it). */
  seen(session: SessionContext, slot: string): void {
    const key = session.sessionKey;
    const known = this.#sessions.get(key);
    const now = this.#clock.wallMs();
    if (known !== undefined) {
      known.lastActivityMs = now;
      // Most recent last: the oldest is the first to go.
      this.#sessions.delete(key);
      this.#sessions.set(key, known);
    } else {
      // Names and commands come from chat users: escaped, so a bidi override or a control
      // cannot disguise on the Sessions page which session Stop and Reset act on.
      const chat = [session.chatType, printable(session.chatName ?? session.chatId, InBrowser)]
        .concat(session.threadId === undefined ? [] : [`thread ${session.threadId}`])
        .join(" ");
      this.#sessions.set(key, {
        sessionKey: key,
        profile: session.profile,
        platform: session.platform,
        chat,
        user:
          session.userName === undefined
            ? session.userId
            : `${printable(session.userName, InBrowser)} (${session.userId})`,
        slot,
        lastActivityMs: now,
      });
      while (this.#sessions.size > this.#max) {
        const oldest = this.#sessions.keys().next().value;
        if (oldest === undefined) break;
        this.#sessions.delete(oldest);
      }
    }
    this.#emit("sessions");
  }

  /** The session's turn starts running. */
  turnStarted(sessionKey: string): void {
    const session = this.#sessions.get(sessionKey);
    if (session === undefined) return;
    session.turnStartedMs = this.#clock.wallMs();
    session.lastActivityMs = session.turnStartedMs;
    session.doing = undefined;
    this.#emit("sessions");
  }

  /** What the running turn does now, or `undefined` between its commands. */
  doing(sessionKey: string, activity: string | undefined): void {
    const session = this.#sessions.get(sessionKey);
    if (session === undefined || session.turnStartedMs === undefined) return;
    session.doing = activity === undefined ? undefined : printable(activity, InBrowser);
    this.#emit("sessions");
  }

  /** The session's turn ended, however (its reply, if any, is in the outbox). */
  turnEnded(sessionKey: string): void {
    const monoMs = this.#clock.monoMs();
    this.#turnEnds.push(monoMs);
    while (this.#turnEnds.length > 0 && monoMs - this.#turnEnds[0]! > 60_000)
      this.#turnEnds.shift();
    const session = this.#sessions.get(sessionKey);
    if (session !== undefined) {
      session.turnStartedMs = undefined;
      session.doing = undefined;
      session.lastActivityMs = this.#clock.wallMs();
    }
    this.#emit("sessions");
    this.#emit("deliveries");
  }

  /** Turns that ended in the last minute. */
  turnsPerMinute(): number {
    const monoMs = this.#clock.monoMs();
    return this.#turnEnds.filter((at) => monoMs - at <= 60_000).length;
  }

  get(sessionKey: string): LiveSession | undefined {
    return this.#sessions.get(sessionKey);
  }

  /** Every known session, most recently active first. */
  list(): LiveSession[] {
    return [...this.#sessions.values()].reverse();
  }

  /** Hears of every change until the answered function is called. */
  listen(listener: (what: LiveChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(what: LiveChange): void {
    for (const listener of this.#listeners) listener(what);
  }
}
