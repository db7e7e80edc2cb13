import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { PostgresDatabase } from "../postgres/database.js";
import { PostgresStateMigrations } from "../state/postgres-schema.js";
import { migratePostgresState } from "../state/postgres-store.js";
import { probeStore } from "./store-probe.js";

/** The state schema this build migrates to. */
const Latest = PostgresStateMigrations.at(-1)?.version ?? 0;

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("doctor");
});
afterAll(async () => {
  await testDatabase?.drop();
});

const probe = (url: string) => probeStore({ kind: "postgres", url }, 2_000);

describe("doctor's store check", () => {
  it("passes SQLite, naming its files", async () => {
    expect(await probeStore({ kind: "sqlite" }, 2_000)).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/journal\.db.*state\.db/),
    });
  });

  it("shows a reachable PostgreSQL's round trip and schema, before and after the first start", async () => {
    const before = await probe(testDatabase.url);
    expect(before.ok).toBe(true);
    expect(before.detail).toMatch(
      /^PostgreSQL 127\.0\.0\.1:\d+\/mg_doctor_\w+ reachable, round trip [\d.]+ ms, no mediagate tables yet/,
    );
    const database = new PostgresDatabase({ url: testDatabase.url });
    try {
      await migratePostgresState(database);
      expect((await probe(testDatabase.url)).detail).toMatch(
        new RegExp(`, state schema v${Latest}$`),
      );
      await database.query(
        "bump",
        "UPDATE mediagate_schema SET version = 42 WHERE component = 'state'",
      );
      const newer = await probe(testDatabase.url);
      expect(newer).toMatchObject({ ok: false, fix: expect.stringMatching(/upgrade mediagate/) });
      expect(newer.detail).toMatch(
        new RegExp(
          `state schema is at version 42, newer than this mediagate knows \\(${Latest}\\)`,
        ),
      );
    } finally {
      await database.query(
        "restore",
        "UPDATE mediagate_schema SET version = $1 WHERE component = 'state'",
        [Latest],
      );
      await database.close();
    }
  });

  it("says how to start a server that is not there, without the password", async () => {
    const port = await closedPort();
    const result = await probe(`postgres://mg:hunter2-pw@127.0.0.1:${port}/mg`);
    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(
      new RegExp(`^PostgreSQL 127\\.0\\.0\\.1:${port}/mg: not reachable`),
    );
    expect(result.fix).toMatch(/start PostgreSQL .*store\.url's host and port/);
    expect(`${result.detail} ${result.fix}`).not.toContain("hunter2-pw");
  });

  it("says to point store.url at the primary when the server takes no writes", async () => {
    const standby = await freshPostgresDatabase("doctor_standby");
    try {
      const setup = new PostgresDatabase({ url: standby.url });
      await setup.query(
        "setup",
        `ALTER DATABASE "${standby.name}" SET default_transaction_read_only = on`,
      );
      await setup.close();
      const result = await probe(standby.url);
      expect(result.ok).toBe(false);
      expect(result.detail).toMatch(
        /^PostgreSQL 127\.0\.0\.1:\d+\/mg_doctor_standby_\w+: reachable, but takes no writes/,
      );
      expect(result.fix).toMatch(/^point store\.url at the primary/);
    } finally {
      await standby.drop();
    }
  });

  it("says to create a database that does not exist", async () => {
    const url = new URL(testDatabase.url);
    url.pathname = "/mg_no_such_database";
    const result = await probe(url.toString());
    expect(result).toMatchObject({ ok: false, fix: expect.stringMatching(/^create the database/) });
    expect(result.detail).toMatch(/database "mg_no_such_database" does not exist/);
  });
});
