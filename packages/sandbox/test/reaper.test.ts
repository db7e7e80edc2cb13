import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerOf } from "../src/docker-client.js";
import { currentInstanceId } from "../src/instance.js";
import { containerLabels, LabelKeys } from "../src/labels.js";
import { sweepOrphans } from "../src/reaper.js";
import { type ThrowawayKind, ThrowawayKinds } from "../src/throwaway-container.js";
import {
  containerExists,
  docker,
  type Fixture,
  fixture,
  pathExists,
  TestImage,
  testEngine,
} from "./helpers.js";

const exists = pathExists;
const alive = containerExists;
/** Far enough ahead that anything exited now is older than 2 × 300 s. */
const later = () => Date.now() + 11 * 60_000;

/** A container of the fixture's install and profile that exited just now (`true`). */
async function exitedContainer(owner: Fixture, slot: string): Promise<string> {
  const container = await docker.createContainer({
    Image: TestImage,
    Cmd: ["true"],
    Labels: containerLabels(owner.owner, slot),
    // As the sandbox's own containers: no network, so nothing depends on the engine's bridge.
    HostConfig: { NetworkMode: "none" },
  });
  await container.start();
  await container.wait();
  return container.id;
}

/**
 * A throwaway container of `kind` of the fixture's install and profile, labelled as
 * `runThrowaway` labels it (owned by this live process), running `cmd`; started and waited
 * for unless `start` is false.
 */
async function throwaway(
  owner: Fixture,
  kind: ThrowawayKind,
  cmd: string[],
  start = true,
): Promise<string> {
  const container = await docker.createContainer({
    name: `${ThrowawayKinds[kind].namePrefix}-test-${Math.random().toString(16).slice(2, 10)}`,
    Image: TestImage,
    Cmd: cmd,
    Labels: {
      [ThrowawayKinds[kind].label]: "1",
      [LabelKeys.install]: owner.owner.install,
      [LabelKeys.owner]: currentInstanceId(),
      [LabelKeys.profile]: owner.profile,
    },
    HostConfig: { NetworkMode: "none" },
  });
  if (start) await container.start();
  if (start && cmd[0] === "true") await container.wait();
  return container.id;
}

let fx: Fixture;
let other: Fixture;
beforeAll(async () => {
  fx = await fixture();
  other = await fixture();
});
afterAll(async () => {
  await fx.dispose();
  await other.dispose();
});

