import type { ServerResponse } from "node:http";
import { WebDefaults } from "./defaults.js";
import type { ConsoleSource } from "./source.js";
import type { ChangeKind } from "./types.js";

/** One browser's event stream. */
interface Subscriber {
  readonly sessionId: string;
  readonly response: ServerResponse;
}

/** Options of {@link LiveHub}. */
export interface LiveHubOptions {
  readonly source: ConsoleSource;
  readonly intervalMs?: number | undefined;
  readonly heartbeatMs?: number | undefined;
  readonly onError?: ((error: unknown) => void) | undefined;
  /**
   * Whether a login session still holds: a stream whose session ended (expired, logged out)
   * is closed at the next tick. Default: always.
   */
  readonly valid?: ((sessionId: string) => boolean) | undefined;
  /** Runs `run` every `ms` until the answered function is called (default an unref'd interval). */
  readonly every?: ((run: () => void, ms: number) => () => void) | undefined;
  /** Streams one login session keeps at once (default `WebDefaults.eventStreamsPerLogin`). */
  readonly streamsPerLogin?: number | undefined;
  /** Unread bytes past which a stream is closed (default `WebDefaults.eventStreamBacklogBytes`). */
  readonly backlogBytes?: number | undefined;
}

/** An unref'd `setInterval`: live updates never keep the process alive. */
function everyWithTimer(run: () => void, ms: number): () => void {
  const timer = setInterval(run, ms);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Server-sent events to the browsers that watch. While nobody watches, nothing runs: no timer,
 * no listener on the source. With one or more watching, every `intervalMs` the sessions and
 * the overview are computed once (for all of them) and sent when they changed, and the kinds
 * of data the source said changed since the last tick are named (`changed`), so pages
 * fetch again only what they show.
 */
export class LiveHub {
  readonly #source: ConsoleSource;
  readonly #intervalMs: number;
  readonly #heartbeatMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #subscribers = new Set<Subscriber>();
  readonly #changed = new Set<ChangeKind>();
  readonly #every: (run: () => void, ms: number) => () => void;
  readonly #valid: (sessionId: string) => boolean;
  readonly #streamsPerLogin: number;
  readonly #backlogBytes: number;
  #unlisten: (() => void) | undefined;
  #timer: (() => void) | undefined;
  #heartbeat: (() => void) | undefined;
  #ticking = false;
  #lastSessions = "";
  #lastOverview = "";
  /** Ticks run so far. */
  ticks = 0;

  /** Runs one update now (what the timer does); nothing when nobody watches. */
  tick(): Promise<void> {
    return this.#tick();
  }

  constructor(options: LiveHubOptions) {
    this.#source = options.source;
    this.#intervalMs = options.intervalMs ?? WebDefaults.liveIntervalMs;
    this.#heartbeatMs = options.heartbeatMs ?? WebDefaults.heartbeatMs;
    this.#onError = options.onError ?? (() => {});
    this.#every = options.every ?? everyWithTimer;
    this.#valid = options.valid ?? (() => true);
    this.#streamsPerLogin = Math.max(
      1,
      options.streamsPerLogin ?? WebDefaults.eventStreamsPerLogin,
    );
    this.#backlogBytes = options.backlogBytes ?? WebDefaults.eventStreamBacklogBytes;
  }

  get subscribers(): number {
    return this.#subscribers.size;
  }

  /**
   * Starts streaming to `response` (headers already written); ends when it closes. The login
   * session's oldest stream is closed first if it holds `streamsPerLogin` already.
   */
  add(sessionId: string, response: ServerResponse): void {
    const own = [...this.#subscribers].filter((s) => s.sessionId === sessionId);
    for (const oldest of own.slice(0, own.length - this.#streamsPerLogin + 1)) this.#drop(oldest);
    const subscriber = { sessionId, response };
    this.#subscribers.add(subscriber);
    response.on("close", () => this.#remove(subscriber));
    if (this.#subscribers.size === 1) this.#begin();
    else {
      // A newcomer gets the current state at once, not at the next change.
      if (this.#lastSessions !== "") this.#send(subscriber, "sessions", this.#lastSessions);
      if (this.#lastOverview !== "") this.#send(subscriber, "overview", this.#lastOverview);
    }
  }

  /** Ends the streams of a login session (logout). */
  endSession(sessionId: string): void {
    for (const subscriber of [...this.#subscribers]) {
      if (subscriber.sessionId === sessionId) subscriber.response.end();
    }
  }

  close(): void {
    for (const subscriber of [...this.#subscribers]) subscriber.response.end();
    this.#end();
  }

  #remove(subscriber: Subscriber): void {
    if (!this.#subscribers.delete(subscriber)) return;
    if (this.#subscribers.size === 0) this.#end();
  }

  #begin(): void {
    this.#lastSessions = "";
    this.#lastOverview = "";
    this.#changed.clear();
    this.#unlisten = this.#source.onChange((what) => this.#changed.add(what));
    this.#timer = this.#every(() => void this.#tick(), this.#intervalMs);
    this.#heartbeat = this.#every(() => {
      for (const subscriber of [...this.#subscribers]) this.#write(subscriber, ": keep-alive\n\n");
    }, this.#heartbeatMs);
    void this.#tick();
  }

  #end(): void {
    this.#unlisten?.();
    this.#unlisten = undefined;
    this.#timer?.();
    this.#heartbeat?.();
    this.#timer = undefined;
    this.#heartbeat = undefined;
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#subscribers.size === 0) return;
    this.#ticking = true;
    this.ticks += 1;
    for (const subscriber of [...this.#subscribers]) {
      if (!this.#valid(subscriber.sessionId)) subscriber.response.end();
    }
    try {
      const sessions = JSON.stringify(this.#source.sessions());
      if (sessions !== this.#lastSessions) {
        this.#lastSessions = sessions;
        this.#broadcast("sessions", sessions);
      }
      const overview = JSON.stringify(await this.#source.overview());
      if (overview !== this.#lastOverview) {
        this.#lastOverview = overview;
        this.#broadcast("overview", overview);
      }
      if (this.#changed.size > 0) {
        const kinds = JSON.stringify([...this.#changed]);
        this.#changed.clear();
        this.#broadcast("changed", kinds);
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#ticking = false;
    }
  }

  #broadcast(event: string, data: string): void {
    for (const subscriber of [...this.#subscribers]) this.#send(subscriber, event, data);
  }

  #send(subscriber: Subscriber, event: string, data: string): void {
    this.#write(subscriber, `event: ${event}\ndata: ${data}\n\n`);
  }

  /** Writes to the stream, closing it if its client has left too much unread. */
  #write(subscriber: Subscriber, text: string): void {
    subscriber.response.write(text);
    if (subscriber.response.writableLength > this.#backlogBytes) this.#drop(subscriber);
  }

  /** Closes a stream now, its unsent updates discarded. */
  #drop(subscriber: Subscriber): void {
    this.#remove(subscriber);
    subscriber.response.destroy();
  }
}
