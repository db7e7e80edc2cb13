import { spawn } from "node:child_process";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LabelKeys, type ReplicaLabels, Sandbox } from "../src/index.js";
import {
  containerExists,
  containerRunning,
  docker,
  type Fixture,
  fixture,
  testEngine,
  testSettings,
} from "./helpers.js";

const script = join(dirname(fileURLToPath(import.meta.url)), "fixtures/hold-slots.mjs");
const Scratch = { persistent: false, orphanReaper: false };
const A: ReplicaLabels = { cluster: "c0ffee", replica: "replica-a" };
const B: ReplicaLabels = { cluster: "c0ffee", replica: "replica-b" };

/** A replica process that acquires `slots` and is SIGKILLed; returns slot → container id. */
async function holdThenKill(
  fx: Fixture,
  replica: ReplicaLabels,
  slots: string[],
): Promise<Record<string, string>> {
  const child = spawn(
    process.execPath,
    [script, fx.profile, fx.home, JSON.stringify(testSettings(Scratch)), ...slots],
    { env: { ...process.env, MEDIAGATE_TEST_REPLICA: `${replica.cluster}/${replica.replica}` } },
  );
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = once(child, "exit");
  const printed = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(out);
    });
    child.on("exit", (code) => reject(new Error(`child exited (${code}): ${err}`)));
  });
  try {
    return JSON.parse(await printed) as Record<string, string>;
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

let fx: Fixture;
const made: Sandbox[] = [];
/** Replica `replica`'s sandbox of the fixture's profile, in this process. */
function replicaSandbox(replica: ReplicaLabels, persistent = false): Sandbox {
  const sandbox = new Sandbox({
    engine: testEngine(),
    profile: fx.profile,
    profileHome: join(fx.home, "profiles", fx.profile),
    rootHome: fx.home,
    replica,
    settings: testSettings({ ...Scratch, persistent }),
  });
  made.push(sandbox);
  return sandbox;
}

beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  for (const sandbox of made) await sandbox.shutdown(5_000);
  await fx.dispose();
});

// Both replicas use one root home here, so their install ids are the same: what two hosts
// with their homes at the same path (/var/lib/mediagate) sharing an engine would have. Only
// the replica label tells their containers apart.
describe("two replicas of a cluster on one engine", () => {
  it("label their containers with the cluster and the replica", async () => {
    const slot = "session:agent:x:dm:labels";
    const acquired = await replicaSandbox(A).acquire(slot);
    const labels = (await docker.getContainer(acquired.containerId).inspect()).Config.Labels;
    expect(labels[LabelKeys.cluster]).toBe(A.cluster);
    expect(labels[LabelKeys.replica]).toBe(A.replica);
  });

  it("never reuse each other's container of one slot", async () => {
    const a = await replicaSandbox(A, true).acquire("default");
    const b = await replicaSandbox(B, true).acquire("default");
    expect(b.containerId).not.toBe(a.containerId);
    expect(await containerRunning(a.containerId)).toBe(true);
    expect(await containerRunning(b.containerId)).toBe(true);
  });

  it("reap, list and remove only their own replica's containers", async () => {
    const leftByA = await holdThenKill(fx, A, ["session:agent:x:dm:a1", "session:agent:x:dm:a2"]);
    const leftByB = await holdThenKill(fx, B, ["session:agent:x:dm:b1"]);
    const idsOfA = Object.values(leftByA);
    const idOfB = leftByB["session:agent:x:dm:b1"] as string;
    const reaperA = replicaSandbox(A);
    const reaperB = replicaSandbox(B);

    const listedByA = (await reaperA.list()).map((c) => c.id);
    expect(listedByA).toEqual(expect.arrayContaining(idsOfA));
    expect(listedByA).not.toContain(idOfB);
    await expect(reaperA.remove(idOfB)).rejects.toThrow(/replica replica-a/);
    expect(await containerRunning(idOfB)).toBe(true);

    const reapedByA = await reaperA.reapOrphans();
    expect(reapedByA.failed).toEqual([]);
    expect(reapedByA.removed.sort()).toEqual([...idsOfA].sort());
    for (const id of idsOfA) expect(await containerExists(id)).toBe(false);
    expect(await containerRunning(idOfB)).toBe(true);

    const reapedByB = await reaperB.reapOrphans();
    expect(reapedByB.removed).toEqual([idOfB]);
    expect(await containerExists(idOfB)).toBe(false);
  });
});
