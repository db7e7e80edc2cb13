import type { ProfileConfig, StoreSettings } from "../config/types.js";
import { openStoreBackend } from "../gateway/stores.js";
import type { StateStore } from "../state/state-store.js";
import { stateDbPath } from "../state/store.js";
import { homeFileExists } from "./home-files.js";

/** A profile as a command acts on it: its config and the install's store (docs/store.md). */
export type StoredProfile = ProfileConfig & { readonly store: StoreSettings };

/**
 * Runs `body` on the profile's state store, on the install's store kind, beside a gateway that
 * may be running: SQLite opens the profile's file in WAL mode without the integrity check of
 * a start (`integrityCheck`) and runs nothing when the file does not exist yet (nothing was
 * ever stored, and nothing is created; a file this user may not look at is an error, not an
 * empty profile); PostgreSQL opens a pool of its own for the call.
 */
export async function withProfileState<T>(
  profile: StoredProfile,
  options: { readonly now?: (() => number) | undefined; readonly integrityCheck?: boolean },
  body: (store: StateStore) => Promise<T>,
): Promise<T | undefined> {
  if (profile.store.kind === "sqlite" && !homeFileExists(stateDbPath(profile.home)))
    return undefined;
  const backend = await openStoreBackend(profile.store);
  try {
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
