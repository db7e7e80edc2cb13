import { MediagateError, retry, type Sleep, sleep } from "@mediagate/io";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { journalDbPath } from "../durable/journal.js";
import {
  type JournalMoveCounts,
  liveJournalOwners,
  readSqliteJournal,
  writePostgresJournal,
} from "../durable/journal-transfer.js";
import { PostgresDatabase } from "../postgres/database.js";
import type { Redactor } from "../redact.js";
import { migratePostgresState } from "../state/postgres-store.js";
import {
  newestPostgresState,
  readSqliteState,
  type StateMoveCounts,
  writePostgresState,
} from "../state/state-transfer.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { type FileHolder, processesHolding } from "./file-holders.js";
import { homeFileExists } from "./home-files.js";

/** `mediagate store migrate` refused, before it moved anything of the profile it names. */
export class StoreMigrateError extends MediagateError {
  override readonly name = "StoreMigrateError";
  readonly code = "MG_CLI_STORE_MIGRATE_REFUSED";
}

/** Options of {@link migrateStore}. */
export interface StoreMigrateOptions {
  readonly config?: string | undefined;
  readonly env: GatewayEnv;
  readonly redactor: Redactor;
  /** Where from: only `sqlite` (the homes' files). */
  readonly from: string;
  /** The PostgreSQL URL; default the config's `store.url` when its store is `postgres`. */
  readonly to?: string | undefined;
  /** Overwrite a profile whose PostgreSQL state was written after its file (the gateway ran on it). */
  readonly replace?: boolean | undefined;
  /** Go on when this host cannot tell who has the files open (no `/proc`). */
  readonly force?: boolean | undefined;
  /** Who has the files open. Default {@link processesHolding}. */
  readonly holders?: ((paths: readonly string[]) => FileHolder[] | undefined) | undefined;
  /** How the connected-gateway check waits between its looks. Default a real timer. */
  readonly sleep?: Sleep | undefined;
}

/**
 * How often, and how far apart, the connected-gateway check looks before it refuses. A gateway
 * that has just stopped has closed its connections, but the server lists each one in
 * `pg_stat_activity` until its backend process has exited, a moment later: run right after
 * the stop, one look would refuse a migration whose gateway is gone.
 */
export const ConnectedGatewayLooks = { attempts: 10, intervalMs: 200 } as const;

const Sidecars = ["", "-wal", "-shm"];

/**
 * `mediagate store migrate --from sqlite --to postgres://…` (docs/store.md): moves each
 * profile's state (sessions and their conversations, summaries, approvals, pairing, usage,
 * `/model` picks, scheduled tasks and their runs: every table, state-transfer.ts) from its `state.db` into the PostgreSQL store, then the home's journal
 * (recorded messages, Discord cursors, unfinished replies) into the PostgreSQL journal, while no gateway runs:
 * refused while a process of this host has one of the files open, or a gateway is connected
 * to the database. Each profile's PostgreSQL rows become exactly its file's, in one transaction,
 * so running it twice gives the same result; a profile whose PostgreSQL state is newer than
 * its file (the gateway ran on PostgreSQL since) is refused unless `replace`. The files are
 * never changed but for an older schema's upgrade. Returns the exit code.
 */
export async function migrateStore(
  options: StoreMigrateOptions,
  print: (line: string) => void,
): Promise<number> {
  if (options.from !== "sqlite") {
    throw new StoreMigrateError(`--from ${options.from}: only --from sqlite is supported`);
  }
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  const to = options.to ?? (config.store.kind === "postgres" ? config.store.url : undefined);
  if (to === undefined || !/^postgres(ql)?:\/\//i.test(to)) {
    throw new StoreMigrateError(
      "--to needs a PostgreSQL URL (postgres://user:password@host:5432/database), or a config whose store is { kind: postgres, url: … } (docs/store.md)",
    );
  }
  options.redactor.add([to]);
  const journal = journalDbPath(config.home);
  const files = [journal, ...config.profiles.map((p) => stateDbPath(p.home))].flatMap((path) =>
    Sidecars.map((suffix) => `${path}${suffix}`).filter((file) => homeFileExists(file)),
  );
  const holders = (options.holders ?? processesHolding)(files);
  if (holders === undefined && options.force !== true) {
    throw new StoreMigrateError(
      "cannot tell whether a gateway has the databases open (this host has no /proc); stop every gateway of this install, then run it again with --force",
    );
  }
  if (holders !== undefined && holders.length > 0) {
    const who = holders.map((h) => `${h.pid} (${h.command})`).join(", ");
    throw new StoreMigrateError(
      `the gateway is running: process ${who} has the databases open; stop it (and any other mediagate command), then run this again`,
    );
  }
  const database = new PostgresDatabase({ url: to, applicationName: "mediagate store migrate" });
  try {
    await refuseConnectedGateway(database, options.sleep ?? sleep);
    await refuseLiveJournalOwners(database, journal);
    await migratePostgresState(database);
    for (const profile of config.profiles) {
      const path = stateDbPath(profile.home);
      if (!homeFileExists(path)) {
        print(`profile ${profile.name}: no ${path}, nothing to move`);
        continue;
      }
      // Brings an older file to this build's schema (the gateway's own upgrade at start).
      await (await SqliteStateStore.open(path, { integrityCheck: false })).close();
      const rows = readSqliteState(path);
      const newer = await newestPostgresState(database, profile.name);
      if (newer > rows.newestMs && options.replace !== true) {
        throw new StoreMigrateError(
          `profile ${profile.name}: PostgreSQL ${database.where} holds state written at ${new Date(newer).toISOString()}, after the newest of ${path}: the gateway ran on PostgreSQL since; nothing of it was moved (--replace overwrites it with the file's)`,
        );
      }
      const counts = await writePostgresState(database, profile.name, rows);
      print(`profile ${profile.name}: moved ${describeCounts(counts)} from ${path}`);
    }
    return await moveJournal(journal, database, print);
  } finally {
    await database.close();
  }
}

