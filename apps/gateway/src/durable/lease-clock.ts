import { Defaults } from "../defaults.js";
import type { PostgresDatabase } from "../postgres/database.js";

/** Options of {@link LeaseClock.open}. */
export interface LeaseClockOptions {
  /**
   * This process's clock, for how long it acts for what it holds: monotonic in production
   * (`performance.now`, the default), so a step of the host's wall clock moves nothing; tests
   * move it by hand.
   */
  readonly localMs?: (() => number) | undefined;
  /**
   * How often (by `localMs`) the database's clock is read again, to follow its drift and steps.
   * Default `Defaults.sessionLeases.clockResyncMs`.
   */
  readonly resyncMs?: number | undefined;
  /**
   * A reading whose round trip took longer than this is not believed while an older one is
   * kept: the database's time is only known within half a round trip. Default
   * `Defaults.sessionLeases.clockMaxRoundTripMs`.
   */
  readonly maxRoundTripMs?: number | undefined;
  /** Readings taken per synchronization; the one of the shortest round trip is kept. */
  readonly samples?: number | undefined;
  /**
   * Reads the database server's clock, in epoch ms. Default `clock_timestamp()` in one
   * statement; unit tests of what leases do on a shared timeline hand in their own.
   */
  readonly readServerMs?: ((database: PostgresDatabase) => Promise<number>) | undefined;
}

/** {@link LeaseClockOptions} with every default filled in. */
type ClockSettings = {
  readonly [K in keyof LeaseClockOptions]-?: Exclude<LeaseClockOptions[K], undefined>;
};

/** The database server's clock, in epoch ms, read in one statement. */
async function readServerClock(database: PostgresDatabase): Promise<number> {
  const row = await database.query<{ server_ms: number }>(
    "read database clock",
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS server_ms",
  );
  return Number(row.rows[0]?.server_ms);
}

/**
 * The one timeline every replica writes and judges leases by: the database server's clock,
 * followed through this process's monotonic clock. Replicas' wall clocks may disagree by
 * seconds or be stepped by an operator; the database's is one clock for all of them. A lease
 * written as "until the server's 12:00:10" means the same to every replica, so a replica whose
 * own clock runs a minute ahead neither takes the others' sessions nor cuts off its own turns
 * (docs/cluster.md, "Clocks").
 *
 * Read as the offset between the server's clock and `localMs`, measured at the midpoint of a
 * round trip (Cristian's algorithm), kept from the shortest of a few readings and measured
 * again every `resyncMs`. Its error is at most half that round trip, within the leases'
 * `marginMs` when the round trip is within `maxRoundTripMs`.
 *
 * Hand-written: the leader lease (cluster/leader-lease.ts) computes its expiry in SQL with
 * `now()`, but session leases and slot pins are judged in many statements and in the journal's
 * fenced transactions, and tests must be able to move one replica's time, not the server's.
 */
export class LeaseClock {
  readonly #database: PostgresDatabase;
  readonly #options: ClockSettings;
  #offsetMs: number;
  #syncedAtMs: number;

  private constructor(
    database: PostgresDatabase,
    options: ClockSettings,
    offsetMs: number,
    syncedAtMs: number,
  ) {
    this.#database = database;
    this.#options = options;
    this.#offsetMs = offsetMs;
    this.#syncedAtMs = syncedAtMs;
  }

  /** Reads the database's clock (rejects when the server does not answer). */
  static async open(
    database: PostgresDatabase,
    options: LeaseClockOptions = {},
  ): Promise<LeaseClock> {
    const settings: ClockSettings = {
      localMs: options.localMs ?? (() => performance.now()),
      resyncMs: options.resyncMs ?? Defaults.sessionLeases.clockResyncMs,
      maxRoundTripMs: options.maxRoundTripMs ?? Defaults.sessionLeases.clockMaxRoundTripMs,
      samples: options.samples ?? 3,
      readServerMs: options.readServerMs ?? readServerClock,
    };
    const best = await bestReading(database, settings);
    return new LeaseClock(database, settings, best.offsetMs, settings.localMs());
  }

  /** This process's own time: how long it may act for what it holds. */
  localMs(): number {
    return this.#options.localMs();
  }

  /** The database server's time now, as this process knows it: what leases are written in. */
  sharedMs(): number {
    return Math.floor(this.#options.localMs() + this.#offsetMs);
  }

  /**
   * Reads the database's clock again when `resyncMs` passed since the last reading (the
   * renewals call it). A reading whose round trip exceeded `maxRoundTripMs` is left; rejects
   * when the server does not answer.
   */
  async resyncWhenDue(): Promise<void> {
    if (this.#options.localMs() - this.#syncedAtMs < this.#options.resyncMs) return;
    const best = await bestReading(this.#database, this.#options);
    this.#syncedAtMs = this.#options.localMs();
    if (best.roundTripMs <= this.#options.maxRoundTripMs) this.#offsetMs = best.offsetMs;
  }
}

async function bestReading(
  database: PostgresDatabase,
  options: ClockSettings,
): Promise<{ offsetMs: number; roundTripMs: number }> {
  let best: { offsetMs: number; roundTripMs: number } | undefined;
  for (let i = 0; i < options.samples; i++) {
    const sentMs = options.localMs();
    const serverMs = await options.readServerMs(database);
    const answeredMs = options.localMs();
    const roundTripMs = answeredMs - sentMs;
    const offsetMs = serverMs - (sentMs + roundTripMs / 2);
    if (best === undefined || roundTripMs < best.roundTripMs) best = { offsetMs, roundTripMs };
  }
  if (best === undefined) throw new RangeError("LeaseClock: samples must be at least 1");
  return best;
}
