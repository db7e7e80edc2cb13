/**
 * Storage benchmark (not a test): prints one JSON line per figure,
 * `{"bench": name, "p50_ms": …, "p90_ms": …, "p99_ms": …, "n": …}`. Run from the root with
 * `pnpm bench:storage` after `pnpm --filter @mediagate/gateway build`.
 * Env: MEDIAGATE_BENCH_DIR (default the OS temp dir): where the databases are made.
 *
 * `*_worker` figures go through the worker thread (what the gateway does); `*_main_thread`
 * run the same synchronous code on the calling thread, as the state database did before it
 * moved off the event loop.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type InboundMessage,
  journalDbPath,
  SqliteJournal,
  SqliteStateStore,
  stateDbPath,
} from "@mediagate/gateway";
// The synchronous engines are internal to the gateway; the bench reaches into its build.
import { JournalDatabase } from "../apps/gateway/dist/durable/journal-database.js";
import { StateDatabase } from "../apps/gateway/dist/state/state-database.js";

const N = 1_000;
const Warmup = 20;

function report(bench: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
  const round = (ms: number) => Math.round(ms * 10_000) / 10_000;
  const line = {
    bench,
    p50_ms: round(at(0.5)),
    p90_ms: round(at(0.9)),
    p99_ms: round(at(0.99)),
    n: sorted.length,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function time(fn: (i: number) => unknown): Promise<number[]> {
  for (let i = 0; i < Warmup; i++) await fn(-1 - i);
  const samples: number[] = [];
  for (let i = 0; i < N; i++) {
    const started = performance.now();
    await fn(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

function message(receiptId: string): InboundMessage {
  return {
    profile: "bench",
    platform: "telegram",
    chatId: "100",
    chatType: "dm",
    userId: "7",
    messageId: receiptId,
    text: "a message of ordinary length, about as long as what people type in a chat",
    receiptId,
  };
}

async function main(): Promise<void> {
  const home = await mkdtemp(join(process.env.MEDIAGATE_BENCH_DIR ?? tmpdir(), "mg-bench-db-"));
  try {
    const journal = await SqliteJournal.open(journalDbPath(join(home, "worker")));
    report("journal_record_worker", await time((i) => journal.record(message(`w${i}`))));
    await journal.close();

    const direct = JournalDatabase.open(journalDbPath(join(home, "main")), {
      busyTimeoutMs: 5_000,
      owner: journal.owner,
    });
    report(
      "journal_record_main_thread",
      await time((i) => direct.record(message(`m${i}`), Date.now())),
    );
    direct.close();

    const store = await SqliteStateStore.open(stateDbPath(join(home, "worker")));
    const key = "agent:bench:telegram:dm:100";
    const sessionId = await store.currentSessionId(key);
    report("state_session_id_worker", await time(() => store.currentSessionId(key)));
    report(
      "state_append_worker",
      await time((i) => store.appendHistory(sessionId, [{ role: "user", content: `m${i}` }])),
    );
    await store.close();

    const state = StateDatabase.open(stateDbPath(join(home, "main")), { busyTimeoutMs: 5_000 });
    state.currentSessionId(key, Date.now());
    report(
      "state_session_id_main_thread",
      await time(() => state.currentSessionId(key, Date.now())),
    );
    report(
      "state_append_main_thread",
      await time((i) =>
        state.appendHistory(sessionId, [{ role: "user", content: `m${i}` }], Date.now()),
      ),
    );
    state.close();
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

await main();
