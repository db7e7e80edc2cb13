import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { PostgresDatabase } from "./database.js";
import { PostgresSchemaError, PostgresStoreError, postgresWhere } from "./errors.js";
import { migratePostgres, postgresSchemaVersion } from "./migrate.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("foundation");
});
afterAll(async () => {
  await testDatabase?.drop();
});

/** A ping of the suite's own (writable) database. */
async function testPing(): Promise<number> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  try {
    return await database.ping();
  } finally {
    await database.close();
  }
}

const Steps = [
  { version: 1, sql: "CREATE TABLE ran (step integer NOT NULL); INSERT INTO ran VALUES (1)" },
  { version: 2, sql: "INSERT INTO ran VALUES (2)" },
];

describe("PostgreSQL migrations", () => {
  it("run once when two processes start at once, and record the version", async () => {
    const a = new PostgresDatabase({ url: testDatabase.url });
    const b = new PostgresDatabase({ url: testDatabase.url });
    try {
      const results = await Promise.all([
        migratePostgres(a, "component", Steps),
        migratePostgres(b, "component", Steps),
      ]);
      expect(results.map((r) => r.to)).toEqual([2, 2]);
      expect(results.map((r) => r.from).sort()).toEqual([0, 2]);
      const ran = await a.query<{ step: number }>("read", "SELECT step FROM ran ORDER BY step");
      expect(ran.rows.map((r) => r.step)).toEqual([1, 2]);
      expect(await postgresSchemaVersion(a, "component")).toBe(2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("refuse a database newer than the code with a line that says what to do, changing nothing", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url });
    try {
      const failure = await migratePostgres(database, "component", Steps.slice(0, 1)).catch(
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(PostgresSchemaError);
      expect((failure as PostgresSchemaError).code).toBe("MG_POSTGRES_SCHEMA_NEWER");
      expect((failure as Error).message).toMatch(
        /version 2, newer than this mediagate supports \(1\); upgrade mediagate/,
      );
      expect(await postgresSchemaVersion(database, "component")).toBe(2);
    } finally {
      await database.close();
    }
  });

  it("leave the previous version when a step fails", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url });
    try {
      const failing = [
        ...Steps,
        { version: 3, sql: "INSERT INTO ran VALUES (3); SELECT * FROM no_such_table" },
      ];
      await expect(migratePostgres(database, "component", failing)).rejects.toThrow(
        /no_such_table/,
      );
      expect(await postgresSchemaVersion(database, "component")).toBe(2);
      const ran = await database.query("read", "SELECT step FROM ran WHERE step = 3");
      expect(ran.rowCount).toBe(0);
    } finally {
      await database.close();
    }
  });
});

describe("PostgresDatabase", () => {
  it("cancels a query that outlives the statement timeout, and goes on serving", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url, statementTimeoutMs: 50 });
    try {
      const failure = await database.query("sleep", "SELECT pg_sleep(5)").catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(PostgresStoreError);
      expect((failure as PostgresStoreError).code).toBe("MG_POSTGRES_FAILED");
      expect((failure as Error).message).toMatch(
        /sleep failed: canceling statement due to statement timeout/,
      );
      expect((await database.query<{ one: number }>("one", "SELECT 1 AS one")).rows[0]?.one).toBe(
        1,
      );
    } finally {
      await database.close();
    }
  });

  it("says a server that is not there is unreachable, naming it without its password", async () => {
    const database = new PostgresDatabase({
      url: "postgres://someone:hunter2-secret@127.0.0.1:1/nothing",
      connectTimeoutMs: 1_000,
    });
    try {
      const failure = await database.query("record", "SELECT 1").catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(PostgresStoreError);
      expect((failure as PostgresStoreError).code).toBe("MG_POSTGRES_UNREACHABLE");
      expect((failure as Error).message).toMatch(
        /^PostgreSQL 127\.0\.0\.1:1\/nothing: record failed: the server is not reachable/,
      );
      expect((failure as Error).message).not.toContain("hunter2");
    } finally {
      await database.close();
    }
  });

  it("counts a server that takes no writes as unreachable, saying to point store.url at the primary", async () => {
    // A standby, or a primary demoted in a failover: reads work, every write is refused.
    const readOnly = await freshPostgresDatabase("read_only");
    const setup = new PostgresDatabase({ url: readOnly.url });
    await setup.query("setup", "CREATE TABLE kept (n integer)");
    await setup.query(
      "setup",
      `ALTER DATABASE "${readOnly.name}" SET default_transaction_read_only = on`,
    );
    await setup.close();
    const database = new PostgresDatabase({ url: readOnly.url });
    try {
      expect((await database.query("read", "SELECT n FROM kept")).rowCount).toBe(0);
      const failure = await database
        .query("record", "INSERT INTO kept VALUES (1)")
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(PostgresStoreError);
      expect((failure as PostgresStoreError).code).toBe("MG_POSTGRES_UNREACHABLE");
      expect((failure as Error).message).toMatch(
        /record failed: the server takes no writes \(.*read-only transaction\): a standby, or a primary being failed over; check that store\.url points at the primary$/,
      );
      // The probe of kept turns and the health endpoint do not take it for a server that is back.
      const ping = await database.ping().catch((e: unknown) => e);
      expect(ping).toBeInstanceOf(PostgresStoreError);
      expect((ping as PostgresStoreError).unreachable).toBe(true);
      expect((ping as Error).message).toMatch(/ping failed: the server takes no writes/);
      expect(await testPing()).toBeGreaterThanOrEqual(0);
    } finally {
      await database.close();
      await readOnly.drop();
    }
  });

  it("rolls a transaction back when its work throws", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url });
    try {
      await database.query("create", "CREATE TABLE tx_probe (n integer)");
      await expect(
        database.transaction("write", async (tx) => {
          await tx.query("INSERT INTO tx_probe VALUES (1)");
          throw new Error("work failed");
        }),
      ).rejects.toThrow(/write failed: work failed/);
      expect((await database.query("count", "SELECT * FROM tx_probe")).rowCount).toBe(0);
    } finally {
      await database.close();
    }
  });

  it("opens a session of its own that keeps its state until it is ended", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url });
    const session = await database.session("hold");
    try {
      await session.query("SELECT pg_advisory_lock(4242)");
      const probe = () =>
        database.transaction("probe", (tx) =>
          tx.query<{ free: boolean }>("SELECT pg_try_advisory_xact_lock(4242) AS free"),
        );
      expect((await probe()).rows[0]?.free).toBe(false);
      await session.end();
      expect((await probe()).rows[0]?.free).toBe(true);
    } finally {
      await session.end().catch(() => {});
      await database.close();
    }
  });

  it("says a session to a server that is not there is unreachable", async () => {
    const database = new PostgresDatabase({
      url: "postgres://someone@127.0.0.1:1/nothing",
      connectTimeoutMs: 1_000,
    });
    const failure = await database.session("owner lock").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PostgresStoreError);
    expect((failure as PostgresStoreError).unreachable).toBe(true);
    expect((failure as Error).message).toMatch(/owner lock failed: the server is not reachable/);
    await database.close();
  });

  it("names where a URL points without its credentials", () => {
    expect(postgresWhere("postgres://u:p@db.example:6543/mg?sslmode=require")).toBe(
      "db.example:6543/mg",
    );
    expect(postgresWhere("postgresql://u@localhost/")).toBe("localhost:5432/postgres");
    expect(postgresWhere("not a url")).toBe("an unparsable URL");
  });
});