describe("orphan reaper", () => {
  it("removes old exited containers of its profile with their slot dirs, nothing else", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false });
    const running = await sandbox.acquire("running");
    const persisted = await sandbox.acquire("stopped-slot");
    await docker.getContainer(persisted.containerId).stop({ t: 0 });
    const plain = await exitedContainer(fx, "plain");
    const foreign = await exitedContainer(other, "plain");

    const young = await sandbox.reapOrphans();
    expect(young.removed).toEqual([]);

    const result = await sandbox.reapOrphans({ now: new Date(later()) });
    expect(result.removed.sort()).toEqual([persisted.containerId, plain].sort());
    expect(result.failed).toEqual([]);
    expect(await alive(running.containerId)).toBe(true);
    expect(await alive(foreign)).toBe(true);
    expect(await alive(plain)).toBe(false);
    expect(await exists(sandbox.slotDirectory("stopped-slot"))).toBe(false);
    expect(await exists(sandbox.slotDirectory("running"))).toBe(true);
  });

  it("keeps the dirs of persistent slots and deletes those of session and task slots", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false });
    const kept = ["default", `profile:${fx.profile}`, `shared:${fx.profile}`];
    const scratch = ["session:agent:x:dm:7", "task-reaped"];
    const ids: string[] = [];
    for (const slot of [...kept, ...scratch]) {
      const { containerId } = await sandbox.acquire(slot);
      await sandbox.exec(slot, "echo precious > /workspace/data.txt");
      await docker.getContainer(containerId).stop({ t: 0 });
      ids.push(containerId);
    }
    const result = await sandbox.reapOrphans({ now: new Date(later()) });
    expect(result.removed.sort()).toEqual([...ids].sort());
    for (const id of ids) expect(await alive(id)).toBe(false);
    for (const slot of kept) {
      const file = join(sandbox.slotDirectory(slot), "workspace", "data.txt");
      expect(await readFile(file, "utf8")).toBe("precious\n");
    }
    for (const slot of scratch) expect(await exists(sandbox.slotDirectory(slot))).toBe(false);
  });

  it("keeps a reaped container's slot dir while another container of the slot uses it", async () => {
    const settings = { orphanReaper: false, persistAcrossProcesses: false };
    const slot = "task-still-used";
    const first = fx.sandbox(settings);
    const old = await first.acquire(slot);
    await first.exec(slot, "echo in-use > /workspace/data.txt");
    await docker.getContainer(old.containerId).stop({ t: 0 });
    const live = await fx.sandbox(settings).acquire(slot);

    const result = await first.reapOrphans({ now: new Date(later()) });
    expect(result.removed).toContain(old.containerId);
    expect(result.failed).toEqual([]);
    expect(await alive(live.containerId)).toBe(true);
    const file = join(first.slotDirectory(slot), "workspace", "data.txt");
    expect(await readFile(file, "utf8")).toBe("in-use\n");
  });

  it("respects the lifetime: 2 × max(60, lifetimeSeconds)", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false, lifetimeSeconds: 3600 });
    const id = await exitedContainer(fx, "long-lived");
    expect((await sandbox.reapOrphans({ now: new Date(Date.now() + 7000_000) })).removed).toEqual(
      [],
    );
    expect(await alive(id)).toBe(true);
    expect((await sandbox.reapOrphans({ now: new Date(Date.now() + 7300_000) })).removed).toEqual([
      id,
    ]);
  });

  it("removes the profile's throwaway containers, deletes and kills, that exited or never started, once old enough", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false });
    const done: string[] = [];
    const running: string[] = [];
    const foreign: string[] = [];
    for (const kind of ["slotDelete", "processKill"] as const) {
      done.push(await throwaway(fx, kind, ["true"]), await throwaway(fx, kind, ["true"], false));
      running.push(await throwaway(fx, kind, ["sleep", "60"]));
      foreign.push(await throwaway(other, kind, ["true"]));
    }

    expect((await sandbox.reapOrphans()).removed).toEqual([]);
    for (const id of done) expect(await alive(id)).toBe(true);

    const result = await sandbox.reapOrphans({ now: new Date(later()) });
    expect(result.failed).toEqual([]);
    expect(result.removed.sort()).toEqual([...done].sort());
    for (const id of done) expect(await alive(id)).toBe(false);
    for (const id of [...running, ...foreign]) expect(await alive(id)).toBe(true);
    for (const id of running) await docker.getContainer(id).remove({ force: true, v: true });
  });

  it("keeps sweeping after one removal fails", async () => {
    const first = await exitedContainer(fx, "fail-a");
    const second = await exitedContainer(fx, "fail-b");
    const client = dockerOf(testEngine());
    const result = await sweepOrphans({
      docker: client,
      owner: fx.owner,
      minAgeSeconds: 600,
      now: new Date(later()),
      sandboxRoots: [],
      remove: async (id) => {
        if (id === first) throw new Error("device busy");
        await client.getContainer(id).remove({ v: true });
      },
    });
    expect(result.failed).toEqual([{ id: first, error: "device busy" }]);
    expect(result.removed).toContain(second);
    expect(await alive(first)).toBe(true);
    expect(await alive(second)).toBe(false);
  });

  it("runs once per process at first use, and not at all when disabled", async () => {
    const profile = await fixture();
    try {
      const early = await exitedContainer(profile, "early");
      const disabled = profile.sandbox({ orphanReaper: false }, { now: later });
      await disabled.acquire("x");
      expect(await alive(early)).toBe(true);

      await profile.sandbox({}, { now: later }).acquire("y");
      expect(await alive(early)).toBe(false);

      const late = await exitedContainer(profile, "late");
      await profile.sandbox({}, { now: later }).acquire("z");
      expect(await alive(late)).toBe(true);
    } finally {
      await profile.dispose();
    }
  });
});
