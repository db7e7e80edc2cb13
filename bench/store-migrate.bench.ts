/**
 * `mediagate store migrate` (docs/store.md): how long moving a home's SQLite state and journal
 * into PostgreSQL takes, by the same functions the command runs (`readSqliteState` and
 * `writePostgresState`, `readSqliteJournal` and `writePostgresJournal`), on a generated home of
 * `--sessions` sessions (10,000): each with two messages in `state.db`, and in `journal.db` one
 * finished message with its receipt, every tenth with a pending reply and one recorded step.
 * Each figure is written `--runs` times (3) into a fresh database; prints one JSON line per
 * figure (`ms` of every run, `ms_median`). Needs MEDIAGATE_BENCH_POSTGRES_URL (else
 * MEDIAGATE_TEST_POSTGRES_URL): a cluster's `postgres` database, as a user that may create
 * databases. `pnpm --filter @mediagate/gateway build && pnpm bench:store-migrate`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { currentInstanceId } from "@mediagate/sandbox";
import { JournalDatabase } from "../apps/gateway/dist/durable/journal-database.js";
import {
  readSqliteJournal,
  writePostgresJournal,
} from "../apps/gateway/dist/durable/journal-transfer.js";
import { PostgresDatabase } from "../apps/gateway/dist/postgres/database.js";
import { migratePostgresState } from "../apps/gateway/dist/state/postgres-store.js";
import { StateDatabase } from "../apps/gateway/dist/state/state-database.js";
import { readSqliteState, writePostgresState } from "../apps/gateway/dist/state/state-transfer.js";
import { freshPostgresDatabase } from "../test-support/postgres.js";

function count(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const raw =
    at >= 0 ? process.argv[at + 1] : process.env[`MEDIAGATE_BENCH_MIGRATE_${name.toUpperCase()}`];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`--${name}: got ${raw}, expected a positive integer`);
  }
  return value;
}

const Sessions = count("sessions", 10_000);
const Runs = count("runs", 3);
const admin =
  process.env.MEDIAGATE_BENCH_POSTGRES_URL?.trim() || process.env.MEDIAGATE_TEST_POSTGRES_URL;
if (admin === undefined || admin.trim() === "") {
  throw new Error(
    "set MEDIAGATE_BENCH_POSTGRES_URL to a cluster's `postgres` database (a user that may CREATE DATABASE)",
  );
}

/** Writes the generated home's `state.db` and `journal.db` into `dir`. */
function generate(dir: string): { state: string; journal: string } {
  const state = join(dir, "state.db");
  const journal = join(dir, "journal.db");
  const stateDb = StateDatabase.open(state, { busyTimeoutMs: 5_000 });
  const journalDb = JournalDatabase.open(journal, {
    busyTimeoutMs: 5_000,
    owner: currentInstanceId(),
  });
  const nowMs = Date.now();
  for (let i = 0; i < Sessions; i++) {
    const key = `agent:bench:telegram:dm:${i}`;
    const sessionId = stateDb.currentSessionId(key, nowMs);
    stateDb.appendHistory(
      sessionId,
      [
        { role: "user", content: `question ${i}, about as long as what people type in a chat` },
        { role: "assistant", content: `answer ${i}, a little longer than the question was` },
      ],
      nowMs,
    );
    const receiptId = String(i);
    const { id } = journalDb.record(
      {
        profile: "bench",
        platform: "telegram",
        chatId: String(i),
        chatType: "dm",
        userId: String(i),
        messageId: receiptId,
        text: `question ${i}, about as long as what people type in a chat`,
        receiptId,
      },
      nowMs,
    );
    journalDb.started(id, nowMs);
    const reply = journalDb.addReply(
      {
        profile: "bench",
        platform: "telegram",
        sessionKey: key,
        slot: "profile:bench",
        target: { platform: "telegram", chatId: String(i) },
        text: `answer ${i}, a little longer than the question was`,
      },
      id,
      [],
      "replied",
      nowMs,
    );
    if (i % 10 === 0) journalDb.step(reply.id, "text:0", "sent", nowMs);
    else journalDb.closeReply(reply.id, "delivered", undefined, nowMs);
  }
  stateDb.close();
  journalDb.close();
  return { state, journal };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function timed(label: string, write: (database: PostgresDatabase) => Promise<unknown>) {
  const runs: number[] = [];
  let result: unknown;
  for (let run = 0; run < Runs; run++) {
    const target = await freshPostgresDatabase(
      `bench_migrate_${randomBytes(2).toString("hex")}`,
      admin,
    );
    const database = new PostgresDatabase({
      url: target.url,
      statementTimeoutMs: 600_000,
      queryTimeoutMs: 600_000,
    });
    try {
      await migratePostgresState(database);
      const started = performance.now();
      result = await write(database);
      runs.push(performance.now() - started);
    } finally {
      await database.close();
      await target.drop();
    }
  }
  process.stdout.write(
    `${JSON.stringify({
      bench: label,
      sessions: Sessions,
      moved: result,
      ms: runs.map((ms) => Math.round(ms)),
      ms_median: Math.round(median(runs)),
    })}\n`,
  );
}

const dir = await mkdtemp(join(tmpdir(), "mg-bench-migrate-"));
try {
  const generatedAt = performance.now();
  const files = generate(dir);
  process.stderr.write(
    `bench:store-migrate generated ${Sessions} sessions in ${Math.round(performance.now() - generatedAt)} ms\n`,
  );
  await timed("store_migrate_state", async (database) =>
    writePostgresState(database, "bench", readSqliteState(files.state)),
  );
  await timed("store_migrate_journal", async (database) =>
    writePostgresJournal(database, readSqliteJournal(files.journal)),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
