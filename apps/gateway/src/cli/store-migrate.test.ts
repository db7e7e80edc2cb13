import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Sleep, sleep } from "@mediagate/io";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { emptyEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { PostgresDatabase } from "../postgres/database.js";
import { Redactor } from "../redact.js";
import { PostgresStateStore } from "../state/postgres-store.js";
import type { StateStore } from "../state/state-store.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { usageDays } from "../state/usage.js";
import { ConnectedGatewayLooks, migrateStore, StoreMigrateError } from "./store-migrate.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("migrate");
});
afterAll(async () => {
  await testDatabase?.drop();
});

const nowMs = Date.UTC(2026, 5, 1, 12);
const limits = { codeTtlMs: 3_600_000, maxPending: 5 };

async function install(): Promise<string> {
  const home = await tempDirForTest("mg-migrate-");
  const file = join(home, "mediagate.yaml");
  await writeFile(
    file,
    `home: ${home}\nprofiles:\n  - name: default\n    telegram: { token: "1:a-token" }\n  - name: work\n    telegram: { token: "2:b-token" }\n`,
  );
  return file;
}

/** Fills a profile's SQLite state with one of everything; returns what to compare. */
async function fill(store: StateStore, label: string) {
  const sessionId = await store.currentSessionId(`agent:${label}:telegram:dm:1`);
  await store.appendHistory(sessionId, [
    { role: "user", content: `${label} 1` },
    { role: "assistant", content: "a 1" },
    { role: "user", content: `${label} 2` },
  ]);
  const first = (await store.loadConversation(sessionId)).messages[1]!.id;
  await store.saveSummary(sessionId, {
    content: `${label} so far`,
    throughId: first,
    baseThroughId: undefined,
  });
  await store.addApproval(
    {
      id: `ap-${label}`,
      sessionKey: "k",
      sessionId,
      platform: "telegram",
      chatId: "1",
      requester: "telegram:1",
      approvers: "sender",
      action: "$ ls",
      reason: "always",
      waiter: "w",
      createdMs: nowMs,
      expiresMs: nowMs + 60_000,
      status: "pending",
    },
    10,
    60_000,
  );
  const code = await store.requestPairing({ user: "telegram:7", chatId: "7" }, limits);
  if (code.status !== "issued") throw new Error(code.status);
  await store.approvePairing(code.code, "cli");
  await store.requestPairing({ user: "telegram:8", userName: "eve", chatId: "8" }, limits);
  await store.recordUsage({
    sessionKey: "k",
    sessionId,
    user: "telegram:1",
    model: "small",
    inputTokens: 10,
    outputTokens: 2,
    cachedTokens: 0,
    cost: 0.5,
  });
  await store.setSessionModel("k", "large");
  const task = {
    owner: "telegram:1",
    timing: { kind: "every", everyMs: 3_600_000 },
    timezone: "Europe/Berlin",
    text: `${label} report`,
    chat: { platform: "telegram", chatId: "1", chatType: "dm" },
    catchUp: "once",
    nextDueMs: nowMs + 60_000,
  } as const;
  await store.tasks.addTask({ ...task, id: `t-${label}` }, { maxPerUser: 5, maxPerProfile: 5 });
  await store.tasks.addTask(
    { ...task, id: `paused-${label}`, timing: { kind: "cron", pattern: "0 9 * * 1" } },
    { maxPerUser: 5, maxPerProfile: 5 },
  );
  await store.tasks.setPaused(`paused-${label}`, true, nowMs);
  await store.tasks.advanceTask(
    {
      id: `t-${label}`,
      fromDueMs: nowMs + 60_000,
      nextDueMs: nowMs + 3_660_000,
      run: { taskId: `t-${label}`, dueMs: nowMs + 60_000, outcome: "done", atMs: nowMs + 61_000 },
    },
    0,
  );
  await store.tasks.recordRun({
    taskId: `t-${label}`,
    dueMs: nowMs + 3_660_000,
    outcome: "running",
    atMs: nowMs + 3_661_000,
    detail: "started",
  });
  await store.tasks.syncOperatorTasks([
    { ...task, id: `op-${label}`, owner: "operator", name: "daily", catchUp: "skip" },
  ]);
  return sessionId;
}

async function snapshot(store: StateStore, sessionKey: string) {
  const sessionId = await store.currentSessionId(sessionKey);
  const conversation = await store.loadConversation(sessionId);
  return {
    sessionId,
    summary: conversation.summary?.content,
    afterSummary: conversation.messages.map((m) => m.message),
    history: await store.loadHistory(sessionId),
    approvals: await store.recentApprovals(10),
    pairing: await store.listPairing(),
    usage: await store.usagePeriods({ kind: "profile" }, usageDays(nowMs, 7)),
    model: await store.sessionModel("k"),
    tasks: await store.tasks.listTasks(),
    runs: await store.tasks.recentRuns(`t-${sessionKey.split(":")[1]}`, 10),
    due: await store.tasks.dueTasks(nowMs + 10_000_000),
  };
}

