import { MediagateError } from "@mediagate/io/mediagate-error";
import { currentInstanceId, type InstanceId } from "@mediagate/sandbox/instance";
import { Defaults } from "../defaults.js";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { migratePostgres } from "../postgres/migrate.js";
import { LeaseClock, type LeaseClockOptions } from "./lease-clock.js";
import { LeasesComponent, POSTGRES_LEASE_MIGRATIONS } from "./session-leases-schema.js";

/** Options of {@link SessionLeases.open}. */
export interface SessionLeasesOptions {
  /** Who holds what this process claims (tests hand in another process's id). Default `currentInstanceId()`. */
  readonly owner?: InstanceId;
  /**
   * This process's clock: how long it acts for a lease it holds. Monotonic in production
   * (`performance.now`); leases themselves are written and judged on the database server's
   * clock, followed through this one ({@link LeaseClock}). Default `performance.now`.
   */
  readonly now?: () => number;
  /** The database server's clock ({@link LeaseClockOptions.readServerMs}). Default read from it. */
  readonly readServerMs?: LeaseClockOptions["readServerMs"];
  /** Default `Defaults.sessionLeases.leaseMs`. */
  readonly leaseMs?: number;
  /** Default `Defaults.sessionLeases.marginMs`. */
  readonly marginMs?: number;
  /** Default `Defaults.sessionLeases.requestExpiryMs`. */
  readonly requestExpiryMs?: number;
}

/** Defaults of {@link SessionLeasesOptions}. */
export const SessionLeasesDefaults = {
  now: () => performance.now(),
  leaseMs: Defaults.sessionLeases.leaseMs,
  marginMs: Defaults.sessionLeases.marginMs,
  requestExpiryMs: Defaults.sessionLeases.requestExpiryMs,
} as const satisfies Required<Omit<SessionLeasesOptions, "owner" | "readServerMs">>;

/** One session of one profile. */
export interface LeasedSession {
  readonly profile: string;
  readonly sessionKey: string;
}

/** What {@link SessionLeases.claim} found: the lease is this process's now, or another live one's. */
export type LeaseClaim =
  | { readonly held: true; readonly token: number }
  | {
      readonly held: false;
      readonly holder: string;
      /** When the holder's lease runs out unless renewed, on the database server's clock. */
      readonly expiresAtMs: number;
    };

/**
 * An admin action asked on one replica for another one to act on: `stop` a session that replica
 * holds (`/stop`, `/reset`), or `stop-slot` (`/stop all`: every session and process that replica
 * runs on the session's slot).
 */
export interface LeaseRequest {
  readonly session: LeasedSession;
  readonly action: "stop" | "stop-slot";
}

/** What a write fenced by a session's lease checks: see {@link SessionLeases.fenceOf}. */
export type LeaseFence = { readonly token: number } | "lost" | undefined;

/**
 * A write for a session whose lease this process held and may no longer hold (it expired
 * unrenewed, or another replica took it over): it was refused, so a stale holder never writes
 * over the new one's work.
 */
export class SessionLeaseLostError extends MediagateError {
  override readonly name = "SessionLeaseLostError";
  readonly code = "MG_SESSION_LEASE_LOST";
  readonly profile: string;
  readonly sessionKey: string;

  constructor(session: LeasedSession, operation: string) {
    super(
      `${operation} refused for session ${session.sessionKey} of profile ${session.profile}: this replica's lease on it expired or another replica took it over`,
    );
    this.profile = session.profile;
    this.sessionKey = session.sessionKey;
  }
}

interface Held {
  readonly session: LeasedSession;
  readonly token: number;
  /** Local time (`now`) until which this process acts for the session (the expiry less the margin). */
  validUntilMs: number;
  /** When it was last claimed (a turn about to start): idle releases judge by it. */
  claimedAtMs: number;
  /**
   * The lease lapsed or was taken over: kept (until the session is claimed again) so that a
   * late write of the turn that held it is refused, never let through as unfenced.
   */
  lost: boolean;
}

/**
 * Leases on sessions, in the PostgreSQL store (docs/cluster.md, "Sessions across replicas"):
 * each session's turns run on the one live process that holds its lease. A lease has a holder
 * (the process's instance id, the journal's owner), an expiry on the database server's clock
 * ({@link LeaseClock}: replicas' own clocks may disagree) and a fencing token that every take
 * bumps. A free or expired lease is taken by whoever claims it; the holder renews its leases
 * before they expire and acts for a session only until `leaseMs − marginMs` after it sent the
 * claim or renewal, by its own monotonic clock, so a cut-off holder stops before anyone may
 * take over; a write fenced by the token ({@link fence}) is refused once the lease moved on.
 *
 * Hand-written rather than a job queue's named queues (graphile-worker): a session is not a
 * job but a holder with state (its conversation, its sandbox on that host), and what must be
 * fenced is the journal's own writes, in their own transactions.
 */
