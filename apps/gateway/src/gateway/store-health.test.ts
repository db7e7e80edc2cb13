import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { describeStore } from "../commands/status.js";
import { overallStatus } from "../health/server.js";
import { PostgresDatabase } from "../postgres/database.js";
import type { GatewayCore } from "./core.js";
import { storeHealth } from "./health.js";
import { openStoreBackend, type StoreBackend } from "./stores.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("health");
});
afterAll(async () => {
  await testDatabase?.drop();
});

/** The parts of a gateway the store's health reads, with a clock the test moves. */
function healthParts(stores: StoreBackend) {
  let monoMs = 0;
  const parts = {
    stores,
    storeProbe: {},
    clock: { monoMs: () => monoMs, wallMs: () => 1_700_000_000_000 + monoMs },
  };
  return {
    gateway: parts as unknown as GatewayCore,
    advance: (ms: number) => {
      monoMs += ms;
    },
  };
}

describe("the store's health", () => {
  it("is absent with the SQLite files", async () => {
    const { gateway } = healthParts(await openStoreBackend({ kind: "sqlite" }));
    expect(await storeHealth(gateway)).toBeUndefined();
  });

  it("reports a PostgreSQL that answers, with its round trip and without credentials", async () => {
    const stores = await openStoreBackend({ kind: "postgres", url: testDatabase.url });
    try {
      const health = await storeHealth(healthParts(stores).gateway);
      expect(health).toMatchObject({ kind: "postgres", reachable: true });
      expect(health?.roundTripMs).toBeGreaterThanOrEqual(0);
      expect(health?.where).toBe(
        `127.0.0.1:${new URL(testDatabase.url).port}/${testDatabase.name}`,
      );
      expect(describeStore(health!)).toMatch(
        /^Store: PostgreSQL 127\.0\.0\.1:\d+\/mg_health_\w+: reachable, round trip [\d.]+ ms$/,
      );
    } finally {
      await stores.close();
    }
  });

  it("reports a server that stopped answering, since when, and degrades the status", async () => {
    const stores = await openStoreBackend({ kind: "postgres", url: testDatabase.url });
    // The pool the gateway holds, pointed at a port where nothing listens any more.
    const port = await closedPort();
    const gone = new PostgresDatabase({
      url: `postgres://u:pw-x@127.0.0.1:${port}/mg`,
      connectTimeoutMs: 2_000,
    });
    const { gateway, advance } = healthParts({ ...stores, database: gone });
    try {
      const first = await storeHealth(gateway);
      expect(first).toMatchObject({ reachable: false, downSinceMs: 1_700_000_000_000 });
      expect(first?.detail).toMatch(/not reachable/);
      advance(60_000);
      const later = await storeHealth(gateway);
      expect(later?.downSinceMs).toBe(1_700_000_000_000);
      expect(describeStore(later!, 1_700_000_060_000)).toMatch(
        /NOT reachable for 60 s \(.*\); new messages wait until it is back$/,
      );
      expect(describeStore(later!)).not.toContain("pw-x");
      expect(overallStatus([], { writable: true }, true, later?.reachable)).toBe("degraded");
    } finally {
      await gone.close();
      await stores.close();
    }
  });

  it("reuses an answer for a few seconds, then asks again", async () => {
    const stores = await openStoreBackend({ kind: "postgres", url: testDatabase.url });
    const { gateway, advance } = healthParts(stores);
    try {
      await storeHealth(gateway);
      const first = gateway.storeProbe.last;
      advance(1_000);
      await storeHealth(gateway);
      expect(gateway.storeProbe.last).toBe(first);
      advance(10_000);
      await storeHealth(gateway);
      expect(gateway.storeProbe.last).not.toBe(first);
    } finally {
      await stores.close();
    }
  });
});
