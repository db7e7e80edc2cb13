import { hostname } from "node:os";
import { type Schedule, type Sleep, scheduleWithTimer, sleep } from "@mediagate/io";
import { currentInstanceId } from "@mediagate/sandbox/instance";
import { Defaults } from "../defaults.js";
import { goneOwners } from "../durable/postgres-owner.js";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { ReplicaIdTakenError } from "./errors.js";

/** The state a replica wrote last: running, stopping (a graceful stop under way), or stopped. */
export type ReplicaState = "running" | "stopping" | "stopped";

/** One replica of the cluster as `mediagate_replicas` lists it (docs/cluster.md). */
export interface ReplicaInfo {
  readonly id: string;
  readonly host: string;
  readonly version: string;
  readonly instanceId: string;
  /** Epoch ms. */
  readonly startedMs: number;
  /** Epoch ms of its last heartbeat (the server's clock). */
  readonly heartbeatMs: number;
  /** How long ago that was, by the server's clock. */
  readonly heartbeatAgeMs: number;
  readonly sessionsHeld: number;
  readonly state: ReplicaState;
  /** Not stopped and its last heartbeat younger than `Defaults.cluster.deadAfterMs`. */
  readonly alive: boolean;
}

/** Options of {@link ReplicaRegistry.register}. */
export interface ReplicaRegistryOptions {
  readonly database: PostgresDatabase;
  readonly replicaId: string;
  /** The gateway's version (`packageVersion()`). */
  readonly version: string;
  /** Default `os.hostname()`. */
  readonly host?: string;
  /** Default this process's (`currentInstanceId()`). */
  readonly instanceId?: string;
  /**
   * How many sessions this replica holds, written with each heartbeat. Default 0 (the session
   * leases fill it: docs/cluster.md).
   */
  readonly sessionsHeld?: () => number;
  /** The heartbeat's timer. Default real (unref'd) timers; tests fire it by hand. */
  readonly schedule?: Schedule;
  /** Default `Defaults.cluster.heartbeatIntervalMs`. */
  readonly heartbeatIntervalMs?: number;
  /** The wait between tries of a start that finds its id's lock held; default a real timer. */
  readonly sleep?: Sleep;
  /** Told when a heartbeat could not be written (the next one tries again). */
  readonly onHeartbeatFailed?: (error: unknown) => void;
  /** Told when a heartbeat was written again after one or more failed. */
  readonly onHeartbeatRecovered?: () => void;
}

const ReplicaColumns = `id, host, version, instance_id,
  (extract(epoch FROM started_at) * 1000)::float8 AS started_ms,
  (extract(epoch FROM heartbeat_at) * 1000)::float8 AS heartbeat_ms,
  (extract(epoch FROM now() - heartbeat_at) * 1000)::float8 AS heartbeat_age_ms,
  sessions_held, state`;

interface ReplicaRow {
  id: string;
  host: string;
  version: string;
  instance_id: string;
  started_ms: number;
  heartbeat_ms: number;
  heartbeat_age_ms: number;
  sessions_held: number;
  state: ReplicaState;
}

/**
 * Every replica registered in the cluster's database, alive first then by id. `deadAfterMs`
 * (default `Defaults.cluster.deadAfterMs`) decides `alive`.
 */
export async function listReplicas(
  database: Pick<PostgresDatabase, "query">,
  deadAfterMs: number = Defaults.cluster.deadAfterMs,
): Promise<ReplicaInfo[]> {
  const found = await database.query<ReplicaRow>(
    "list replicas",
    `SELECT ${ReplicaColumns} FROM mediagate_replicas ORDER BY id`,
  );
  const replicas = found.rows.map((row): ReplicaInfo => {
    const heartbeatAgeMs = Math.max(0, Math.round(row.heartbeat_age_ms));
    return {
      id: row.id,
      host: row.host,
      version: row.version,
      instanceId: row.instance_id,
      startedMs: Math.round(row.started_ms),
      heartbeatMs: Math.round(row.heartbeat_ms),
      heartbeatAgeMs,
      sessionsHeld: row.sessions_held,
      state: row.state,
      alive: row.state !== "stopped" && heartbeatAgeMs < deadAfterMs,
    };
  });
  return replicas.sort((a, b) => Number(b.alive) - Number(a.alive));
}

/**
 * This replica's row in `mediagate_replicas` (docs/cluster.md): written at start, its
 * heartbeat renewed every `heartbeatIntervalMs` while the gateway runs, marked `stopping` when a
 * graceful stop begins and `stopped` when it ends. A replica killed outright keeps `running`
 * and its last heartbeat: it is listed as dead once that is older than
 * `Defaults.cluster.deadAfterMs`.
 */
export class ReplicaRegistry {
  readonly replicaId: string;
  readonly instanceId: string;
  readonly #database: PostgresDatabase;
  readonly #options: ReplicaRegistryOptions;
  readonly #schedule: Schedule;
  readonly #intervalMs: number;
  #sessionsHeldBy: (() => number) | undefined;
  #failedBeats = 0;
  #cancel: (() => void) | undefined;
  #beating: Promise<void> | undefined;
  #closed = false;

