import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { PostgresStoreError } from "../postgres/errors.js";
import { postgresSchemaVersion } from "../postgres/migrate.js";
import { PostgresStateMigrations } from "../state/postgres-schema.js";
import { openStoreBackend } from "./stores.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("stores");
});
afterAll(async () => {
  await testDatabase?.drop();
});

const twoProfiles = (home: string, store?: unknown) =>
  resolveConfig(
    {
      home,
      profiles: [
        { name: "default", telegram: { token: "1:main-token" } },
        { name: "work", telegram: { token: "2:work-token" } },
      ],
      ...(store ? { store } : {}),
    },
    { env: emptyEnv(home) },
  );

describe("openStoreBackend", () => {
  it("opens each profile's state in its home's SQLite file by default", async () => {
    const home = await tempDirForTest("mg-stores-");
    const config = twoProfiles(home);
    const stores = await openStoreBackend(config.store);
    expect(stores.kind).toBe("sqlite");
    const work = config.profiles[1]!;
    const state = await stores.openState(work);
    await state.currentSessionId("k");
    await state.close();
    await stores.close();
    expect(existsSync(join(work.home, "state.db"))).toBe(true);
  });

  it("keeps every profile's state in one PostgreSQL database, migrated at open", async () => {
    const home = await tempDirForTest("mg-stores-");
    const config = twoProfiles(home, { kind: "postgres", url: testDatabase.url });
    const stores = await openStoreBackend(config.store);
    try {
      expect(stores.kind).toBe("postgres");
      expect(await postgresSchemaVersion(stores.database!, "state")).toBe(
        PostgresStateMigrations.at(-1)?.version,
      );
      const [main, work] = await Promise.all(config.profiles.map((p) => stores.openState(p)));
      const id = await work!.currentSessionId("k");
      expect(await main!.currentSessionId("k")).not.toBe(id);
      const rows = await stores.database!.query<{ profile: string }>(
        "read",
        "SELECT profile FROM state_sessions ORDER BY profile",
      );
      expect(rows.rows.map((r) => r.profile)).toEqual(["default", "work"]);
      expect(existsSync(join(config.profiles[1]!.home, "state.db"))).toBe(false);
    } finally {
      await stores.close();
    }
  });

  it("opens the journal in the same PostgreSQL database, recording before anything is confirmed", async () => {
    const home = await tempDirForTest("mg-stores-");
    const config = twoProfiles(home, { kind: "postgres", url: testDatabase.url });
    const stores = await openStoreBackend(config.store);
    try {
      const journal = await stores.openJournal(home);
      const message = {
        profile: "default",
        platform: "telegram" as const,
        chatId: "7",
        chatType: "dm" as const,
        userId: "7",
        messageId: "1",
        receiptId: "update-1",
        text: "hello",
      };
      expect((await journal.record(message)).fresh).toBe(true);
      expect((await journal.record(message)).fresh).toBe(false);
      await journal.close();
      const rows = await stores.database!.query<{ n: string }>(
        "read",
        "SELECT count(*) AS n FROM journal.entries",
      );
      expect(rows.rows[0]?.n).toBe("1");
      expect(existsSync(join(home, "journal.db"))).toBe(false);
    } finally {
      await stores.close();
    }
  });

  it("fails to open on a server that is not there, naming where without credentials", async () => {
    const port = await closedPort();
    const error = await openStoreBackend({
      kind: "postgres",
      url: `postgres://mg:pw-secret@127.0.0.1:${port}/mg`,
      connectTimeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(String(error)).toContain(`127.0.0.1:${port}/mg`);
    expect(String(error)).toMatch(/not reachable.*check that it runs/);
    expect(String(error)).not.toContain("pw-secret");
  });
});