/** A live owner of unfinished work in the PostgreSQL journal, checked before anything moves. */
async function refuseLiveJournalOwners(database: PostgresDatabase, path: string): Promise<void> {
  if (!homeFileExists(path)) return;
  const live = await database.transaction("journal owners", liveJournalOwners);
  if (live.length > 0) {
    throw new StoreMigrateError(
      `journal: PostgreSQL ${database.where} holds unfinished work of the running gateway ${live.join(", ")}; nothing was moved: stop every gateway using it, then run this again`,
    );
  }
}

/**
 * A gateway of this install connected to the database (its pool's `application_name`), still
 * there after {@link ConnectedGatewayLooks}: a gateway that just stopped is given that long to
 * leave.
 */
async function refuseConnectedGateway(database: PostgresDatabase, wait: Sleep): Promise<void> {
  await retry(
    async () => {
      const found = await database.query<{ n: string }>(
        "gateway check",
        `SELECT count(*) AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'mediagate' AND pid <> pg_backend_pid()`,
      );
      if (Number(found.rows[0]?.n ?? 0) > 0) {
        throw new StoreMigrateError(
          `a gateway is connected to PostgreSQL ${database.where}; stop it, then run this again`,
        );
      }
    },
    {
      maxAttempts: ConnectedGatewayLooks.attempts,
      sleep: wait,
      onFailure: ({ error }) => {
        if (!(error instanceof StoreMigrateError)) throw error;
        return ConnectedGatewayLooks.intervalMs;
      },
    },
  );
}

/**
 * The journal's recorded messages, Discord cursors and the outbox's unfinished replies, moved
 * into the PostgreSQL journal in one transaction, handed to the next gateway start
 * (durable/journal-transfer.ts). Refused, moving nothing of it, while a live process owns
 * unfinished work there.
 */
async function moveJournal(
  path: string,
  database: PostgresDatabase,
  print: (line: string) => void,
): Promise<number> {
  if (!homeFileExists(path)) {
    print(`journal: no ${path}, nothing to move`);
    return 0;
  }
  const moved = await writePostgresJournal(database, readSqliteJournal(path));
  if ("liveOwners" in moved) {
    throw new StoreMigrateError(
      `journal: PostgreSQL ${database.where} holds unfinished work of the running gateway ${moved.liveOwners.join(", ")}; nothing of ${path} was moved: stop every gateway using it, then run this again`,
    );
  }
  print(`journal: moved ${describeJournal(moved)} from ${path}`);
  return 0;
}

function describeJournal(counts: JournalMoveCounts): string {
  return [
    `${counts.unfinished} unfinished message(s)`,
    `${counts.done} finished one(s)`,
    `${counts.receipts} receipt(s)`,
    `${counts.cursors} Discord cursor(s)`,
    `${counts.replies} unfinished repl${counts.replies === 1 ? "y" : "ies"} with ${counts.steps} recorded step(s)`,
    `${counts.alreadyThere} already in PostgreSQL`,
  ].join(", ");
}

function describeCounts(counts: StateMoveCounts): string {
  return [
    `${counts.sessions} session(s)`,
    `${counts.messages} message(s)`,
    `${counts.summaries} summar${counts.summaries === 1 ? "y" : "ies"}`,
    `${counts.approvals} approval(s)`,
    `${counts.pairing} pairing record(s)`,
    `${counts.usage} usage record(s)`,
    `${counts.sessionModels} model pick(s)`,
    `${counts.tasks} scheduled task(s) with ${counts.taskRuns} run(s)`,
  ].join(", ");
}
