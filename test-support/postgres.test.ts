import { existsSync } from "node:fs";
import { dirname } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { controlPostgres, freshPostgresDatabase, startPrivatePostgres } from "./postgres.js";

describe("the test run's PostgreSQL cluster", () => {
  it("makes an empty database of a test's own, and drops it with its open connections", async () => {
    const database = await freshPostgresDatabase("support");
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    client.on("error", () => {});
    const { rows } = await client.query<{ name: string; tables: string }>(
      "SELECT current_database() AS name, (SELECT count(*) FROM pg_tables WHERE schemaname = 'public') AS tables",
    );
    expect(rows[0]).toEqual({ name: database.name, tables: "0" });

    await database.drop();
    const admin = new pg.Client({ connectionString: process.env.MEDIAGATE_TEST_POSTGRES_URL });
    await admin.connect();
    const left = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [database.name]);
    await admin.end();
    expect(left.rowCount).toBe(0);
    await client.end().catch(() => {});
  });

  it("starts a private cluster that a stop and a start bring back on its port, and removes it", async () => {
    const cluster = startPrivatePostgres();
    const answer = async () => {
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      try {
        return (await client.query<{ one: number }>("SELECT 1 AS one")).rows[0]?.one;
      } finally {
        await client.end();
      }
    };
    try {
      expect(cluster.url).not.toBe(process.env.MEDIAGATE_TEST_POSTGRES_URL);
      expect(await answer()).toBe(1);
      controlPostgres("stop", "fast", cluster);
      await expect(answer()).rejects.toThrow(/ECONNREFUSED/);
      controlPostgres("start", "fast", cluster);
      expect(await answer()).toBe(1);
    } finally {
      cluster.remove();
    }
    expect(existsSync(dirname(cluster.data))).toBe(false);
  });
});
