import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Defaults } from "../src/defaults.js";
import { containerLabels } from "../src/labels.js";
import { containersOf, docker, type Fixture, fixture, TestImage } from "./helpers.js";

const script = join(dirname(fileURLToPath(import.meta.url)), "fixtures/acquire-slot.mjs");

async function acquireInOtherProcess(fx: Fixture, slot: string, persist = true): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [
    script,
    fx.profile,
    fx.home,
    slot,
    String(persist),
  ]);
  const parsed: unknown = JSON.parse(stdout);
  if (typeof parsed !== "object" || parsed === null || !("containerId" in parsed))
    throw new Error(stdout);
  return String(parsed.containerId);
}

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

describe("cross-process reuse", () => {
  it("gives a second Node process the same running container", async () => {
    const { containerId } = await fx.sandbox().acquire("default");
    expect(await acquireInOtherProcess(fx, "default")).toBe(containerId);
  });

  it("starts a stopped container of a persistent slot and reuses it", async () => {
    // A persistent slot's container serves any process; a scratch (session or task) one
    // belongs to the process that made it and is replaced once that process is gone.
    const slot = `profile:${fx.profile}`;
    const first = await acquireInOtherProcess(fx, slot);
    await docker.getContainer(first).stop({ t: 1 });
    const { containerId } = await fx.sandbox().acquire(slot);
    expect(containerId).toBe(first);
    expect((await docker.getContainer(first).inspect()).State.Running).toBe(true);
  });

  it("replaces the container it holds once the slot's directories were deleted under it", async () => {
    // The operator deleted the slot's files while this gateway ran and held the container.
    let nowMs = 1_000_000;
    const sandbox = fx.sandbox({}, { now: () => nowMs });
    const slot = `profile:${fx.profile}-gone-held`;
    const first = (await sandbox.acquire(slot)).containerId;
    expect((await sandbox.run(slot, "s", "echo before")).stdout).toBe("before\n");
    const dir = sandbox.slotDirectory(slot);
    for (const name of ["workspace", "home"]) {
      await rm(join(dir, name), { recursive: true, force: true });
    }
    // Looked at once a second at most: within it, the held container is handed out as it is.
    expect((await sandbox.acquire(slot)).containerId).toBe(first);
    nowMs += Defaults.boundDirsCheckMs;

    const run = await sandbox.run(slot, "s", "touch /workspace/new && echo ok");
    expect(run).toMatchObject({ exitCode: 0, stdout: "ok\n" });
    expect(existsSync(join(dir, "workspace", "new"))).toBe(true);
    expect((await sandbox.acquire(slot)).containerId).not.toBe(first);
    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
  });

  it("replaces a running container whose slot directories were deleted since", async () => {
    // The operator deleted the slot's files between two gateway runs (`rm -rf` of its
    // workspace/ and home/) while the persistent container kept running on the old ones.
    const slot = `profile:${fx.profile}-gone`;
    const first = await acquireInOtherProcess(fx, slot);
    const dir = fx.sandbox().slotDirectory(slot);
    for (const name of ["workspace", "home"]) {
      await rm(join(dir, name), { recursive: true, force: true });
    }

    const sandbox = fx.sandbox();
    const run = await sandbox.exec(slot, "touch /workspace/new && echo ok");
    expect(run).toMatchObject({ exitCode: 0, stdout: "ok\n" });
    expect((await sandbox.acquire(slot)).containerId).not.toBe(first);
    await expect(docker.getContainer(first).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
  });

  it("replaces a container that cannot be started", async () => {
    const broken = await docker.createContainer({
      Image: TestImage,
      Cmd: ["/no/such/binary"],
      Labels: containerLabels(fx.owner, "broken"),
      HostConfig: { NetworkMode: "none" },
    });
    const { containerId } = await fx.sandbox().acquire("broken");
    expect(containerId).not.toBe(broken.id);
    expect((await docker.getContainer(containerId).inspect()).State.Running).toBe(true);
    await expect(broken.inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it("shares one container for a shared slot across the profiles of one install", async () => {
    const slot = `shared:team-${fx.profile}`;
    const mine = await fx.sandbox().acquire(slot);
    const neighbour = await fixture({ home: fx.home });
    try {
      const theirs = await neighbour.sandbox().acquire(slot);
      expect(theirs.containerId).toBe(mine.containerId);
      expect(dirname(neighbour.sandbox().slotDirectory(slot))).toBe(
        join(fx.home, "sandboxes/docker"),
      );
    } finally {
      await neighbour.dispose();
    }
  });

  it("skips the probe and makes a fresh container when persistAcrossProcesses is off", async () => {
    const { containerId } = await fx.sandbox().acquire("private");
    const other = await acquireInOtherProcess(fx, "private", false);
    expect(other).not.toBe(containerId);
    const mine = await fx.sandbox({ persistAcrossProcesses: false }).acquire("private");
    expect(new Set([containerId, other, mine.containerId]).size).toBe(3);
    const running = (await containersOf(fx.profile)).filter(
      (c) => c.Labels["mediagate.slot"] === "private",
    );
    expect(running).toHaveLength(3);
  });
});
