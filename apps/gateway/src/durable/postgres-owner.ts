import { createHash } from "node:crypto";
import { backoffMs, type Sleep } from "@mediagate/io";
import { MediagateError } from "@mediagate/io/mediagate-error";
import type pg from "pg";
import { Defaults } from "../defaults.js";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { ReleasedOwner } from "./journal-records.js";

/**
 * The key of the session-level advisory lock an owner (a process's instance id) holds while it
 * lives: 64 bits of a SHA-256 of the id, as the decimal text of a signed `bigint`. The
 * migrations' lock (postgres/migrate.ts) is a small number, so the two never meet by design
 * short of a 2^-64 chance.
 */
export function ownerLockKey(owner: string): string {
  return createHash("sha256")
    .update(`mediagate journal owner\0${owner}`)
    .digest()
    .readBigInt64BE(0)
    .toString();
}

/**
 * The owner a replica records on an entry it hands to `holder`, the process holding that
 * entry's session (docs/cluster.md): the holder picks it up (`PostgresJournal.takeHandedOver`),
 * and it counts as gone when the holder is. `handed:` for a message just received, which the
 * holder queues as it would one it received itself (held to `maxQueuedMessages`);
 * `handed-recovered:` for one the replica took over from the journal (accepted before).
 */
export function handedOwner(holder: string, recovered = false): string {
  return `${recovered ? HandedRecoveredPrefix : HandedPrefix}${holder}`;
}

const HandedPrefix = "handed:";
const HandedRecoveredPrefix = "handed-recovered:";

/** The process whose lock says whether `owner` is alive: the holder of a handed-over entry. */
export function lockHolderOf(owner: string): string {
  for (const prefix of [HandedPrefix, HandedRecoveredPrefix]) {
    if (owner.startsWith(prefix)) return owner.slice(prefix.length);
  }
  return owner;
}

/**
 * Which of `owners` are gone, inside the caller's transaction `tx`: a stop's
 * {@link ReleasedOwner}, and every owner whose lock nobody holds (for an entry handed over, its
 * holder's lock). The lock of each gone owner
 * is then held by `tx` until it ends (`pg_try_advisory_xact_lock`), so two processes taking
 * over at once never both judge one owner gone; `self` is never gone.
 */
export async function goneOwners(
  tx: Queryable,
  owners: readonly string[],
  self: string,
): Promise<string[]> {
  const gone: string[] = [];
  for (const owner of owners) {
    if (owner === self || lockHolderOf(owner) === self) continue;
    if (owner === ReleasedOwner) {
      gone.push(owner);
      continue;
    }
    const free = await tx.query<{ free: boolean }>(
      "SELECT pg_try_advisory_xact_lock($1::bigint) AS free",
      [ownerLockKey(lockHolderOf(owner))],
    );
    if (free.rows[0]?.free === true) gone.push(owner);
  }
  return gone;
}

/**
 * Waits out what is left of `graceMs` since the server started (`pg_postmaster_start_time`):
 * a restart released every owner lock, and live processes take theirs again within that time
 * ({@link OwnerLock}); judged before, they would look gone.
 */
export async function afterOwnerGrace(
  database: PostgresDatabase,
  operation: string,
  graceMs: number,
  sleep: Sleep,
): Promise<void> {
  if (graceMs <= 0) return;
  const up = await database.query<{ up_ms: number }>(
    operation,
    "SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::float8 AS up_ms",
  );
  const leftMs = graceMs - (up.rows[0]?.up_ms ?? graceMs);
  if (leftMs > 0) await sleep(leftMs);
}

/** Another live connection holds the owner lock this process asked for. */
export class OwnerTakenError extends MediagateError {
  override readonly name = "OwnerTakenError";
  readonly code = "MG_JOURNAL_OWNER_TAKEN";
  readonly owner: string;

  constructor(owner: string) {
    super(
      `owner ${owner} is held by another live connection (two processes with one instance id?); its entries cannot be shared`,
    );
    this.owner = owner;
  }
}

/**
 * The owner lock of one owner on one server, held on a connection of its own for as long as
 * any journal of this process uses it: while it is held, no other process takes that owner's
 * entries over; once the process ends (or is killed) the server drops the connection and the
 * lock with it. A lost connection (a server restart, a network fault) is made again and the
 * lock taken again, after `Defaults.postgres.ownerRelockBaseMs`, doubling up to
 * `ownerRelockMaxMs`; meanwhile {@link held} is `false` and other processes may see this one as
 * gone (docs/durability.md says what that risks).
 */
export class OwnerLock {
  static readonly #held = new Map<string, OwnerLock>();
  readonly #database: PostgresDatabase;
  readonly #owner: string;
  readonly #name: string;
  #client: pg.Client | undefined;
  #users = 0;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  /** The first taking of the lock, which every user waits for. */
  #taken: Promise<void> = Promise.resolve();

  private constructor(database: PostgresDatabase, owner: string, name: string) {
    this.#database = database;
    this.#owner = owner;
    this.#name = name;
  }

  /**
   * Takes (or shares, within this process) the lock of `owner` on `database`'s server.
   * Rejects with {@link OwnerTakenError} when another connection holds it, or with the
   * database's error when the server cannot be reached.
   */
  static async acquire(database: PostgresDatabase, owner: string): Promise<OwnerLock> {
    const name = `${database.where}\0${owner}`;
    let lock = OwnerLock.#held.get(name);
    if (lock === undefined) {
      const made = new OwnerLock(database, owner, name);
      OwnerLock.#held.set(name, made);
      made.#taken = made.#take().catch((error: unknown) => {
        OwnerLock.#held.delete(name);
        throw error;
      });
      lock = made;
    }
    // A journal opened while the first one's lock is still being taken waits for it, and
    // fails with it.
    await lock.#taken;
    lock.#users++;
    return lock;
  }

  /** Whether the lock is held right now (not while its connection is being made again). */
  get held(): boolean {
    return this.#client !== undefined;
  }

  /** One user less (each calls it once); the last one unlocks and ends the connection. */
  async release(): Promise<void> {
    if (this.#users === 0) return;
    this.#users--;
    if (this.#users > 0) return;
    this.#released = true;
    OwnerLock.#held.delete(this.#name);
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #take(): Promise<void> {
    const client = await this.#database.session("owner lock");
    try {
      const taken = await client.query<{ locked: boolean }>(
        "SELECT pg_try_advisory_lock($1::bigint) AS locked",
        [ownerLockKey(this.#owner)],
      );
      if (taken.rows[0]?.locked !== true) throw new OwnerTakenError(this.#owner);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#released) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#failures = 0;
    client.once("end", () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#retake();
    });
  }

  #retake(): void {
    if (this.#released) return;
    this.#failures++;
    const waitMs = backoffMs(this.#failures, {
      baseMs: Defaults.postgres.ownerRelockBaseMs,
      maxMs: Defaults.postgres.ownerRelockMaxMs,
    });
    this.#timer = setTimeout(() => {
      this.#take().catch(() => this.#retake());
    }, waitMs);
    this.#timer.unref();
  }
}
