import { createHash } from "node:crypto";
import { type Clock, type Schedule, scheduleWithTimer, systemClock } from "@mediagate/io";
import { currentInstanceId } from "@mediagate/sandbox/instance";
import { Defaults } from "../defaults.js";
import type { PostgresDatabase } from "../postgres/database.js";

/** What a leader does: start its connection when it takes the lease, end it when it loses it. */
export interface LeaderWork {
  /** This replica took the lease: start (Telegram's polling, Discord's gateway connection). */
  lead(): void;
  /**
   * The lease is about to run out (renewals failed: the database is cut off) or another replica
   * holds it: stop at once, without talking to the platform any more. Resolves once stopped.
   */
  yieldLead(): Promise<void>;
  /** Told when this replica starts or stops waiting for the lease (for health). */
  standby?(waiting: boolean): void;
}

/** What a channel holds its bot's connection by in a cluster ({@link LeaderLease}). */
export interface BotLeadership {
  start(work: LeaderWork): void;
  stop(beforeRelease?: () => Promise<void>): Promise<void>;
}

/** Options of {@link LeaderLease}. */
export interface LeaderLeaseOptions {
  readonly database: PostgresDatabase;
  /** What is led, e.g. `telegram:<bot hash>` ({@link leaseName}). */
  readonly name: string;
  readonly replicaId: string;
  /** Default this process's (`currentInstanceId()`). */
  readonly instanceId?: string;
  /** Monotonic time for the lease's local deadline. Default `systemClock`. */
  readonly clock?: Clock;
  /** Timers of renewals, attempts and the deadline. Default real (unref'd) timers. */
  readonly schedule?: Schedule;
  readonly leaseMs?: number;
  readonly renewIntervalMs?: number;
  readonly attemptIntervalMs?: number;
  readonly stopMarginMs?: number;
  /** Told when a renewal or an attempt failed (the database did not answer). */
  readonly onError?: (error: unknown) => void;
  /** Told when the database answered again after one or more failed calls. */
  readonly onRecovered?: () => void;
}

/**
 * The lease's name for one bot of one platform: the platform and 16 hex of a SHA-256 of the
 * token (the token itself never reaches the database).
 */
export function leaseName(platform: string, token: string): string {
  const hash = createHash("sha256").update(`mediagate leader\0${token}`).digest("hex");
  return `${platform}:${hash.slice(0, 16)}`;
}

/** Takes the lease, or renews it for its holder; a row only when this process holds it now. */
const TakeSql = `
  INSERT INTO mediagate_leases (name, replica_id, instance_id, expires_at, term)
  VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', 1)
  ON CONFLICT (name) DO UPDATE SET
    replica_id = excluded.replica_id,
    instance_id = excluded.instance_id,
    expires_at = excluded.expires_at,
    term = mediagate_leases.term
      + CASE WHEN mediagate_leases.instance_id = excluded.instance_id THEN 0 ELSE 1 END
  WHERE mediagate_leases.instance_id = excluded.instance_id
     OR mediagate_leases.expires_at < now()
  RETURNING term`;

/**
 * One replica at a time leads `name` (docs/cluster.md, "One connection per bot"): a row of
 * `mediagate_leases` with an expiry on the database's clock. The holder renews it every
 * `renewIntervalMs`; the others try to take it every `attemptIntervalMs`, which succeeds only
 * once it expired. The holder counts its own deadline from when it *sent* its last successful
 * renewal (so it is never later than the database's) and yields `stopMarginMs` before it, by
 * its own timer, whether or not the database answers: a replica cut off from PostgreSQL stops
 * before another may start. A graceful {@link stop} deletes the row, so another replica
 * takes over at its next attempt instead of after the expiry.
 */
export class LeaderLease implements BotLeadership {
  readonly name: string;
  readonly #options: LeaderLeaseOptions;
  readonly #instanceId: string;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #attemptMs: number;
  readonly #marginMs: number;
  #work: LeaderWork | undefined;
  #leading = false;
  #stopped = false;
  /** Bumped when leadership ends: answers of calls sent before are not believed. */
  #generation = 0;
  #cancelNext: (() => void) | undefined;
  #cancelDeadline: (() => void) | undefined;
  #call: Promise<void> = Promise.resolve();
  #yielding: Promise<void> = Promise.resolve();
  #yieldingNow = false;
  #failedCalls = 0;