export class SessionLeases {
  /** The holder this process claims as. */
  readonly owner: InstanceId;
  /** The timeline leases are written and judged on. */
  readonly clock: LeaseClock;
  readonly #database: PostgresDatabase;
  readonly #leaseMs: number;
  readonly #marginMs: number;
  readonly #requestExpiryMs: number;
  readonly #held = new Map<string, Held>();

  private constructor(
    database: PostgresDatabase,
    owner: InstanceId,
    clock: LeaseClock,
    settings: Required<Omit<SessionLeasesOptions, "owner" | "now" | "readServerMs">>,
  ) {
    this.#database = database;
    this.owner = owner;
    this.clock = clock;
    this.#leaseMs = settings.leaseMs;
    this.#marginMs = settings.marginMs;
    this.#requestExpiryMs = settings.requestExpiryMs;
    if (this.#marginMs >= this.#leaseMs) {
      throw new RangeError(
        `sessionLeases: marginMs (${this.#marginMs}) must be shorter than leaseMs (${this.#leaseMs})`,
      );
    }
  }

  /** Migrates the leases' schema on `database` (under the migrations' lock) and reads its clock. */
  static async open(
    database: PostgresDatabase,
    options: SessionLeasesOptions = {},
  ): Promise<SessionLeases> {
    const settings = { ...SessionLeasesDefaults, ...options };
    await migratePostgres(database, LeasesComponent, POSTGRES_LEASE_MIGRATIONS);
    const clock = await LeaseClock.open(database, {
      localMs: settings.now,
      readServerMs: options.readServerMs,
    });
    return new SessionLeases(database, options.owner ?? currentInstanceId(), clock, settings);
  }

