import { currentInstanceId, type InstanceId } from "@mediagate/sandbox/instance";
import { Defaults } from "../defaults.js";
import type { PostgresDatabase } from "../postgres/database.js";
import { migratePostgres } from "../postgres/migrate.js";
import { LeaseClock, type LeaseClockOptions } from "./lease-clock.js";
import { LeasesComponent, POSTGRES_LEASE_MIGRATIONS } from "./session-leases-schema.js";

/** Options of {@link SlotLeases.open}. */
export interface SlotLeasesOptions {
  /** This replica's id (`cluster.replicaId`): whose copy of a slot's files is the latest. */
  readonly replicaId: string;
  /**
   * Whether the slots' directories are on storage every replica sees (`cluster.slotsDir`): a
   * pin that moves then takes the files with it; otherwise a move leaves them behind.
   */
  readonly sharedFiles: boolean;
  /** Who holds what this process claims. Default `currentInstanceId()`. */
  readonly owner?: InstanceId;
  /**
   * The timeline pins are written and judged on (the session leases' own, `SessionLeases.clock`).
   * Default one read from `database`, following `now`.
   */
  readonly clock?: LeaseClock;
  /** This process's clock, when no `clock` is given (see `SessionLeasesOptions.now`). Default `performance.now`. */
  readonly now?: () => number;
  /** The database server's clock, when no `clock` is given (see `SessionLeasesOptions`). */
  readonly readServerMs?: LeaseClockOptions["readServerMs"];
  /** Default `Defaults.sessionLeases.leaseMs`: a pin lives as long as a session's lease. */
  readonly leaseMs?: number;
  /** Default `Defaults.sessionLeases.marginMs`. */
  readonly marginMs?: number;
}

/** The live process of a replica id, or `undefined` when that replica is not running now. */
export type LiveInstanceOf = (replicaId: string) => Promise<string | undefined>;

/** What {@link SlotLeases.claim} found. */
export type SlotClaim =
  | {
      readonly held: true;
      readonly token: number;
      /**
       * The last move of the slot that left files behind, when there was one: the replica they
       * stayed on and the move's id (for {@link SlotLeases.tellOnce}).
       */
      readonly moved?: { readonly from: string; readonly token: number };
    }
  | { readonly held: false; readonly holder: string };

interface Held {
  readonly token: number;
  validUntilMs: number;
  claimedAtMs: number;
}

/**
 * Pins of persistent and `shared:` slots in the PostgreSQL store (docs/cluster.md, "Sandboxes
 * across replicas"): each such slot is held by one live replica at a time, which runs every
 * turn in it. A pin has a holder, a fencing token and an expiry as a session's lease has
 * (session-leases.ts), and a **home**: the replica whose copy of the slot's files is the
 * latest. Without shared storage a free pin goes back to its home while that replica runs (its
 * files are there); a pin taken by another replica moves the home and records the move, so
 * each chat of the slot is told once that the files written on the old home stayed there.
 */
export class SlotLeases {
  readonly owner: InstanceId;
  readonly replicaId: string;
  readonly sharedFiles: boolean;
  readonly #database: PostgresDatabase;
  readonly #clock: LeaseClock;
  readonly #leaseMs: number;
  readonly #marginMs: number;
  readonly #held = new Map<string, Held>();

  private constructor(database: PostgresDatabase, clock: LeaseClock, options: SlotLeasesOptions) {
    this.#database = database;
    this.#clock = clock;
    this.owner = options.owner ?? currentInstanceId();
    this.replicaId = options.replicaId;
    this.sharedFiles = options.sharedFiles;
    this.#leaseMs = options.leaseMs ?? Defaults.sessionLeases.leaseMs;
    this.#marginMs = options.marginMs ?? Defaults.sessionLeases.marginMs;
    if (this.#marginMs >= this.#leaseMs) {
      throw new RangeError(
        `slot pins: marginMs (${this.#marginMs}) must be shorter than leaseMs (${this.#leaseMs})`,
      );
    }
  }

  /** Migrates the leases' schema on `database` (under the migrations' lock). */
  static async open(database: PostgresDatabase, options: SlotLeasesOptions): Promise<SlotLeases> {
    await migratePostgres(database, LeasesComponent, POSTGRES_LEASE_MIGRATIONS);
    const clock =
      options.clock ??
      (await LeaseClock.open(database, {
        localMs: options.now,
        readServerMs: options.readServerMs,
      }));
    return new SlotLeases(database, clock, options);
  }

