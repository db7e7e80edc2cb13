import type { StoreSettings } from "../config/types.js";
import { PostgresDatabase } from "../postgres/database.js";
import { PostgresStoreError, ReadOnlyCode } from "../postgres/errors.js";
import { latestVersion, postgresSchemaVersion } from "../postgres/migrate.js";
import { PostgresStateMigrations, StateComponent } from "../state/postgres-schema.js";
import type { CheckResult } from "./preflight.js";

const Guide = "docs/store.md";

/** The state schema version this build migrates to. */
const StateVersion = latestVersion(PostgresStateMigrations);

/**
 * `doctor`'s store check (docs/store.md): SQLite passes with where its files are; PostgreSQL
 * must answer and take writes (its round trip shown) with a state schema this build knows. Each
 * failure says what to do: the server down or unreachable, the password refused, the database
 * missing, a schema newer than this mediagate. Bounded by `timeoutMs` (connect and query).
 */
export async function probeStore(settings: StoreSettings, timeoutMs: number): Promise<CheckResult> {
  const name = "store";
  if (settings.kind === "sqlite") {
    return {
      name,
      ok: true,
      detail: "SQLite: journal.db in the root home, state.db in each profile's home",
    };
  }
  const database = new PostgresDatabase({
    url: settings.url,
    maxConnections: 1,
    connectTimeoutMs: timeoutMs,
    queryTimeoutMs: timeoutMs,
    statementTimeoutMs: timeoutMs,
    applicationName: "mediagate doctor",
  });
  const where = `PostgreSQL ${database.where}`;
  try {
    // The first ping makes the connection; the second is the round trip a query pays.
    await database.ping();
    const roundTripMs = Math.round((await database.ping()) * 10) / 10;
    const version = await postgresSchemaVersion(database, StateComponent);
    const facts = `${where} reachable, round trip ${roundTripMs} ms`;
    if (version > StateVersion) {
      return {
        name,
        ok: false,
        detail: `${facts}; its state schema is at version ${version}, newer than this mediagate knows (${StateVersion})`,
        fix: "upgrade mediagate to the version that wrote it, or point store.url at another database",
      };
    }
    const schema =
      version === 0
        ? "no mediagate tables yet (the gateway's start or `mediagate store migrate` creates them)"
        : version < StateVersion
          ? `state schema v${version} (migrated to v${StateVersion} at the next start)`
          : `state schema v${version}`;
    return { name, ok: true, detail: `${facts}, ${schema}` };
  } catch (error) {
    return { name, ok: false, detail: `${where}: ${reasonOf(error)}`, fix: fixFor(error) };
  } finally {
    await database.close();
  }
}

function causeCode(error: unknown): string | undefined {
  const cause = error instanceof PostgresStoreError ? error.cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

function reasonOf(error: unknown): string {
  const cause = error instanceof PostgresStoreError ? error.cause : error;
  const message = cause instanceof Error ? cause.message : String(cause);
  if (causeCode(error) === ReadOnlyCode) return `reachable, but takes no writes (${message})`;
  return error instanceof PostgresStoreError && error.unreachable
    ? `not reachable (${message})`
    : message;
}

/** What to do about a failed probe, by what the server (or the network) said. */
function fixFor(error: unknown): string {
  const code = causeCode(error);
  if (code === "28P01" || code === "28000") {
    return "check the user and password in store.url (usually DATABASE_URL), and pg_hba.conf for this host";
  }
  if (code === "3D000") {
    return "create the database (createdb -O <user> <database>), or fix the database name in store.url";
  }
  if (code === ReadOnlyCode) {
    return "point store.url at the primary: this server is a standby, or a primary being failed over";
  }
  if (code === "42501") {
    return "grant the store.url user CREATE on the database (GRANT CREATE ON DATABASE … TO …)";
  }
  if (error instanceof PostgresStoreError && error.unreachable) {
    return `start PostgreSQL (systemctl start postgresql, or pg_ctl -D <data> start) and check that store.url's host and port reach it (listen_addresses, the firewall); ${Guide}`;
  }
  return `see the server's log for the reason; ${Guide}`;
}
