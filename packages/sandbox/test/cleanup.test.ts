import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containersOf, docker, type Fixture, fixture, pathExists } from "./helpers.js";

const exists = pathExists;
const stateOf = async (id: string) =>
  (
    await docker
      .getContainer(id)
      .inspect()
      .catch(() => undefined)
  )?.State.Status ?? "missing";

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

describe("cleanup", () => {
  it("force stops and removes the container, keeping dirs unless asked", async () => {
    const sandbox = fx.sandbox();
    const { containerId } = await sandbox.acquire("forced");
    await sandbox.cleanup("forced", { force: true });
    expect(await stateOf(containerId)).toBe("missing");
    expect(await exists(join(sandbox.slotDirectory("forced"), "workspace"))).toBe(true);

    const again = await sandbox.acquire("forced");
    expect(again.containerId).not.toBe(containerId);
    await sandbox.cleanup("forced", { force: true, deleteDirs: true });
    expect(await stateOf(again.containerId)).toBe("missing");
    expect(await exists(sandbox.slotDirectory("forced"))).toBe(false);
  });

  it("leaves a persistent container running and only drops the handle", async () => {
    const sandbox = fx.sandbox();
    const { containerId } = await sandbox.acquire("kept");
    await sandbox.run("kept", "s", "cd /tmp");
    await sandbox.cleanup("kept");
    expect(await stateOf(containerId)).toBe("running");
    expect(await exists(sandbox.slotDirectory("kept"))).toBe(true);
    expect((await sandbox.acquire("kept")).containerId).toBe(containerId);
    expect((await sandbox.run("kept", "s", "pwd")).stdout).toBe("/tmp\n");
  });

  it("stops and removes a non-persistent container and deletes its dirs", async () => {
    const sandbox = fx.sandbox({ persistent: false });
    const { containerId } = await sandbox.acquire("task-eph");
    await docker.getContainer(containerId).inspect();
    await mkdir(join(sandbox.slotDirectory("task-eph"), "workspace"), { recursive: true });
    await sandbox.cleanup("task-eph");
    expect(await stateOf(containerId)).toBe("missing");
    expect(await exists(sandbox.slotDirectory("task-eph"))).toBe(false);
  });

  it("tears down a slot's container made by another process (found by labels)", async () => {
    const { containerId } = await fx.sandbox().acquire("elsewhere");
    const fresh = fx.sandbox();
    await fresh.cleanup("elsewhere", { force: true, deleteDirs: true });
    expect(await stateOf(containerId)).toBe("missing");
  });

  it("is safe to repeat: an already stopped or missing container counts as done", async () => {
    const sandbox = fx.sandbox();
    const { containerId } = await sandbox.acquire("twice");
    await docker.getContainer(containerId).stop({ t: 0 });
    await expect(sandbox.cleanup("twice", { force: true })).resolves.toBeUndefined();
    await expect(sandbox.cleanup("twice", { force: true })).resolves.toBeUndefined();
    await expect(sandbox.remove(containerId)).resolves.toBeUndefined();
  });

  it("shutdown awaits cleanups and removes non-persistent containers", async () => {
    const sandbox = fx.sandbox({ persistent: false });
    const a = await sandbox.acquire("task-s1");
    const b = await sandbox.acquire("task-s2");
    const pending = sandbox.cleanup("task-s1");
    await sandbox.shutdown();
    await pending;
    expect(await stateOf(a.containerId)).toBe("missing");
    expect(await stateOf(b.containerId)).toBe("missing");
  });

  it("remove() takes a slot or a container id but refuses another profile's container", async () => {
    const sandbox = fx.sandbox();
    const bySlot = await sandbox.acquire("rm-slot");
    await sandbox.remove("rm-slot");
    expect(await stateOf(bySlot.containerId)).toBe("missing");
    const byId = await sandbox.acquire("rm-id");
    await sandbox.remove(byId.containerId.slice(0, 12));
    expect(await stateOf(byId.containerId)).toBe("missing");

    const stranger = await fixture();
    try {
      const foreign = await stranger.sandbox().acquire("theirs");
      await expect(sandbox.remove(foreign.containerId)).rejects.toMatchObject({
        name: "SandboxError",
        operation: "remove",
      });
      expect(await stateOf(foreign.containerId)).toBe("running");
    } finally {
      await stranger.dispose();
    }
  });

  it("reports status and lists this profile's containers", async () => {
    const sandbox = fx.sandbox();
    const { containerId } = await sandbox.acquire("listed");
    expect(await sandbox.status("listed")).toEqual({ containerId, state: "running" });
    expect(await sandbox.status("never-made")).toBeUndefined();
    const listed = await sandbox.list();
    expect(listed.map((c) => c.id)).toContain(containerId);
    expect(listed.every((c) => c.profile === fx.profile)).toBe(true);
    expect((await containersOf(fx.profile)).length).toBe(listed.length);
  });
});
