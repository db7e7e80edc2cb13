import { describe, expect, it } from "vitest";
import { replicaTable } from "../cli/cluster-status.js";
import { describeChannel, describeCluster } from "../commands/status.js";
import type { ReplicaInfo } from "./replica-registry.js";

const replica = (over: Partial<ReplicaInfo>): ReplicaInfo => ({
  id: "gw-1",
  host: "host1",
  version: "0.1.0",
  instanceId: "host1/boot/1/1",
  startedMs: 0,
  heartbeatMs: 0,
  heartbeatAgeMs: 1_200,
  sessionsHeld: 3,
  state: "running",
  alive: true,
  ...over,
});

describe("the replicas as operators read them", () => {
  it("lists each replica in /status with its host, version, sessions, heartbeat and liveness", () => {
    const lines = describeCluster({
      id: "3f9c2a7d41b0",
      replica: "gw-1",
      replicas: [
        replica({}),
        replica({ id: "gw-2", host: "host2", alive: false, heartbeatAgeMs: 42_000 }),
        replica({ id: "gw-3", state: "stopped", alive: false }),
      ],
    });
    expect(lines).toEqual([
      "Cluster 3f9c2a7d41b0: 1 of 3 replica(s) alive (this one: gw-1)",
      "Replica gw-1 (host1, 0.1.0): alive, 3 session(s), last heartbeat 1 s ago",
      "Replica gw-2 (host2, 0.1.0): DEAD, 3 session(s), last heartbeat 42 s ago",
      "Replica gw-3 (host1, 0.1.0): stopped, 3 session(s), last heartbeat 1 s ago",
    ]);
  });

  it("says why the replicas are unknown when the database did not answer", () => {
    expect(describeCluster({ id: "c", replica: "gw-1", detail: "timeout" })).toEqual([
      "Cluster c (this replica: gw-1): replicas unknown (timeout)",
    ]);
  });

  it("aligns `mediagate status`'s columns under a header", () => {
    const [header, first, second] = replicaTable([
      replica({}),
      replica({ id: "host2-a1b2c3", alive: false, heartbeatAgeMs: 42_000 }),
    ]);
    expect(header).toMatch(/^REPLICA\s+HOST\s+VERSION\s+SESSIONS\s+HEARTBEAT\s+STATE$/);
    expect(first).toMatch(/^gw-1\s+host1\s+0\.1\.0\s+3\s+1 s ago\s+alive$/);
    expect(second).toMatch(/^host2-a1b2c3\s+host1\s+0\.1\.0\s+3\s+42 s ago\s+dead$/);
    expect(header?.indexOf("HOST")).toBe(first?.indexOf("host1"));
  });

  it("marks a channel on standby while another replica holds the bot's connection", () => {
    const line = describeChannel(
      { platform: "telegram", profile: "default", state: "up", sinceMs: 0, standby: true },
      0,
    );
    expect(line).toBe(
      "Channel telegram (default): up (standby: another replica holds the bot's connection)",
    );
  });
});
