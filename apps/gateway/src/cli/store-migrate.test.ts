import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { PostgresDatabase } from "../postgres/database.js";
import { Redactor } from "../redact.js";
import { PostgresStateStore } from "../state/postgres-store.js";
import type { StateStore } from "../state/state-store.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { usageDays } from "../state/usage.js";
import { migrateStore, StoreMigrateError } from "./store-migrate.js";

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
    const run = async () => {
      const lines: string[] = [];
      const code = await migrateStore(
        {
          config: file,
          env: emptyEnv(),
          redactor: new Redactor(),
          from: "sqlite",
          to: testDatabase.url,
        },
        (line) => lines.push(line),
      );
      return { code, lines };
    };

    for (const attempt of [1, 2]) {
      const { code, lines } = await run();
      expect(code, `run ${attempt}`).toBe(0);
      expect(lines[0]).toMatch(
        /^profile default: moved 1 session\(s\), 3 message\(s\), 1 summary, 1 approval\(s\), 2 pairing record\(s\), 1 usage record\(s\), 1 model pick\(s\) from /,
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

  it("says the journal was not moved, exiting 1, while this build has no PostgreSQL journal", async () => {
    const file = await install();
    const config = await loadConfig({ path: file, env: emptyEnv() });
    await (await SqliteJournal.open(journalDbPath(config.home))).close();
    const other = await freshPostgresDatabase("migrate_journal");
    try {
      const lines: string[] = [];
      const code = await migrateStore(
        { config: file, env: emptyEnv(), redactor: new Redactor(), from: "sqlite", to: other.url },
        (line) => lines.push(line),
      );
      expect(code).toBe(1);
      expect(lines.at(-1)).toMatch(
        /^journal: not moved: this build has no PostgreSQL journal yet; .*journal\.db keeps the queued messages/,
      );
    } finally {
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
      await expect(
        migrateStore(
          {
            config: file,
            env: emptyEnv(),
            redactor: new Redactor(),
            from: "sqlite",
            to: other.url,
          },
          () => {},
        ),
      ).rejects.toThrow(/a gateway is connected to PostgreSQL .*; stop it, then run this again/);
      await pg.close();
      await gateway.close();
      const options = {
        config: file,
        env: emptyEnv(),
        redactor: new Redactor(),
        from: "sqlite",
        to: other.url,
      };
      await expect(migrateStore(options, () => {})).rejects.toThrow(
        /profile default: PostgreSQL .* holds state written at .*after the newest of .*--replace/,
      );
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
});
