import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { migrateCluster } from "../cluster/cluster-schema.js";
import { PostgresDatabase } from "../postgres/database.js";
import { clusterHealth } from "./cluster-health.js";
import type { GatewayCore } from "./core.js";

let testDatabase: TestDatabase;
let database: PostgresDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("cluster_health");
  database = new PostgresDatabase({ url: testDatabase.url });
});
afterAll(async () => {
  await database?.close();
  await testDatabase?.drop();
});

describe("the cluster's health", () => {
  it("lists the replicas once for a burst of probes, and again for the next one", async () => {
    const clusterId = await migrateCluster(database);
    // The real store, with the statements sent to it counted.
    let queries = 0;
    const counted = {
      query: (...args: Parameters<PostgresDatabase["query"]>) => {
        queries++;
        return database.query(...args);
      },
    };
    const gateway = {
      cluster: { clusterId, replicaId: "gw-1", database: counted },
      clusterProbe: {},
      clock: { monoMs: () => 0, wallMs: () => 1_700_000_000_000 },
    } as unknown as GatewayCore;
    const burst = await Promise.all(Array.from({ length: 6 }, () => clusterHealth(gateway)));
    expect(burst[0]).toEqual({ id: clusterId, replica: "gw-1", replicas: [] });
    expect(new Set(burst).size).toBe(1);
    expect(queries).toBe(1);
    // Only requests that come while a list is under way share it: the next one asks anew.
    await clusterHealth(gateway);
    expect(queries).toBe(2);
  });
});