describe("mediagate store migrate", () => {
  it("moves every profile's state into PostgreSQL, and a second run gives the same result", async () => {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    const expected: Record<string, Awaited<ReturnType<typeof snapshot>>> = {};
    for (const profile of config.profiles) {
      const store = await SqliteStateStore.open(stateDbPath(profile.home), { now: () => nowMs });
      await fill(store, profile.name);
      expected[profile.name] = await snapshot(store, `agent:${profile.name}:telegram:dm:1`);
      await store.close();
    }
    expect(expected.work!.tasks.map((t) => [t.id, t.paused, t.lastRun?.outcome])).toEqual([
      ["op-work", false, undefined],
      ["paused-work", true, undefined],
      ["t-work", false, "running"],
    ]);
    expect(expected.work!.runs).toHaveLength(2);
    // The second run as docs/store.md shows it: no --to, the config's store.url (from the
    // environment), so no password shows in the host's process list.
    const inConfig = join(config.home, "postgres.yaml");
    await writeFile(
      inConfig,
      `${await readFile(file, "utf8")}store: { kind: postgres, url: "\${DATABASE_URL}" }\n`,
    );
    const run = async (attempt: number) => {
      const lines: string[] = [];
      const code = await migrateStore(
        attempt === 1
          ? {
              config: file,
              env: emptyEnv(),
              redactor: new Redactor(),
              from: "sqlite",
              to: testDatabase.url,
            }
          : {
              config: inConfig,
              env: { ...emptyEnv(), variables: { DATABASE_URL: testDatabase.url } },
              redactor: new Redactor(),
              from: "sqlite",
            },
        (line) => lines.push(line),
      );
      return { code, lines };
    };

    for (const attempt of [1, 2]) {
      const { code, lines } = await run(attempt);
      expect(code, `run ${attempt}`).toBe(0);
      expect(lines[0]).toMatch(
        /^profile default: moved 1 session\(s\), 3 message\(s\), 1 summary, 1 approval\(s\), 2 pairing record\(s\), 1 usage record\(s\), 1 model pick\(s\), 3 scheduled task\(s\) with 2 run\(s\) from /,
      );
      expect(lines.at(-1)).toMatch(/^journal: no .*journal\.db, nothing to move$/);
      const database = new PostgresDatabase({ url: testDatabase.url });
      try {
        for (const profile of config.profiles) {
          const store = PostgresStateStore.attach(database, profile.name, { now: () => nowMs });
          expect(await snapshot(store, `agent:${profile.name}:telegram:dm:1`)).toEqual(
            expected[profile.name],
          );
        }
        const messages = await database.query("count", "SELECT 1 FROM state_messages");
        expect(messages.rowCount).toBe(6);
      } finally {
        await database.close();
      }
    }
  });

  it("moves the journal's unfinished work into PostgreSQL for the next start to take over, twice the same", async () => {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    const sqlite = await SqliteJournal.open(journalDbPath(config.home), {
      owner: "sqlite-gateway",
      now: () => nowMs,
    });
    await sqlite.record(telegramMessage("11", "queued"));
    const started = await sqlite.record(telegramMessage("12", "started"));
    await sqlite.started(started.id);
    const answered = await sqlite.record(telegramMessage("13", "answered"));
    const reply = await sqlite.addReply(
      {
        profile: "work",
        platform: "telegram",
        sessionKey: "agent:work:telegram:dm:100",
        slot: "slot-1",
        target: { platform: "telegram", chatId: "100" },
        text: "part one\0 and two",
      },
      answered.id,
    );
    const plan = {
      version: 1 as const,
      text: "part one",
      asVoice: false,
      asDocument: false,
      items: [],
    };
    await sqlite.setPlan(reply.id, plan);
    await sqlite.attempt(reply.id);
    await sqlite.step(reply.id, "text:0", "sent");
    const discord = await sqlite.record({
      ...telegramMessage("123456789012345678", "on discord"),
      platform: "discord",
      chatId: "555",
    });
    await sqlite.finished(discord.id, "refused");
    await sqlite.close();
    const other = await freshPostgresDatabase("migrate_journal");
    const database = new PostgresDatabase({ url: other.url, applicationName: "test" });
    const tables = async () => {
      const rows: Record<string, unknown[]> = {};
      for (const [table, order] of [
        ["entries", "key"],
        ["receipts", "key"],
        ["cursors", "channel_id"],
        ["replies", "id"],
        ["reply_steps", "key"],
      ] as const) {
        rows[table] = (
          await database.query("rows", `SELECT * FROM journal.${table} ORDER BY ${order}`)
        ).rows;
      }
      return rows;
    };
    const options = {
      config: file,
      env: emptyEnv(),
      redactor: new Redactor(),
      from: "sqlite",
      to: other.url,
    };
    try {
      const first: string[] = [];
      expect(await migrateStore(options, (line) => first.push(line))).toBe(0);
      expect(first.at(-1)).toMatch(
        /^journal: moved 2 unfinished message\(s\), 2 finished one\(s\), 4 receipt\(s\), 1 Discord cursor\(s\), 1 unfinished reply with 1 recorded step\(s\), 0 already in PostgreSQL from .*journal\.db$/,
      );
      const once = await tables();
      expect(once.entries).toHaveLength(4);
      expect(once.entries!.every((row) => (row as { owner: string }).owner === "released")).toBe(
        true,
      );
      const second: string[] = [];
      expect(await migrateStore(options, (line) => second.push(line))).toBe(0);
      expect(second.at(-1)).toMatch(
        /^journal: moved 0 unfinished message\(s\), 0 finished one\(s\), 0 receipt\(s\), 0 Discord cursor\(s\), 0 unfinished replies with 0 recorded step\(s\), 5 already in PostgreSQL from /,
      );
      expect(await tables()).toEqual(once);

      const journal = await PostgresJournal.open(database, {
        owner: "postgres-gateway",
        ownerGraceMs: 0,
      });
      try {
        const taken = await journal.takeOver();
        expect(taken.map((entry) => [entry.message.text, entry.state])).toEqual([
          ["queued", "received"],
          ["started", "started"],
        ]);
        const replies = await journal.takeOverReplies();
        expect(replies).toHaveLength(1);
        expect(replies[0]).toMatchObject({
          id: reply.id,
          text: "part one\0 and two",
          attempts: 1,
          owner: "postgres-gateway",
          plan,
        });
        expect([...replies[0]!.steps]).toEqual([["text:0", "sent"]]);
        expect(await journal.entryState(replies[0]!.entryId!)).toMatchObject({ state: "done" });
        // A platform offering the answered or the ignored message again is not run twice.
        expect(await journal.recorded("work", "telegram", ["13", "14"])).toEqual(["13"]);
        expect((await journal.record(telegramMessage("13", "answered"))).fresh).toBe(false);
        expect(await journal.cursors("work")).toEqual([
          { channelId: "555", lastMessageId: "123456789012345678" },
        ]);

        // Now the journal has a live owner: a third run is refused and writes nothing.
        const before = await tables();
        await expect(migrateStore(options, () => {})).rejects.toThrow(
          /journal: PostgreSQL .* holds unfinished work of the running gateway postgres-gateway; nothing was moved: stop every gateway using it/,
        );
        expect(await tables()).toEqual(before);
      } finally {
        await journal.close();
      }
    } finally {
      await database.close();
      await other.drop();
    }
  });

  it("refuses while a process has a state file open, moving nothing", async () => {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    const running = await SqliteStateStore.open(stateDbPath(config.profiles[1]!.home));
    const other = await freshPostgresDatabase("migrate_refused");
    try {
      const error = await migrateStore(
        { config: file, env: emptyEnv(), redactor: new Redactor(), from: "sqlite", to: other.url },
        () => {},
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreMigrateError);
      expect(String(error)).toMatch(
        new RegExp(
          `the gateway is running: process ${process.pid} \\(.*\\) has the databases open; stop it`,
        ),
      );
      const database = new PostgresDatabase({ url: other.url });
      const tables = await database.query("tables", "SELECT to_regclass('state_sessions') AS t");
      await database.close();
      expect(tables.rows[0]?.t).toBeNull();
    } finally {
      await running.close();
      await other.drop();
    }
  });

  it("refuses a profile whose PostgreSQL state is newer than its file unless --replace", async () => {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    const main = config.profiles[0]!;
    const store = await SqliteStateStore.open(stateDbPath(main.home), { now: () => nowMs });
    await store.currentSessionId("old-key");
    await store.close();
    const other = await freshPostgresDatabase("migrate_newer");
    // A gateway's pool (its application_name) is connected: refused, whatever the files say.
    const gateway = new PostgresDatabase({ url: other.url });
    const database = new PostgresDatabase({ url: other.url, applicationName: "test" });
    try {
      const pg = await PostgresStateStore.open(gateway, "default", { now: () => nowMs + 1_000 });
      await pg.currentSessionId("written-on-postgres");
      const options = {
        config: file,
        env: emptyEnv(),
        redactor: new Redactor(),
        from: "sqlite",
        to: other.url,
      };
      const waits: number[] = [];
      const recorded: Sleep = async (ms) => {
        waits.push(ms);
      };
      await expect(migrateStore({ ...options, sleep: recorded }, () => {})).rejects.toThrow(
        /a gateway is connected to PostgreSQL .*; stop it, then run this again/,
      );
      // It looked again before it refused, in case the gateway was just leaving.
      expect(waits).toEqual(
        Array(ConnectedGatewayLooks.attempts - 1).fill(ConnectedGatewayLooks.intervalMs),
      );
      // A gateway stopped while it looks is let go by: its connections may be listed a
      // moment after they closed, until their backends have exited.
      let stopped = false;
      const stopThenWait: Sleep = async (ms, signal) => {
        if (!stopped) {
          stopped = true;
          await pg.close();
          await gateway.close();
        }
        await sleep(ms, signal);
      };
      await expect(migrateStore({ ...options, sleep: stopThenWait }, () => {})).rejects.toThrow(
        /profile default: PostgreSQL .* holds state written at .*after the newest of .*--replace/,
      );
      expect(stopped).toBe(true);
      const kept = await database.query(
        "kept",
        "SELECT 1 FROM state_sessions WHERE session_key = 'written-on-postgres'",
      );
      expect(kept.rowCount).toBe(1);
      expect(await migrateStore({ ...options, replace: true }, () => {})).toBe(0);
      const fresh = PostgresStateStore.attach(database, "default");
      const keys = await database.query<{ session_key: string }>(
        "keys",
        "SELECT session_key FROM state_sessions WHERE profile = 'default'",
      );
      expect(keys.rows.map((r) => r.session_key)).toEqual(["old-key"]);
      await fresh.close();
    } finally {
      await gateway.close();
      await database.close();
      await other.drop();
    }
  });

  /**
   * A profile's file with one message, moved to a fresh PostgreSQL database; `since` writes
   * there a minute later, then a second move must refuse: the PostgreSQL state is newer.
   */
  async function refusedAfter(
    database: string,
    since: (pg: StateStore) => Promise<void>,
    check: (pg: StateStore) => Promise<void>,
  ): Promise<void> {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    const store = await SqliteStateStore.open(stateDbPath(config.profiles[0]!.home), {
      now: () => nowMs,
    });
    await store.appendHistory(await store.currentSessionId("k"), [{ role: "user", content: "hi" }]);
    await store.close();
    const other = await freshPostgresDatabase(database);
    const options = {
      config: file,
      env: emptyEnv(),
      redactor: new Redactor(),
      from: "sqlite",
      to: other.url,
    };
    const pool = new PostgresDatabase({ url: other.url, applicationName: "test" });
    try {
      expect(await migrateStore(options, () => {})).toBe(0);
      const pg = PostgresStateStore.attach(pool, "default", { now: () => nowMs + 60_000 });
      await since(pg);
      await expect(migrateStore(options, () => {})).rejects.toThrow(
        /profile default: PostgreSQL .* holds state written at .*after the newest of .*--replace/,
      );
      await check(pg);
      await pg.close();
    } finally {
      await pool.close();
      await other.drop();
    }
  }

  it("counts a wrong /approve on PostgreSQL (its count of wrong codes, its lock) as newer than the file", async () => {
    // The gateway ran on PostgreSQL since: an admin's wrong code locked /approve.
    const guard = { maxFailed: 1, lockMs: 900_000 };
    const lockedUntilMs = nowMs + 60_000 + guard.lockMs;
    await refusedAfter(
      "migrate_newer_guard",
      async (pg) => {
        expect(await pg.approvePairing("AAAAAAAA", "telegram:1", guard)).toMatchObject({
          lockedUntilMs,
        });
      },
      async (pg) => {
        expect((await pg.listPairing()).lockedUntilMs).toBe(lockedUntilMs);
      },
    );
  });

  it("counts a pairing or a /model pick made on PostgreSQL as newer than the file", async () => {
    // The gateway ran on PostgreSQL since: an operator paired a user, a chat picked a model.
    await refusedAfter(
      "migrate_newer_kinds",
      async (pg) => {
        const code = await pg.requestPairing({ user: "telegram:7", chatId: "7" }, limits);
        if (code.status !== "issued") throw new Error(code.status);
        await pg.approvePairing(code.code, "cli");
        await pg.setSessionModel("k", "large");
      },
      async (pg) => {
        expect((await pg.listPairing()).approved.map((p) => p.user)).toEqual(["telegram:7"]);
        expect(await pg.sessionModel("k")).toBe("large");
      },
    );
  });
});
