import { MediagateError } from "@mediagate/io";
import type { ProfileConfig, StoreSettings } from "../config/types.js";
import { openStoreBackend } from "../gateway/stores.js";
import { PostgresSchemaError } from "../postgres/errors.js";
import { latestVersion, postgresSchemaVersion } from "../postgres/migrate.js";
import { PostgresStateMigrations, StateComponent } from "../state/postgres-schema.js";
import type { StateStore } from "../state/state-store.js";
import { stateDbPath } from "../state/store.js";
import { homeFileExists } from "./home-files.js";

/** The state schema version this build reads and writes. */
const StateVersion = latestVersion(PostgresStateMigrations);

/**
 * The PostgreSQL store's state schema is older than this mediagate's: a command of a newer
 * CLI than the cluster runs. It does not migrate it (that would start the cluster's upgrade,
 * and replicas of the older version could not restart: docs/operations.md), so nothing ran.
 */
export class StoreSchemaOlderError extends MediagateError {
  override readonly name = "StoreSchemaOlderError";
  readonly code = "MG_CLI_STORE_SCHEMA_OLDER";
}

/** A profile as a command acts on it: its config and the install's store (docs/store.md). */
export type StoredProfile = ProfileConfig & { readonly store: StoreSettings };

/**
 * Runs `body` on the profile's state store, on the install's store kind, beside a gateway that
 * may be running: SQLite opens the profile's file in WAL mode without the integrity check of
 * a start (`integrityCheck`) and runs nothing when the file does not exist yet (nothing was
 * ever stored, and nothing is created; a file this user may not look at is an error, not an
 * empty profile); PostgreSQL opens a pool of its own for the call and changes no schema: one
 * with no mediagate tables yet has nothing stored (nothing runs, nothing is created), one
 * newer than this mediagate rejects with `PostgresSchemaError` and one older with
 * {@link StoreSchemaOlderError}.
 */
export async function withProfileState<T>(
  profile: StoredProfile,
  options: { readonly now?: (() => number) | undefined; readonly integrityCheck?: boolean },
  body: (store: StateStore) => Promise<T>,
): Promise<T | undefined> {
  if (profile.store.kind === "sqlite" && !homeFileExists(stateDbPath(profile.home)))
    return undefined;
  const backend = await openStoreBackend(profile.store, { migrate: false });
  try {
    if (backend.database !== undefined) {
      const found = await postgresSchemaVersion(backend.database, StateComponent);
      if (found === 0) return undefined;
      if (found > StateVersion) {
        throw new PostgresSchemaError(backend.database.where, StateComponent, found, StateVersion);
      }
      if (found < StateVersion) {
        throw new StoreSchemaOlderError(
          `PostgreSQL ${backend.database.where}: its state schema is at version ${found}, older than this mediagate's (${StateVersion}); this command does not upgrade it (replicas of the older version could then not restart): run the mediagate version the gateway runs, or upgrade the gateway first (it upgrades the schema at start)`,
        );
      }
    }
    const store = await backend.openState(profile, options);
    try {
      return await body(store);
    } finally {
      await store.close();
    }
  } finally {
    await backend.close();
  }
}