  private constructor(options: ReplicaRegistryOptions) {
    this.#options = options;
    this.#sessionsHeldBy = options.sessionsHeld;
    this.#database = options.database;
    this.replicaId = options.replicaId;
    this.instanceId = options.instanceId ?? currentInstanceId();
    this.#schedule = options.schedule ?? scheduleWithTimer;
    this.#intervalMs = options.heartbeatIntervalMs ?? Defaults.cluster.heartbeatIntervalMs;
  }

  /**
   * Writes this replica's row (`running`, heartbeat now) and starts the heartbeat. Rejects with
   * {@link ReplicaIdTakenError} when another process registered under the same id still lives
   * (its journal owner lock is held: docs/durability.md), and with the database's error when
   * the server cannot be reached.
   */
  static async register(options: ReplicaRegistryOptions): Promise<ReplicaRegistry> {
    const registry = new ReplicaRegistry(options);
    const wait = options.sleep ?? sleep;
    const { registerTries, registerRetryMs } = Defaults.cluster;
    for (let tried = 1; ; tried++) {
      try {
        await registry.#register(options.host ?? hostname(), options.version);
        break;
      } catch (error) {
        // The earlier process's lock may be held for a moment by another replica judging
        // whether it is gone (its take-over's `pg_try_advisory_xact_lock`): ask again a few
        // times before refusing the start. A process that really lives keeps it throughout.
        if (!(error instanceof ReplicaIdTakenError) || tried >= registerTries) throw error;
        await wait(registerRetryMs);
      }
    }
    registry.#next();
    return registry;
  }

  async #register(host: string, version: string): Promise<void> {
    await this.#database.transaction("register replica", async (tx) => {
      const found = await tx.query<{ instance_id: string; host: string; state: ReplicaState }>(
        "SELECT instance_id, host, state FROM mediagate_replicas WHERE id = $1 FOR UPDATE",
        [this.replicaId],
      );
      const earlier = found.rows[0];
      if (
        earlier !== undefined &&
        earlier.state !== "stopped" &&
        earlier.instance_id !== this.instanceId &&
        !(await isGone(tx, earlier.instance_id, this.instanceId))
      ) {
        throw new ReplicaIdTakenError(this.replicaId, earlier.host);
      }
      await tx.query(
        `INSERT INTO mediagate_replicas
           (id, host, version, instance_id, started_at, heartbeat_at, sessions_held, state)
         VALUES ($1, $2, $3, $4, now(), now(), $5, 'running')
         ON CONFLICT (id) DO UPDATE SET host = excluded.host, version = excluded.version,
           instance_id = excluded.instance_id, started_at = excluded.started_at,
           heartbeat_at = excluded.heartbeat_at, sessions_held = excluded.sessions_held,
           state = 'running'`,
        [this.replicaId, host, version, this.instanceId, this.#sessionsHeld()],
      );
    });
  }

  /** Writes one heartbeat now (the timer calls it; tests too). Rejects with the database's error. */
  async heartbeat(): Promise<void> {
    await this.#database.query(
      "replica heartbeat",
      `UPDATE mediagate_replicas SET heartbeat_at = now(), sessions_held = $3
        WHERE id = $1 AND instance_id = $2 AND state <> 'stopped'`,
      [this.replicaId, this.instanceId, this.#sessionsHeld()],
    );
  }

  /** Marks the replica `stopping`: a graceful stop began (its heartbeat goes on). */
  async stopping(): Promise<void> {
    await this.#setState("stopping");
  }

  /** Stops the heartbeat and marks the replica `stopped`. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#cancel?.();
    await this.#beating;
    await this.#setState("stopped");
  }

  async #setState(state: ReplicaState): Promise<void> {
    await this.#database.query(
      "replica state",
      `UPDATE mediagate_replicas SET state = $3, heartbeat_at = now()
        WHERE id = $1 AND instance_id = $2`,
      [this.replicaId, this.instanceId, state],
    );
  }

  /**
   * Counts the sessions this replica holds from now on (written with each heartbeat): for the
   * part that holds sessions, which starts after the registration.
   */
  sessionsHeldBy(count: () => number): void {
    this.#sessionsHeldBy = count;
  }

  #sessionsHeld(): number {
    return this.#sessionsHeldBy?.() ?? 0;
  }

  #next(): void {
    if (this.#closed) return;
    this.#cancel = this.#schedule(() => {
      this.#beating = this.heartbeat()
        .then(
          () => {
            if (this.#failedBeats > 0) this.#options.onHeartbeatRecovered?.();
            this.#failedBeats = 0;
          },
          (error: unknown) => {
            this.#failedBeats++;
            this.#options.onHeartbeatFailed?.(error);
          },
        )
        .finally(() => {
          this.#beating = undefined;
          this.#next();
        });
    }, this.#intervalMs);
  }
}

async function isGone(tx: Queryable, instanceId: string, self: string): Promise<boolean> {
  return (await goneOwners(tx, [instanceId], self)).length > 0;
}