  constructor(options: LeaderLeaseOptions) {
    const defaults = Defaults.cluster;
    this.#options = options;
    this.name = options.name;
    this.#instanceId = options.instanceId ?? currentInstanceId();
    this.#clock = options.clock ?? systemClock;
    this.#schedule = options.schedule ?? scheduleWithTimer;
    this.#leaseMs = options.leaseMs ?? defaults.leaderLeaseMs;
    this.#renewMs = options.renewIntervalMs ?? defaults.leaderRenewIntervalMs;
    this.#attemptMs = options.attemptIntervalMs ?? defaults.leaderAttemptIntervalMs;
    this.#marginMs = options.stopMarginMs ?? defaults.leaderStopMarginMs;
    if (this.#renewMs >= this.#leaseMs - this.#marginMs) {
      throw new TypeError(
        `LeaderLease needs renewIntervalMs (${this.#renewMs}) below leaseMs − stopMarginMs (${this.#leaseMs - this.#marginMs}), or it yields between two renewals`,
      );
    }
  }

  /** Whether this replica leads now. */
  get leading(): boolean {
    return this.#leading;
  }

  /** Starts trying to take the lease (at once), then leads and follows as it comes and goes. */
  start(work: LeaderWork): void {
    if (this.#work !== undefined || this.#stopped) return;
    this.#work = work;
    work.standby?.(true);
    this.#attempt();
  }

  /**
   * Stops trying and renewing. When leading, `beforeRelease` runs first while the lease is
   * still held (the channel's graceful stop, e.g. Telegram's confirming getUpdates); then the
   * row is deleted, so another replica takes over at its next attempt. Safe to call twice.
   */
  async stop(beforeRelease?: () => Promise<void>): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#cancelNext?.();
    await this.#call;
    await this.#yielding;
    if (!this.#leading) return;
    try {
      await beforeRelease?.();
    } finally {
      this.#leading = false;
      this.#generation++;
      this.#cancelDeadline?.();
      await this.#options.database
        .query(
          "release leader lease",
          "DELETE FROM mediagate_leases WHERE name = $1 AND instance_id = $2",
          [this.name, this.#instanceId],
        )
        .catch((error: unknown) => this.#options.onError?.(error));
    }
  }

  #attempt(): void {
    if (this.#stopped) return;
    const generation = this.#generation;
    const sentAtMs = this.#clock.monoMs();
    this.#call = this.#options.database
      .query<{ term: string }>("take leader lease", TakeSql, [
        this.name,
        this.#options.replicaId,
        this.#instanceId,
        this.#leaseMs,
      ])
      .then(
        (result) => {
          if (this.#failedCalls > 0) this.#options.onRecovered?.();
          this.#failedCalls = 0;
          this.#answered(generation, sentAtMs, result.rows.length > 0);
        },
        (error: unknown) => {
          this.#failedCalls++;
          this.#options.onError?.(error);
          this.#answered(generation, sentAtMs, undefined);
        },
      );
  }

  /** `held`: the statement's answer (`undefined`: no answer, the database failed). */
  #answered(generation: number, sentAtMs: number, held: boolean | undefined): void {
    if (this.#stopped || generation !== this.#generation) {
      // An answer from before leadership ended: the yield schedules the next attempt itself,
      // once the work has stopped.
      if (!this.#stopped && !this.#yieldingNow) this.#next(this.#attemptMs);
      return;
    }
    if (held === true) {
      this.#armDeadline(sentAtMs);
      if (!this.#leading) {
        this.#leading = true;
        this.#work?.standby?.(false);
        this.#work?.lead();
      }
      this.#next(this.#renewMs);
      return;
    }
    if (held === false && this.#leading) {
      // Another process holds it: this one's lease ran out on the database's clock.
      this.#yield();
      return;
    }
    // Not leading and not taken, or no answer: try again; a leader's deadline stands.
    this.#next(this.#leading ? this.#renewMs : this.#attemptMs);
  }

  #armDeadline(sentAtMs: number): void {
    this.#cancelDeadline?.();
    const leftMs = sentAtMs + this.#leaseMs - this.#marginMs - this.#clock.monoMs();
    this.#cancelDeadline = this.#schedule(() => this.#yield(), Math.max(0, leftMs));
  }

  #yield(): void {
    if (!this.#leading) return;
    this.#leading = false;
    this.#generation++;
    this.#cancelDeadline?.();
    this.#cancelNext?.();
    const work = this.#work;
    this.#yieldingNow = true;
    this.#yielding = (work?.yieldLead() ?? Promise.resolve())
      .catch((error: unknown) => this.#options.onError?.(error))
      .finally(() => {
        this.#yieldingNow = false;
        work?.standby?.(true);
        this.#next(this.#attemptMs);
      });
  }

  #next(delayMs: number): void {
    if (this.#stopped) return;
    this.#cancelNext?.();
    this.#cancelNext = this.#schedule(() => this.#attempt(), delayMs);
  }
}
