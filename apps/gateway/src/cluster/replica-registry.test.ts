import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { waitFor } from "../../../../test-support/wait.js";
import { Defaults } from "../defaults.js";
import { OwnerLock } from "../durable/postgres-owner.js";
import { PostgresDatabase } from "../postgres/database.js";
import { migrateCluster } from "./cluster-schema.js";
import { ReplicaIdFileError, ReplicaIdTakenError } from "./errors.js";
import { ReplicaIdFileName, resolveReplicaId } from "./replica-id.js";
import { listReplicas, ReplicaRegistry } from "./replica-registry.js";

let testDatabase: TestDatabase;
let database: PostgresDatabase;
beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("cluster_registry");
  database = new PostgresDatabase({ url: testDatabase.url });
});
afterAll(async () => {
  await database?.close();
  await testDatabase?.drop();
});

describe("replica identity", () => {
  it("is generated once, kept in the home and read back on the next start", async () => {
    const home = await tempDirForTest("mg-replica-");
    const first = await resolveReplicaId(home, undefined);
    expect(first).toMatch(/^[a-z0-9][a-z0-9_.-]*-[0-9a-f]{6}$/);
    expect((await readFile(join(home, ReplicaIdFileName), "utf8")).trim()).toBe(first);
    expect(await resolveReplicaId(home, undefined)).toBe(first);
  });

  it("comes from the config when set, and the home's file is not made", async () => {
    const home = await tempDirForTest("mg-replica-");
    expect(await resolveReplicaId(home, "gw-1")).toBe("gw-1");
    await expect(readFile(join(home, ReplicaIdFileName))).rejects.toThrow(/ENOENT/);
  });

  it("refuses a file holding no id, saying how to fix it, and leaves it as it is", async () => {
    const home = await tempDirForTest("mg-replica-");
    await writeFile(join(home, ReplicaIdFileName), "not an id!\n");
    const failure = await resolveReplicaId(home, undefined).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ReplicaIdFileError);
    expect((failure as Error).message).toMatch(/delete the file/);
    expect(await readFile(join(home, ReplicaIdFileName), "utf8")).toBe("not an id!\n");
  });
});

describe("replica registry", () => {
  it("makes the cluster's id once: a second migration finds the same", async () => {
    const first = await migrateCluster(database);
    expect(first).toMatch(/^[0-9a-f]{12}$/);
    expect(await migrateCluster(database)).toBe(first);
  });

  it("registers, heartbeats on its schedule, and is listed stopped after a graceful stop", async () => {
    await migrateCluster(database);
    const clock = manualClock();
    let sessions = 0;
    const registry = await ReplicaRegistry.register({
      database,
      replicaId: "beat-1",
      version: "9.9.9",
      host: "host-a",
      instanceId: "host-a/boot/1/1",
      schedule: clock.schedule,
      heartbeatIntervalMs: 2_000,
      sessionsHeld: () => sessions,
    });
    const [listed] = (await listReplicas(database)).filter((r) => r.id === "beat-1");
    expect(listed).toMatchObject({
      host: "host-a",
      version: "9.9.9",
      state: "running",
      alive: true,
      sessionsHeld: 0,
    });
    expect(clock.pending()).toEqual([2_000]);
    sessions = 2;
    await database.query(
      "age",
      "UPDATE mediagate_replicas SET heartbeat_at = now() - interval '1 hour' WHERE id = 'beat-1'",
    );
    expect((await listReplicas(database)).find((r) => r.id === "beat-1")?.alive).toBe(false);
    // The session leases count what the replica holds once they start.
    registry.sessionsHeldBy(() => sessions + 1);
    clock.advance(2_000);
    await registry.heartbeat();
    const beaten = (await listReplicas(database)).find((r) => r.id === "beat-1");
    expect(beaten).toMatchObject({ alive: true, sessionsHeld: 3 });
    expect(beaten?.heartbeatAgeMs).toBeLessThan(5_000);
    await registry.close();
    expect((await listReplicas(database)).find((r) => r.id === "beat-1")).toMatchObject({
      state: "stopped",
      alive: false,
    });
    expect(clock.pending()).toEqual([]);
  });

  it("tells a heartbeat it could not write, and beats on", async () => {
    await migrateCluster(database);
    const own = new PostgresDatabase({ url: testDatabase.url });
    const clock = manualClock();
    const failures: unknown[] = [];
    await ReplicaRegistry.register({
      database: own,
      replicaId: "cut-1",
      version: "1",
      instanceId: "host-d/boot/4/4",
      schedule: clock.schedule,
      heartbeatIntervalMs: 2_000,
      onHeartbeatFailed: (error) => failures.push(error),
    });
    await own.close();
    clock.advance(2_000);
    await waitFor(() => expect(failures).toHaveLength(1));
    await waitFor(() => expect(clock.pending()).toEqual([2_000]));
  });

  it("refuses an id a live process holds, and takes it over once that process is gone", async () => {
    await migrateCluster(database);
    const other = "host-b/boot/2/2";
    const otherLock = await OwnerLock.acquire(database, other);
    const first = await ReplicaRegistry.register({
      database,
      replicaId: "shared-id",
      version: "1",
      host: "host-b",
      instanceId: other,
      schedule: manualClock().schedule,
    });
    const waits: number[] = [];
    const second = ReplicaRegistry.register({
      database,
      replicaId: "shared-id",
      version: "1",
      host: "host-c",
      instanceId: "host-c/boot/3/3",
      schedule: manualClock().schedule,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const failure = await second.catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ReplicaIdTakenError);
    // Asked again a few times first: the lock is held for good, not for a moment.
    expect(waits).toEqual(
      Array(Defaults.cluster.registerTries - 1).fill(Defaults.cluster.registerRetryMs),
    );
    expect((failure as Error).message).toMatch(/held by a live gateway on host-b/);
    // The first process dies without a stop: its owner lock goes with its connection.
    await otherLock.release();
    const taken = await ReplicaRegistry.register({
      database,
      replicaId: "shared-id",
      version: "2",
      host: "host-c",
      instanceId: "host-c/boot/3/3",
      schedule: manualClock().schedule,
    });
    expect((await listReplicas(database)).find((r) => r.id === "shared-id")).toMatchObject({
      host: "host-c",
      version: "2",
      alive: true,
    });
    // The dead one's last heartbeat changes nothing any more.
    await first.heartbeat();
    expect((await listReplicas(database)).find((r) => r.id === "shared-id")?.host).toBe("host-c");
    await taken.close();
  });

  it("starts when the earlier process's lock was held only for a moment (another replica's look)", async () => {
    await migrateCluster(database);
    const dead = "host-d/boot/4/4";
    await (
      await ReplicaRegistry.register({
        database,
        replicaId: "moment-id",
        version: "1",
        host: "host-d",
        instanceId: dead,
        schedule: manualClock().schedule,
      })
    ).heartbeat();
    // A take-over elsewhere judging the dead process holds its lock while this one starts.
    const looking = await OwnerLock.acquire(database, dead);
    let waited = 0;
    const restarted = await ReplicaRegistry.register({
      database,
      replicaId: "moment-id",
      version: "2",
      host: "host-d",
      instanceId: "host-d/boot/4/5",
      schedule: manualClock().schedule,
      sleep: async () => {
        waited += 1;
        await looking.release();
      },
    });
    expect(waited).toBe(1);
    expect((await listReplicas(database)).find((r) => r.id === "moment-id")).toMatchObject({
      version: "2",
      alive: true,
    });
    await restarted.close();
  });
});