  /**
   * Takes the session's lease when it is free, expired or already this process's (renewing
   * it), or says who holds it. A take by another holder, or after the lease expired, bumps the
   * token. Rejects with the database's error when the server does not answer.
   */
  async claim(session: LeasedSession): Promise<LeaseClaim> {
    const sentAtMs = this.clock.localMs();
    const sharedAtMs = this.clock.sharedMs();
    const expiresAtMs = sharedAtMs + this.#leaseMs;
    for (;;) {
      const taken = await this.#database.query<{ token: string }>(
        "claim lease",
        `INSERT INTO leases.sessions AS l (profile, session_key, holder, token, expires_at)
           VALUES ($1, $2, $3, 1, $4)
           ON CONFLICT (profile, session_key) DO UPDATE
             SET holder = excluded.holder, expires_at = excluded.expires_at,
                 token = CASE WHEN l.holder = excluded.holder AND l.expires_at > $5
                              THEN l.token ELSE l.token + 1 END
             WHERE l.holder = excluded.holder OR l.expires_at <= $5
           RETURNING token`,
        [session.profile, session.sessionKey, this.owner, expiresAtMs, sharedAtMs],
      );
      const row = taken.rows[0];
      if (row !== undefined) {
        const token = Number(row.token);
        const key = keyOf(session);
        const before = this.#held.get(key);
        const validUntilMs = sentAtMs + this.#leaseMs - this.#marginMs;
        if (before !== undefined && before.token === token && !before.lost) {
          before.validUntilMs = validUntilMs;
          before.claimedAtMs = sentAtMs;
        } else {
          this.#held.set(key, { session, token, validUntilMs, claimedAtMs: sentAtMs, lost: false });
        }
        return { held: true, token };
      }
      const other = await this.#database.query<{ holder: string; expires_at: string }>(
        "claim lease",
        "SELECT holder, expires_at FROM leases.sessions WHERE profile = $1 AND session_key = $2",
        [session.profile, session.sessionKey],
      );
      const holder = other.rows[0];
      // Released between the two statements: claim again.
      if (holder === undefined) continue;
      this.#lose(keyOf(session));
      return { held: false, holder: holder.holder, expiresAtMs: Number(holder.expires_at) };
    }
  }

  /**
   * Extends every lease this process still acts for, in one statement (reading the database's
   * clock again first when that is due). Resolves with the sessions lost: those whose lease
   * was taken over, or had lapsed by this process's clock, which it no longer holds from now
   * on. Rejects when the server does not answer (the caller then asks {@link lapsed}).
   */
  async renew(): Promise<LeasedSession[]> {
    await this.clock.resyncWhenDue();
    const sentAtMs = this.clock.localMs();
    const sharedAtMs = this.clock.sharedMs();
    const lost = this.lapsed();
    const live = [...this.#held.values()].filter((held) => !held.lost);
    if (live.length === 0) return lost;
    const renewed = await this.#database.query<{ profile: string; session_key: string }>(
      "renew leases",
      `UPDATE leases.sessions AS l SET expires_at = $1
         FROM unnest($3::text[], $4::text[], $5::bigint[]) AS mine(profile, session_key, token)
         WHERE l.profile = mine.profile AND l.session_key = mine.session_key
           AND l.token = mine.token AND l.holder = $2 AND l.expires_at > $6
         RETURNING l.profile, l.session_key`,
      [
        sharedAtMs + this.#leaseMs,
        this.owner,
        live.map((held) => held.session.profile),
        live.map((held) => held.session.sessionKey),
        live.map((held) => held.token),
        sharedAtMs,
      ],
    );
    const kept = new Set(renewed.rows.map((row) => keyOf({ ...row, sessionKey: row.session_key })));
    for (const held of live) {
      const key = keyOf(held.session);
      if (kept.has(key)) {
        const current = this.#held.get(key);
        if (current?.token === held.token && !current.lost)
          current.validUntilMs = sentAtMs + this.#leaseMs - this.#marginMs;
      } else if (this.#held.get(key)?.token === held.token && !held.lost) {
        held.lost = true;
        lost.push(held.session);
      }
    }
    return lost;
  }

  /** The sessions whose lease lapsed by this process's clock, forgotten from now on. */
  lapsed(): LeasedSession[] {
    const nowMs = this.clock.localMs();
    const lost: LeasedSession[] = [];
    for (const held of this.#held.values()) {
      if (held.lost || nowMs < held.validUntilMs) continue;
      held.lost = true;
      lost.push(held.session);
    }
    return lost;
  }

  /** Whether this process acts for the session now (it holds the lease, not lapsed). */
  holds(session: LeasedSession): boolean {
    const held = this.#held.get(keyOf(session));
    return held !== undefined && !held.lost && this.clock.localMs() < held.validUntilMs;
  }

  /** The sessions this process holds, with when each was last claimed. */
  held(): { session: LeasedSession; claimedAtMs: number }[] {
    return [...this.#held.values()]
      .filter((held) => !held.lost)
      .map(({ session, claimedAtMs }) => ({ session, claimedAtMs }));
  }

  /**
   * What a write for the session is fenced with: the token while this process holds the
   * lease, `"lost"` when it held it and its clock says it may have expired, `undefined` when it
   * never held it (a write outside a leased turn: a recovery notice, a command's answer).
   */
  fenceOf(session: LeasedSession): LeaseFence {
    const held = this.#held.get(keyOf(session));
    if (held === undefined) return undefined;
    if (held.lost || this.clock.localMs() >= held.validUntilMs) return "lost";
    return { token: held.token };
  }

  /**
   * Inside the caller's transaction `tx`: refuses with {@link SessionLeaseLostError} unless
   * this process still holds the session's lease with the token it acts with, and keeps the
   * row from being taken until `tx` ends. Nothing is checked for a session this process never
   * held ({@link fenceOf}).
   */
  async fence(tx: Queryable, session: LeasedSession, operation: string): Promise<void> {
    const fence = this.fenceOf(session);
    if (fence === undefined) return;
    if (fence === "lost") throw new SessionLeaseLostError(session, operation);
    const row = await tx.query(
      `SELECT 1 FROM leases.sessions
         WHERE profile = $1 AND session_key = $2 AND holder = $3 AND token = $4
         FOR SHARE`,
      [session.profile, session.sessionKey, this.owner, fence.token],
    );
    if (row.rowCount === 0) {
      this.#lose(keyOf(session));
      throw new SessionLeaseLostError(session, operation);
    }
  }

  /**
   * The process holding the session's lease now, unexpired on the database's clock (itself
   * included), or `undefined`. Rejects when the server does not answer.
   */
  async holder(session: LeasedSession): Promise<string | undefined> {
    const row = await this.#database.query<{ holder: string }>(
      "lease holder",
      `SELECT holder FROM leases.sessions
         WHERE profile = $1 AND session_key = $2 AND expires_at > $3`,
      [session.profile, session.sessionKey, this.clock.sharedMs()],
    );
    return row.rows[0]?.holder;
  }

  /**
   * Asks the live replica holding the session, when it is another one, to act on it
   * (`stop`: abort its running turn and drop its queued messages, as `/stop` there would):
   * resolves with that holder, or `undefined` when no other live replica holds the session.
   */
  async ask(session: LeasedSession, action: LeaseRequest["action"]): Promise<string | undefined> {
    const asked = await this.#database.query<{ holder: string }>(
      "ask holder",
      `INSERT INTO leases.requests (holder, profile, session_key, action, asked_at)
         SELECT holder, profile, session_key, $3, $4 FROM leases.sessions
           WHERE profile = $1 AND session_key = $2 AND holder <> $5 AND expires_at > $4
         RETURNING holder`,
      [session.profile, session.sessionKey, action, this.clock.sharedMs(), this.owner],
    );
    return asked.rows[0]?.holder;
  }

  /**
   * Asks every other live replica to act for `session` (`stop-slot`: `/stop all` there): the
   * holders of unexpired leases and the `replicas` (instance ids the caller knows alive, e.g.
   * from the replica registry), this process left out. Resolves with the replicas asked.
   */
  async askEvery(
    session: LeasedSession,
    action: LeaseRequest["action"],
    replicas: readonly string[] = [],
  ): Promise<string[]> {
    const asked = await this.#database.query<{ holder: string }>(
      "ask every replica",
      `INSERT INTO leases.requests (holder, profile, session_key, action, asked_at)
         SELECT live.holder, $1, $2, $3, $4 FROM (
           SELECT holder FROM leases.sessions WHERE expires_at > $4
           UNION SELECT unnest($6::text[])
         ) AS live (holder)
           WHERE live.holder <> $5
         RETURNING holder`,
      [
        session.profile,
        session.sessionKey,
        action,
        this.clock.sharedMs(),
        this.owner,
        [...replicas],
      ],
    );
    return asked.rows.map((row) => row.holder).sort();
  }

  /**
   * The requests other replicas made of this one ({@link ask}, {@link askEvery}), oldest first,
   * taken once. A request of an action this version does not know is taken and dropped. In the
   * same statement, requests made of other replicas more than `requestExpiryMs` ago are
   * deleted: a live replica takes its own within a round, so those are a gone replica's.
   */
  async requests(): Promise<LeaseRequest[]> {
    const taken = await this.#database.query<{
      id: string;
      profile: string;
      session_key: string;
      action: string;
    }>(
      "take requests",
      `WITH expired AS (
         DELETE FROM leases.requests WHERE holder <> $1 AND asked_at < $2
       )
       DELETE FROM leases.requests WHERE holder = $1 RETURNING id, profile, session_key, action`,
      [this.owner, this.clock.sharedMs() - this.#requestExpiryMs],
    );
    return [...taken.rows]
      .sort((a, b) => Number(a.id) - Number(b.id))
      .flatMap((row): LeaseRequest[] =>
        row.action === "stop" || row.action === "stop-slot"
          ? [{ session: { profile: row.profile, sessionKey: row.session_key }, action: row.action }]
          : [],
      );
  }

  /**
   * Inside the caller's transaction `tx`: `owners` (journal owners that may be gone)
   * less those whose process still holds an unexpired lease, `holderOf` mapping an owner to
   * its process. A replica whose lock connection dropped for a moment while it runs turns keeps
   * its work: only once its leases expired (or were released) is it gone.
   */
  async withoutLiveHolders(
    tx: Queryable,
    owners: readonly string[],
    holderOf: (owner: string) => string,
  ): Promise<string[]> {
    if (owners.length === 0) return [];
    const live = await tx.query<{ holder: string }>(
      `SELECT DISTINCT holder FROM leases.sessions
         WHERE holder = ANY($1::text[]) AND expires_at > $2`,
      [owners.map(holderOf), this.clock.sharedMs()],
    );
    const holding = new Set(live.rows.map((row) => row.holder));
    return owners.filter((owner) => !holding.has(holderOf(owner)));
  }

  /**
   * Gives the session's lease up (another replica may take it at once). The row stays, expired,
   * so the next take still bumps its token past every one given out before.
   */
  async release(session: LeasedSession): Promise<void> {
    const held = this.#held.get(keyOf(session));
    if (held === undefined || held.lost) return;
    this.#held.delete(keyOf(session));
    await this.#database.query(
      "release lease",
      `UPDATE leases.sessions SET expires_at = 0
         WHERE profile = $1 AND session_key = $2 AND holder = $3 AND token = $4`,
      [session.profile, session.sessionKey, this.owner, held.token],
    );
  }

  #lose(key: string): void {
    const held = this.#held.get(key);
    if (held !== undefined) held.lost = true;
  }

  /** Gives every lease of this process up (a graceful stop hands its sessions over). */
  async releaseAll(): Promise<number> {
    this.#held.clear();
    const released = await this.#database.query(
      "release leases",
      "UPDATE leases.sessions SET expires_at = 0 WHERE holder = $1 AND expires_at > 0",
      [this.owner],
    );
    return released.rowCount ?? 0;
  }
}

function keyOf(session: LeasedSession): string {
  return `${session.profile}\0${session.sessionKey}`;
}
