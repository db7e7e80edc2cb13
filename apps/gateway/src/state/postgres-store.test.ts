import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { PostgresDatabase } from "../postgres/database.js";
import { PostgresSchemaError, PostgresStoreError } from "../postgres/errors.js";
import { postgresSchemaVersion } from "../postgres/migrate.js";
import { PostgresStateMigrations, StateComponent } from "./postgres-schema.js";
import { PostgresStateStore } from "./postgres-store.js";

let testDatabase: TestDatabase;
const pools: PostgresDatabase[] = [];

function pool(url = testDatabase.url): PostgresDatabase {
  const created = new PostgresDatabase({ url, connectTimeoutMs: 2_000 });
  pools.push(created);
  return created;
}

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pgstate");
});
afterEach(async () => {
  for (const created of pools.splice(0)) await created.close();
});
afterAll(async () => {
  await testDatabase?.drop();
});

describe("PostgresStateStore", () => {
  it("migrates the state tables to the SQLite schema's version, once for two processes", async () => {
    const [a, b] = await Promise.all([
      PostgresStateStore.open(pool(), "work"),
      PostgresStateStore.open(pool(), "home"),
    ]);
    expect(await postgresSchemaVersion(pool(), StateComponent)).toBe(
      PostgresStateMigrations.at(-1)?.version,
    );
    await Promise.all([a.close(), b.close()]);
  });

  it("keeps the profiles of one database apart", async () => {
    const database = pool();
    const work = await PostgresStateStore.open(database, "iso-work");
    const home = await PostgresStateStore.open(database, "iso-home");
    const key = "agent:x:telegram:dm:1";
    const workId = await work.currentSessionId(key);
    expect(await home.currentSessionId(key)).not.toBe(workId);
    await work.appendHistory(workId, [{ role: "user", content: "work only" }]);
    expect(await home.loadHistory(workId)).toEqual([]);
    const limits = { codeTtlMs: 60_000, maxPending: 1 };
    expect((await work.requestPairing({ user: "telegram:1", chatId: "1" }, limits)).status).toBe(
      "issued",
    );
    expect((await home.requestPairing({ user: "telegram:2", chatId: "2" }, limits)).status).toBe(
      "issued",
    );
    expect((await home.listPairing()).pending.map((p) => p.user)).toEqual(["telegram:2"]);
  });

  it("never issues more than maxPending codes when several processes ask at once", async () => {
    const stores = await Promise.all(
      [1, 2, 3].map(() => PostgresStateStore.open(pool(), "race-pairing")),
    );
    const limits = { codeTtlMs: 60_000, maxPending: 2 };
    const results = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        stores[i % 3]!.requestPairing({ user: `telegram:${i}`, chatId: `${i}` }, limits),
      ),
    );
    expect(results.filter((r) => r.status === "issued")).toHaveLength(2);
    expect((await stores[0]!.listPairing()).pending).toHaveLength(2);
  });

  it("lets one of two compactions made from the same summary win", async () => {
    const [a, b] = await Promise.all([
      PostgresStateStore.open(pool(), "race-summary"),
      PostgresStateStore.open(pool(), "race-summary"),
    ]);
    await a.appendHistory("s", [
      { role: "user", content: "1" },
      { role: "assistant", content: "2" },
    ]);
    const ids = (await a.loadConversation("s")).messages.map((m) => m.id);
    const saved = await Promise.all([
      a.saveSummary("s", { content: "a", throughId: ids[0]!, baseThroughId: undefined }),
      b.saveSummary("s", { content: "b", throughId: ids[1]!, baseThroughId: undefined }),
    ]);
    expect(saved.filter(Boolean)).toHaveLength(1);
  });

  it("stores what PostgreSQL text cannot hold raw (NUL) inside a message, unchanged", async () => {
    const store = await PostgresStateStore.open(pool(), "nul");
    const message = { role: "user" as const, content: "a\u0000b ✓ \ud83d\ude00" };
    await store.appendHistory("s", [message]);
    expect(await store.loadHistory("s")).toEqual([message]);
  });

  it("refuses a database whose state schema is newer and changes nothing", async () => {
    const other = await freshPostgresDatabase("pgnewer");
    try {
      const database = pool(other.url);
      await (await PostgresStateStore.open(database, "p")).close();
      await database.query(
        "bump",
        "UPDATE mediagate_schema SET version = 99 WHERE component = $1",
        [StateComponent],
      );
      const error = await PostgresStateStore.open(database, "p").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PostgresSchemaError);
      expect(String(error)).toMatch(/state schema is at version 99.*upgrade mediagate/);
      expect(await postgresSchemaVersion(database, StateComponent)).toBe(99);
    } finally {
      await other.drop();
    }
  });

  it("fails a call on a server that is not there as unreachable, naming no credentials", async () => {
    const port = await closedPort();
    const database = pool(`postgres://mg:secret-pw@127.0.0.1:${port}/state`);
    const store = PostgresStateStore.attach(database, "p");
    const error = await store.currentSessionId("k").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error).toMatchObject({ code: "MG_POSTGRES_UNREACHABLE", unreachable: true });
    expect(String(error)).not.toMatch(/secret-pw/);
  });
});
