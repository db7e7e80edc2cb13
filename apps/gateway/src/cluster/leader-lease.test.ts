import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { waitFor } from "../../../../test-support/wait.js";
import { PostgresDatabase } from "../postgres/database.js";
import { migrateCluster } from "./cluster-schema.js";
import { LeaderLease, type LeaderWork, leaseName } from "./leader-lease.js";

let testDatabase: TestDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("cluster_leader");
  const database = new PostgresDatabase({ url: testDatabase.url });
  await migrateCluster(database);
  await database.close();
});
afterAll(async () => {
  await testDatabase?.drop();
});

/** A replica's lease with its own pool and manual timers, and what its work was told. */
function replica(name: string, instanceId: string, leaseMs = 600) {
  const database = new PostgresDatabase({ url: testDatabase.url });
  const clock = manualClock();
  const events: string[] = [];
  const errors: unknown[] = [];
  const work: LeaderWork = {
    lead: () => events.push("lead"),
    yieldLead: async () => {
      events.push("yield");
    },
  };
  const lease = new LeaderLease({
    database,
    name,
    replicaId: instanceId,
    instanceId,
    clock: { wallMs: clock.now, monoMs: clock.now },
    schedule: clock.schedule,
    leaseMs,
    renewIntervalMs: 100,
    attemptIntervalMs: 50,
    stopMarginMs: 200,
    onError: (error) => errors.push(error),
  });
  return { database, clock, events, errors, work, lease };
}

describe("leader lease", () => {
  it("names a bot by a hash, never by its token", () => {
    const name = leaseName("telegram", "123:SECRET");
    expect(name).toMatch(/^telegram:[0-9a-f]{16}$/);
    expect(name).not.toContain("SECRET");
  });

  it("lets one replica lead; the other takes over only after a graceful stop releases it", async () => {
    const name = "test:graceful";
    const a = replica(name, "a");
    const b = replica(name, "b");
    try {
      a.lease.start(a.work);
      await waitFor(() => expect(a.events).toEqual(["lead"]));
      b.lease.start(b.work);
      for (let i = 0; i < 3; i++) {
        await waitFor(() => expect(b.clock.pending()).toEqual([50]));
        b.clock.advance(50);
      }
      expect(b.events).toEqual([]);
      let confirmedWhileHeld = false;
      await a.lease.stop(async () => {
        const row = await a.database.query<{ instance_id: string }>(
          "read",
          "SELECT instance_id FROM mediagate_leases WHERE name = $1",
          [name],
        );
        confirmedWhileHeld = row.rows[0]?.instance_id === "a";
      });
      expect(confirmedWhileHeld).toBe(true);
      await waitFor(() => {
        b.clock.advance(50);
        expect(b.events).toEqual(["lead"]);
      });
    } finally {
      await a.lease.stop();
      await b.lease.stop();
      await Promise.all([a.database.close(), b.database.close()]);
    }
  });

  it("a leader cut off from the database yields by its own deadline, before anyone else leads", async () => {
    const name = "test:cut-off";
    const a = replica(name, "a");
    const b = replica(name, "b");
    try {
      a.lease.start(a.work);
      await waitFor(() => expect(a.events).toEqual(["lead"]));
      // Cut off: every call of a's pool fails from now on.
      await a.database.close();
      a.clock.advance(100); // a renewal that gets no answer
      await waitFor(() => expect(a.clock.pending()).toContain(100));
      expect(a.errors).toHaveLength(1);
      expect(a.events).toEqual(["lead"]);
      a.clock.advance(300); // past leaseMs − stopMarginMs since the last renewal sent
      expect(a.events).toEqual(["lead", "yield"]);
      // b may lead only once the database's expiry passed, and then does.
      b.lease.start(b.work);
      await waitFor(() => {
        b.clock.advance(50);
        expect(b.events).toEqual(["lead"]);
      });
      const row = await b.database.query<{ instance_id: string; term: string }>(
        "read",
        "SELECT instance_id, term FROM mediagate_leases WHERE name = $1",
        [name],
      );
      expect(row.rows[0]).toMatchObject({ instance_id: "b", term: "2" });
    } finally {
      await b.lease.stop();
      await b.database.close();
    }
  });
});
