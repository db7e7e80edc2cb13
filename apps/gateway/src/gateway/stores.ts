import type { InstanceId } from "@mediagate/sandbox";
import type { ProfileConfig, StoreSettings } from "../config/types.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { SessionLeases } from "../durable/session-leases.js";
import type { Journal } from "../durable/types.js";
import { PostgresDatabase } from "../postgres/database.js";
import { migratePostgresState, PostgresStateStore } from "../state/postgres-store.js";
import type { StateStore } from "../state/state-store.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";

/** What the journal and the state stores are opened with (the clock, the SQLite check's wait). */
export interface StoreOpenOptions {
  readonly now?: (() => number) | undefined;
  /** SQLite: how long opening waits for the integrity check of an existing file. */
  readonly integrityWaitMs?: number | undefined;
  /** SQLite: whether an existing file is checked for damage first (default true). */
  readonly integrityCheck?: boolean | undefined;
  /** Who owns what the journal records. Default: this process (`currentInstanceId()`). */
  readonly owner?: InstanceId | undefined;
  /** PostgreSQL: the session leases the journal's replies are fenced by (docs/cluster.md). */
  readonly fence?: SessionLeases | undefined;
}

/**
 * The store of an install (`store:` in the config, docs/store.md): opens its journal and each
 * profile's state store. SQLite: the files in the homes, one per database; PostgreSQL: one
 * pool for all of them, whose state tables were migrated when the store was opened.
 */
export interface StoreBackend {
  readonly kind: StoreSettings["kind"];
  /** The PostgreSQL database (health, `doctor`, `store migrate`); absent on SQLite. */
  readonly database: PostgresDatabase | undefined;
  openJournal(rootHome: string, options?: StoreOpenOptions): Promise<Journal>;
  openState(profile: ProfileConfig, options?: StoreOpenOptions): Promise<StateStore>;
  /**
   * PostgreSQL: the session leases of the replicas sharing the database (docs/cluster.md,
   * "Sessions across replicas"), their schema migrated; SQLite: none (one process).
   */
  openLeases(options?: StoreOpenOptions): Promise<SessionLeases | undefined>;
  /** Closes what the backend itself holds (the pool), after its journal and stores closed. */
  close(): Promise<void>;
}

/**
 * Opens the store `settings` names. PostgreSQL: makes the pool and brings the state tables to
 * the latest schema under the migration lock (a newer schema rejects with
 * `PostgresSchemaError`; a server that cannot be reached with `PostgresStoreError`, whose line
 * names the server without its credentials); the pool is closed again when that fails. With
 * `migrate: false` (the CLI's commands beside a running cluster) the schema is left as it is.
 */
export async function openStoreBackend(
  settings: StoreSettings,
  options: { readonly migrate?: boolean } = {},
): Promise<StoreBackend> {
  if (settings.kind === "sqlite") return sqliteBackend;
  const { kind: _kind, ...pool } = settings;
  const database = new PostgresDatabase(withoutUndefined(pool));
  try {
    if (options.migrate !== false) await migratePostgresState(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  return {
    kind: "postgres",
    database,
    openJournal: (_rootHome, options = {}) =>
      PostgresJournal.open(
        database,
        withoutUndefined({ now: options.now, owner: options.owner, fence: options.fence }),
      ),
    openLeases: (options = {}) =>
      SessionLeases.open(database, withoutUndefined({ now: options.now, owner: options.owner })),
    async openState(profile, options = {}) {
      return PostgresStateStore.attach(database, profile.name, withoutUndefined(options));
    },
    close: () => database.close(),
  };
}

const sqliteBackend: StoreBackend = {
  kind: "sqlite",
  database: undefined,
  openJournal: (rootHome, options = {}) =>
    SqliteJournal.open(journalDbPath(rootHome), withoutUndefined(options)),
  openState: (profile, options = {}) =>
    SqliteStateStore.open(stateDbPath(profile.home), withoutUndefined(options)),
  openLeases: async () => undefined,
  close: async () => {},
};

/** `value` without its `undefined` properties (the options are `exactOptionalPropertyTypes`). */
function withoutUndefined<T extends object>(
  value: T,
): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
