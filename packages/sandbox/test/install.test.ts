import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LabelKeys } from "../src/index.js";
import { containerLabels } from "../src/labels.js";
import {
  containerExists,
  containerRunning,
  docker,
  execIn,
  type Fixture,
  fixture,
  TestImage,
} from "./helpers.js";

/** Far enough ahead that anything exited now is older than 2 × 300 s. */
const later = () => new Date(Date.now() + 11 * 60_000);

/**
 * Two installs (two root homes) on one engine, both with a profile of the same name: the
 * install label keeps their containers apart for reuse, listing, removal and reaping.
 */
describe("installs on one engine", () => {
  let one: Fixture;
  let two: Fixture;

  beforeAll(async () => {
    one = await fixture();
    two = await fixture({ profile: one.profile });
  });
  afterAll(async () => {
    await one.dispose();
    await two.dispose();
  });

  it("labels and names every container with its install", async () => {
    const { containerId } = await one.sandbox().acquire("default");
    const info = await docker.getContainer(containerId).inspect();
    expect(info.Config.Labels[LabelKeys.install]).toBe(one.install);
    expect(info.Name).toContain(one.install);
    expect(one.install).not.toBe(two.install);
  });

  it("gives each install its own container of a same-named profile, writing into its own workspace", async () => {
    for (const slot of ["default", `profile:${one.profile}`, "shared:team"]) {
      const a = one.sandbox();
      const b = two.sandbox();
      const inA = await a.acquire(slot);
      const inB = await b.acquire(slot);
      expect(inB.containerId).not.toBe(inA.containerId);
      await a.exec(slot, "echo one > /workspace/who.txt");
      await b.exec(slot, "echo two > /workspace/who.txt");
      const file = (s: typeof a) => join(s.slotDirectory(slot), "workspace", "who.txt");
      expect(await readFile(file(a), "utf8")).toBe("one\n");
      expect(await readFile(file(b), "utf8")).toBe("two\n");
    }
  });

  it("lists, removes and reaps only its own install's containers", async () => {
    const a = one.sandbox();
    const b = two.sandbox();
    const mine = await a.acquire("session:ls");
    const theirs = await b.acquire("session:ls");
    const listed = (await a.list()).map((c) => c.id);
    expect(listed).toContain(mine.containerId);
    expect(listed).not.toContain(theirs.containerId);
    await expect(a.remove(theirs.containerId)).rejects.toThrow(/not a mediagate container/);
    await a.remove("session:ls");
    expect(await containerExists(mine.containerId)).toBe(false);
    expect(await containerRunning(theirs.containerId)).toBe(true);

    await docker.getContainer(theirs.containerId).stop({ t: 0 });
    const reaped = await a.reapOrphans({ now: later() });
    expect(reaped.removed).not.toContain(theirs.containerId);
    expect(await containerExists(theirs.containerId)).toBe(true);
    expect((await b.reapOrphans({ now: later() })).removed).toContain(theirs.containerId);
  });
});

/**
 * Containers made before the install label existed: the upgraded sandbox retires the ones
 * bound into its own slot dirs (keeping the files) and leaves the others alone.
 */
describe("containers without an install label (upgrade)", () => {
  let fx: Fixture;
  let elsewhere: Fixture;

  beforeAll(async () => {
    fx = await fixture();
    elsewhere = await fixture({ profile: fx.profile });
  });
  afterAll(async () => {
    await fx.dispose();
    await elsewhere.dispose();
  });

  /** A running container as the version before install labels made it. */
  async function legacyContainer(slot: string, slotDir: string | undefined): Promise<string> {
    const { [LabelKeys.install]: _, ...labels } = containerLabels(fx.owner, slot);
    if (slotDir !== undefined) await mkdir(join(slotDir, "workspace"), { recursive: true });
    const container = await docker.createContainer({
      Image: TestImage,
      Cmd: ["sleep", "infinity"],
      Labels: labels,
      HostConfig: {
        Init: true,
        NetworkMode: "none",
        Binds: slotDir === undefined ? [] : [`${join(slotDir, "workspace")}:/workspace`],
      },
    });
    await container.start();
    return container.id;
  }

  it("retires the ones bound into this install's slot dirs at first use, keeping their files", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false });
    const slot = `profile:${fx.profile}`;
    const ours = await legacyContainer(slot, sandbox.slotDirectory(slot));
    await execIn(ours, ["sh", "-c", "echo kept > /workspace/old.txt"]);
    const foreign = await legacyContainer(slot, elsewhere.sandbox().slotDirectory(slot));
    const unbound = await legacyContainer(slot, undefined);

    const legacy = await sandbox.legacyContainers();
    expect(legacy.map((c) => [c.id, c.slotDir !== undefined]).sort()).toEqual(
      [
        [ours, true],
        [foreign, false],
        [unbound, false],
      ].sort(),
    );

    const { containerId } = await sandbox.acquire(slot);
    expect(containerId).not.toBe(ours);
    expect(await containerExists(ours)).toBe(false);
    expect(await containerRunning(foreign)).toBe(true);
    expect(await containerRunning(unbound)).toBe(true);
    expect(await sandbox.exec(slot, "cat /workspace/old.txt")).toMatchObject({
      stdout: "kept\n",
    });
    expect((await sandbox.legacyContainers()).map((c) => c.id).sort()).toEqual(
      [foreign, unbound].sort(),
    );
  });

  it("retires them on an explicit reap too", async () => {
    const sandbox = fx.sandbox({ orphanReaper: false });
    const dir = sandbox.slotDirectory("session:old");
    const ours = await legacyContainer("session:old", dir);
    await writeFile(join(dir, "workspace", "note.txt"), "x");
    const result = await sandbox.reapOrphans();
    expect(result.removed).toContain(ours);
    expect(await containerExists(ours)).toBe(false);
    expect(await readFile(join(dir, "workspace", "note.txt"), "utf8")).toBe("x");
  });
});
