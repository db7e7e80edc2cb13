/**
 * Storage benchmark (not a test): prints one JSON line per figure,
 * `{"bench": name, "p50_ms": …, "p90_ms": …, "p99_ms": …, "n": …}`. Run from the root with
 * `pnpm bench:storage` after `pnpm --filter @mediagate/gateway build`.
 * Env: MEDIAGATE_BENCH_DIR (default the OS temp dir): where the databases are made;
 * MEDIAGATE_BENCH_POSTGRES_URL (optional): a PostgreSQL server (its `postgres` database) on
 * which the `*_postgres` figures make a database of their own and drop it afterwards.
 *
 * `*_worker` figures go through the worker thread (what the gateway does); `*_main_thread`
 * run the same synchronous code on the calling thread, as the state database did before it
 * moved off the event loop.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type InboundMessage,
  type Journal,
  journalDbPath,
  PostgresJournal,
  SqliteJournal,
  SqliteStateStore,
  type StateStore,
  stateDbPath,
} from "@mediagate/gateway";
// The synchronous engines are internal to the gateway; the bench reaches into its build.
import { JournalDatabase } from "../apps/gateway/dist/durable/journal-database.js";
import { PostgresDatabase } from "../apps/gateway/dist/postgres/database.js";
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

/**
 * One message's whole life in the journal, as the gateway lives it: recorded and synced (before
 * it is confirmed), started, answered into the outbox, one delivery attempt of one step, closed.
 */
async function cycle(journal: Journal, receiptId: string, chatId = "100"): Promise<void> {
  const { id } = await journal.record({ ...message(receiptId), chatId });
  await journal.sync();
  await journal.started(id);
  const reply = await journal.addReply(
    {
      profile: "bench",
      platform: "telegram",
      sessionKey: "agent:bench:telegram:dm:100",
      slot: "profile:bench",
      target: { platform: "telegram", chatId: "100" },
      text: "a reply of ordinary length",
    },
    id,
  );
  await journal.attempt(reply.id);
  await journal.step(reply.id, "text:0", "sent");
  await journal.closeReply(reply.id, "delivered");
}

/** Runs `work` for `n` messages, `chats` chats at a time, each chat's one after another. */
async function inChats(
  chats: number,
  n: number,
  work: (i: number, chatId: string) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: chats }, async (_, chat) => {
      while (next < n) await work(next++, String(chat));
    }),
  );
}

/**
 * Process CPU (all threads) per message of 3,000 {@link cycle}s, 16 chats at a time as the
 * gateway's turns run: `{"bench": name, "chats": 16, "cpu_ms_per_msg": …, "n": …}`. The calls
 * made while the journal's thread is busy reach it together and share one commit
 * (sqlite/grouped-commits.ts).
 */