  /**
   * Takes the slot's pin when it is free, expired or already this process's (renewing it), or
   * says who holds it. Without shared storage a free pin whose home is another replica that
   * still runs is that replica's: the answer is its live process, and nothing is taken.
   */
  async claim(slot: string, liveInstanceOf: LiveInstanceOf): Promise<SlotClaim> {
    for (;;) {
      const sentAtMs = this.#clock.localMs();
      const sharedAtMs = this.#clock.sharedMs();
      const row = (
        await this.#database.query<{ holder: string; expires_at: string; home: string }>(
          "read slot pin",
          "SELECT holder, expires_at, home FROM leases.slots WHERE slot = $1",
          [slot],
        )
      ).rows[0];
      // A pin this process held and lost stays held here until the next renewal finds it lost,
      // which cuts its turns off.
      if (row !== undefined && row.holder !== this.owner && Number(row.expires_at) > sharedAtMs) {
        return { held: false, holder: row.holder };
      }
      if (row !== undefined && !this.sharedFiles && row.home !== this.replicaId) {
        const home = await liveInstanceOf(row.home);
        if (home !== undefined && home !== this.owner) return { held: false, holder: home };
      }
      const taken = await this.#database.query<{
        token: string;
        moved_from: string | null;
        moved_token: string | null;
      }>(
        "claim slot pin",
        `INSERT INTO leases.slots AS l (slot, holder, token, expires_at, home)
           VALUES ($1, $2, 1, $3, $4)
           ON CONFLICT (slot) DO UPDATE
             SET holder = excluded.holder, expires_at = excluded.expires_at, home = excluded.home,
                 token = CASE WHEN l.holder = excluded.holder AND l.expires_at > $5
                              THEN l.token ELSE l.token + 1 END,
                 moved_from = CASE WHEN $6 AND l.home <> excluded.home THEN l.home
                                   ELSE l.moved_from END,
                 moved_token = CASE WHEN $6 AND l.home <> excluded.home THEN l.token + 1
                                    ELSE l.moved_token END
             WHERE l.holder = excluded.holder OR l.expires_at <= $5
           RETURNING token, moved_from, moved_token`,
        [
          slot,
          this.owner,
          sharedAtMs + this.#leaseMs,
          this.replicaId,
          sharedAtMs,
          !this.sharedFiles,
        ],
      );
      const mine = taken.rows[0];
      // Taken by another replica between the two statements: read it again.
      if (mine === undefined) continue;
      const token = Number(mine.token);
      const before = this.#held.get(slot);
      const validUntilMs = sentAtMs + this.#leaseMs - this.#marginMs;
      if (before?.token === token) {
        before.validUntilMs = validUntilMs;
        before.claimedAtMs = sentAtMs;
      } else {
        this.#held.set(slot, { token, validUntilMs, claimedAtMs: sentAtMs });
      }
      return mine.moved_from === null || mine.moved_token === null
        ? { held: true, token }
        : { held: true, token, moved: { from: mine.moved_from, token: Number(mine.moved_token) } };
    }
  }

  /** The pins whose slot's files another replica's copy holds now (their `home`). */
  async homedElsewhere(): Promise<{ slot: string; home: string }[]> {
    const rows = await this.#database.query<{ slot: string; home: string }>(
      "read slots homed elsewhere",
      "SELECT slot, home FROM leases.slots WHERE home <> $1",
      [this.replicaId],
    );
    return rows.rows;
  }

  /**
   * Whether `sessionKey` is yet to be told of the slot's move `movedToken`: true once, for the
   * first asker of the whole cluster.
   */
  async tellOnce(slot: string, sessionKey: string, movedToken: number): Promise<boolean> {
    const told = await this.#database.query(
      "note slot move told",
      `INSERT INTO leases.slot_notices (slot, session_key, moved_token) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING`,
      [slot, sessionKey, movedToken],
    );
    return (told.rowCount ?? 0) > 0;
  }

  /**
   * Extends every pin this process holds, in one statement (reading the database's clock again
   * first when that is due). Resolves with the slots lost (taken over, or lapsed by this
   * process's clock), forgotten from now on.
   */
  async renew(): Promise<string[]> {
    await this.#clock.resyncWhenDue();
    const sentAtMs = this.#clock.localMs();
    const sharedAtMs = this.#clock.sharedMs();
    const lost = this.lapsed();
    const live = [...this.#held.entries()];
    if (live.length === 0) return lost;
    const renewed = await this.#database.query<{ slot: string }>(
      "renew slot pins",
      `UPDATE leases.slots AS l SET expires_at = $1
         FROM unnest($3::text[], $4::bigint[]) AS mine(slot, token)
         WHERE l.slot = mine.slot AND l.token = mine.token AND l.holder = $2 AND l.expires_at > $5
         RETURNING l.slot`,
      [
        sharedAtMs + this.#leaseMs,
        this.owner,
        live.map(([slot]) => slot),
        live.map(([, held]) => held.token),
        sharedAtMs,
      ],
    );
    const kept = new Set(renewed.rows.map((row) => row.slot));
    for (const [slot, held] of live) {
      if (this.#held.get(slot) !== held) continue;
      if (kept.has(slot)) {
        held.validUntilMs = sentAtMs + this.#leaseMs - this.#marginMs;
      } else {
        this.#held.delete(slot);
        lost.push(slot);
      }
    }
    return lost;
  }

  /** The slots whose pin lapsed by this process's clock, forgotten from now on. */
  lapsed(): string[] {
    const nowMs = this.#clock.localMs();
    const lost: string[] = [];
    for (const [slot, held] of this.#held) {
      if (nowMs < held.validUntilMs) continue;
      this.#held.delete(slot);
      lost.push(slot);
    }
    return lost;
  }

  /** Whether this process holds the slot's pin now (not lapsed). */
  holds(slot: string): boolean {
    const held = this.#held.get(slot);
    return held !== undefined && this.#clock.localMs() < held.validUntilMs;
  }

  /** The slots this process holds, with when each was last claimed. */
  held(): { slot: string; claimedAtMs: number }[] {
    return [...this.#held].map(([slot, { claimedAtMs }]) => ({ slot, claimedAtMs }));
  }

  /** Gives the slot's pin up; the row stays, expired, with its home. */
  async release(slot: string): Promise<void> {
    const held = this.#held.get(slot);
    if (held === undefined) return;
    this.#held.delete(slot);
    await this.#database.query(
      "release slot pin",
      "UPDATE leases.slots SET expires_at = 0 WHERE slot = $1 AND holder = $2 AND token = $3",
      [slot, this.owner, held.token],
    );
  }

  /** Gives every pin of this process up (a graceful stop). Resolves with how many. */
  async releaseAll(): Promise<number> {
    this.#held.clear();
    const released = await this.#database.query(
      "release slot pins",
      "UPDATE leases.slots SET expires_at = 0 WHERE holder = $1 AND expires_at > 0",
      [this.owner],
    );
    return released.rowCount ?? 0;
  }
}
