import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { containerRunning, type Fixture, fixture, manualTimers, pathExists } from "./helpers.js";

const exists = pathExists;
const alive = containerRunning;

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/**
 * Idle timers are fired by hand (`schedule`), so "the slot went idle" is a step of the test,
 * not a wait on the clock.
 */
describe("idle cleanup of non-persistent slots", () => {
  it("arms a lifetimeSeconds timer at acquire; when it fires, the container and its dirs go", async () => {
    const timers = manualTimers();
    const sandbox = fx.sandbox({ persistent: false, lifetimeSeconds: 42 }, timers);
    const { containerId } = await sandbox.acquire("task-idle");
    await mkdir(join(sandbox.slotDirectory("task-idle"), "workspace"), { recursive: true });
    expect(timers.pending()).toEqual([42_000]);
    expect(await alive(containerId)).toBe(true);

    timers.fireAll();
    await waitUntil(async () => !(await alive(containerId)), "the container removed");
    await waitUntil(
      async () => !(await exists(sandbox.slotDirectory("task-idle"))),
      "the slot directory deleted",
    );
    expect(await sandbox.status("task-idle")).toBeUndefined();
  });

  it("keeps a container in use: a call stops its timer, and the call's end arms it again", async () => {
    const timers = manualTimers();
    const sandbox = fx.sandbox({ persistent: false }, timers);
    const { containerId } = await sandbox.acquire("task-busy");
    const go = join(sandbox.slotDirectory("task-busy"), "workspace", "go");
    expect(timers.pending()).toEqual([300_000]);

    const long = sandbox.run(
      "task-busy",
      "s",
      "until [ -e /workspace/go ]; do sleep 0.05; done; echo done",
    );
    await waitUntil(() => timers.pending().length === 0, "the call stopping the idle timer");
    expect(await alive(containerId)).toBe(true);

    await writeFile(go, "");
    expect((await long).stdout).toBe("done\n");
    expect(timers.pending()).toEqual([300_000]);
    expect((await sandbox.acquire("task-busy")).containerId).toBe(containerId);
    expect(await alive(containerId)).toBe(true);

    timers.fireAll();
    await waitUntil(async () => !(await alive(containerId)), "the container removed once idle");
  });

  it("never times a persistent slot, and shutdown cancels pending timers", async () => {
    const timers = manualTimers();
    const persistent = fx.sandbox({}, timers);
    const kept = await persistent.acquire("kept-idle");
    expect(timers.pending()).toEqual([]);

    const ephemeral = fx.sandbox({ persistent: false }, timers);
    const gone = await ephemeral.acquire("task-shut");
    expect(timers.pending()).toHaveLength(1);
    await ephemeral.shutdown();
    expect(timers.pending()).toEqual([]);
    expect(await alive(gone.containerId)).toBe(false);
    expect(await alive(kept.containerId)).toBe(true);
    expect(await persistent.status("kept-idle")).toEqual({
      containerId: kept.containerId,
      state: "running",
    });
  });
});