async function cyclesCpu(bench: string, journal: Journal): Promise<void> {
  const n = 3_000;
  const chats = 16;
  await inChats(chats, 300, (i, chat) => cycle(journal, `${bench}-warm-${i}`, chat));
  const before = process.cpuUsage();
  await inChats(chats, n, (i, chat) => cycle(journal, `${bench}-${i}`, chat));
  const used = process.cpuUsage(before);
  const cpuMs = (used.user + used.system) / 1000 / n;
  const line = { bench, chats, cpu_ms_per_msg: Math.round(cpuMs * 1000) / 1000, n };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/**
 * One text-only turn's calls on the state database, the ones the `openai` agent makes: the
 * session id on arrival; the session's model and its conversation when the turn starts; the
 * model call's usage and the two new messages when it ends, the two of each phase made
 * together, as the agent makes them (one message to the thread each).
 */
async function turn(store: StateStore, chatId: string, i: number): Promise<void> {
  const sessionKey = `agent:bench:telegram:dm:${chatId}`;
  const sessionId = await store.currentSessionId(sessionKey);
  await Promise.all([store.sessionModel(sessionKey), store.loadConversation(sessionId)]);
  await Promise.all([
    store.recordUsage({
      sessionKey,
      sessionId,
      model: "bench",
      inputTokens: 120,
      outputTokens: 12,
      cachedTokens: 0,
      cost: 0,
    }),
    store.appendHistory(sessionId, [
      { role: "user", content: `a message of ordinary length ${i}` },
      { role: "assistant", content: "a reply of ordinary length" },
    ]),
  ]);
}

/**
 * Process CPU (all threads) per turn of 3,000 {@link turn}s, 16 chats at a time:
 * `{"bench": "state_turns_cpu_worker", "chats": 16, "cpu_ms_per_msg": …, "n": …}`. Each chat
 * keeps its history short (cleared every 20 turns), as compaction keeps a conversation's.
 */
async function turnsCpu(store: StateStore): Promise<void> {
  const n = 3_000;
  const chats = 16;
  const run = async (i: number, chat: string): Promise<void> => {
    await turn(store, chat, i);
    if (i % 20 === 19)
      await store.clearHistory(await store.currentSessionId(`agent:bench:telegram:dm:${chat}`));
  };
  await inChats(chats, 300, run);
  const before = process.cpuUsage();
  await inChats(chats, n, run);
  const used = process.cpuUsage(before);
  const cpuMs = (used.user + used.system) / 1000 / n;
  const line = {
    bench: "state_turns_cpu_worker",
    chats,
    cpu_ms_per_msg: Math.round(cpuMs * 1000) / 1000,
    n,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/**
 * Process CPU per turn of a conversation `messages` long (16 chats at once, 20 turns each; a
 * turn reads the conversation and appends its two messages, as the `openai` agent's does),
 * with the store's conversation cache (state/conversation-cache.ts) on and off, in one run:
 * `{"bench": "state_conversation_turns_cpu_worker", "messages": …, "cache": "on" | "off",
 * "cpu_ms_per_turn": …, "n": 320}`. Off reads every conversation whole, as before the cache.
 */
async function conversationTurnsCpu(home: string, messages: number): Promise<void> {
  const chats = 16;
  const turns = 20;
  for (const cache of ["off", "on"] as const) {
    const store = await SqliteStateStore.open(
      stateDbPath(join(home, `conversations-${messages}-${cache}`)),
      cache === "off" ? { conversationCacheChars: 0 } : {},
    );
    const sessions = await Promise.all(
      Array.from({ length: chats }, (_, chat) => store.currentSessionId(`bench:${chat}`)),
    );
    for (const sessionId of sessions) {
      for (let done = 0; done < messages; done += 200) {
        await store.appendHistory(
          sessionId,
          Array.from({ length: Math.min(200, messages - done) }, (_, i) =>
            i % 2 === 0
              ? { role: "user" as const, content: `a message of ordinary length ${done + i}` }
              : {
                  role: "assistant" as const,
                  content: "a reply of ordinary length, a little longer",
                },
          ),
        );
      }
    }
    const turn = async (sessionId: string, i: number) => {
      await store.loadConversation(sessionId);
      await store.appendHistory(sessionId, [
        { role: "user", content: `a message of ordinary length ${i}` },
        { role: "assistant", content: "a reply of ordinary length, a little longer" },
      ]);
    };
    // The first turn of each reads it whole, as a gateway's first turn after it starts.
    await Promise.all(sessions.map((sessionId) => turn(sessionId, -1)));
    const before = process.cpuUsage();
    await Promise.all(
      sessions.map(async (sessionId) => {
        for (let i = 0; i < turns; i++) await turn(sessionId, i);
      }),
    );
    const used = process.cpuUsage(before);
    const n = chats * turns;
    const line = {
      bench: "state_conversation_turns_cpu_worker",
      messages,
      cache,
      cpu_ms_per_turn: Math.round(((used.user + used.system) / 1000 / n) * 1000) / 1000,
      n,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    await store.close();
  }
}

/**
 * Records per second with `chats` chats recording at once (each chat's messages one after
 * another, as a channel hands them on): `{"bench": name, "chats": …, "per_s": …, "n": …}`.
 */
async function concurrent(bench: string, journal: Journal, chats: number): Promise<void> {
  const n = 1_000;
  const started = performance.now();
  await inChats(chats, n, (i, chatId) =>
    journal.record({ ...message(`${bench}-${chats}-${i}`), chatId }),
  );
  const perSecond = Math.round(n / ((performance.now() - started) / 1_000));
  process.stdout.write(`${JSON.stringify({ bench, chats, per_s: perSecond, n })}\n`);
}

/** The `*_postgres` figures, on a database of their own on `adminUrl`'s server. */
async function postgresFigures(adminUrl: string): Promise<void> {
  const name = `mg_bench_${randomBytes(5).toString("hex")}`;
  const admin = new PostgresDatabase({ url: adminUrl, maxConnections: 1 });
  await admin.query("bench", `CREATE DATABASE "${name}"`);
  try {
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const database = new PostgresDatabase({ url: url.toString() });
    try {
      const journal = await PostgresJournal.open(database);
      report("journal_record_postgres", await time((i) => journal.record(message(`p${i}`))));
      report("journal_cycle_postgres", await time((i) => cycle(journal, `pc${i}`)));
      for (const chats of [10, 50]) await concurrent("journal_records_postgres", journal, chats);
      await journal.close();
    } finally {
      await database.close();
    }
  } finally {
    await admin.query("bench", `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.close();
  }
}

async function main(): Promise<void> {
  const home = await mkdtemp(join(process.env.MEDIAGATE_BENCH_DIR ?? tmpdir(), "mg-bench-db-"));
  try {
    const journal = await SqliteJournal.open(journalDbPath(join(home, "worker")));
    report("journal_record_worker", await time((i) => journal.record(message(`w${i}`))));
    report("journal_cycle_worker", await time((i) => cycle(journal, `wc${i}`)));
    for (const chats of [10, 50]) await concurrent("journal_records_worker", journal, chats);
    await cyclesCpu("journal_cycles_cpu_worker", journal);
    await journal.close();
    const postgresUrl = process.env.MEDIAGATE_BENCH_POSTGRES_URL;
    if (postgresUrl !== undefined && postgresUrl !== "") await postgresFigures(postgresUrl);

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
    const turns = await SqliteStateStore.open(stateDbPath(join(home, "turns")));
    await turnsCpu(turns);
    await turns.close();
    for (const messages of [20, 200, 2_000]) await conversationTurnsCpu(home, messages);

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
