import type { PostgresMigration } from "../postgres/migrate.js";

/** The component name of the session leases' schema in `mediagate_schema` (postgres/migrate.ts). */
export const LeasesComponent = "leases";

/**
 * Schema history of the session leases (session-leases.ts), oldest first, in a schema `leases`
 * of its own. Append new steps; never edit a released one.
 *
 * - `sessions`: who holds each session (a process's instance id), until when (`expires_at`,
 *   epoch ms of the holder's clock) and the fencing `token`, bumped on every take;
 * - `requests`: an admin action (`/stop`, `/reset`) asked on one replica for a session another
 *   one holds, for the holder to act on;
 * - v2 `slots`: the pins of persistent and `shared:` slots (slot-leases.ts): holder, token and
 *   expiry as a session's, the replica id whose copy of the slot's files is the latest (`home`)
 *   and the last move that left files behind (`moved_from`, `moved_token`); `slot_notices`: the
 *   sessions told of that move.
 */
export const POSTGRES_LEASE_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    sql: `
      CREATE SCHEMA IF NOT EXISTS leases;

      CREATE TABLE leases.sessions (
        profile     text NOT NULL,
        session_key text NOT NULL,
        holder      text NOT NULL,
        token       bigint NOT NULL,
        expires_at  bigint NOT NULL,
        PRIMARY KEY (profile, session_key)
      );
      CREATE INDEX sessions_holder ON leases.sessions (holder);

      CREATE TABLE leases.requests (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        holder      text NOT NULL,
        profile     text NOT NULL,
        session_key text NOT NULL,
        action      text NOT NULL,
        asked_at    bigint NOT NULL
      );
      CREATE INDEX requests_holder ON leases.requests (holder, id);
    `,
  },
  {
    version: 2,
    sql: `
      CREATE TABLE leases.slots (
        slot        text PRIMARY KEY,
        holder      text NOT NULL,
        token       bigint NOT NULL,
        expires_at  bigint NOT NULL,
        home        text NOT NULL,
        moved_from  text,
        moved_token bigint
      );
      CREATE INDEX slots_holder ON leases.slots (holder);

      CREATE TABLE leases.slot_notices (
        slot        text NOT NULL,
        session_key text NOT NULL,
        moved_token bigint NOT NULL,
        PRIMARY KEY (slot, session_key, moved_token)
      );
    `,
  },
];
