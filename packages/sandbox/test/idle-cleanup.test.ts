import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerRunning, eventually, type Fixture, fixture, pathExists } from "./helpers.js";

const exists = pathExists;
const alive = containerRunning;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

describe("idle cleanup of non-persistent slots", () => {
  it("removes an idle non-persistent container and its dirs", async () => {
    const sandbox = fx.sandbox({ persistent: false }, { idleCleanupMs: 400 });
    const { containerId } = await sandbox.acquire("task-idle");
    await mkdir(join(sandbox.slotDirectory("task-idle"), "workspace"), { recursive: true });
    expect(await alive(containerId)).toBe(true);
    expect(await eventually(async () => !(await alive(containerId)))).toBe(true);
    expect(await eventually(async () => !(await exists(sandbox.slotDirectory("task-idle"))))).toBe(
      true,
    );
    expect(await sandbox.status("task-idle")).toBeUndefined();
  });

  it("keeps a container in use, even through a call longer than the idle period", async () => {
    const sandbox = fx.sandbox({ persistent: false }, { idleCleanupMs: 500 });
    const { containerId } = await sandbox.acquire("task-busy");
    for (let i = 0; i < 6; i++) {
      await sleep(250);
      expect((await sandbox.exec("task-busy", "echo hi")).stdout).toBe("hi\n");
    }
    const long = await sandbox.run("task-busy", "s", "sleep 1.2; echo done");
    expect(long.stdout).toBe("done\n");
    expect((await sandbox.acquire("task-busy")).containerId).toBe(containerId);
    expect(await alive(containerId)).toBe(true);
    expect(await eventually(async () => !(await alive(containerId)))).toBe(true);
  });

  it("never times out a persistent slot, and shutdown cancels pending timers", async () => {
    const persistent = fx.sandbox({}, { idleCleanupMs: 200 });
    const kept = await persistent.acquire("kept-idle");
    const ephemeral = fx.sandbox({ persistent: false }, { idleCleanupMs: 5_000 });
    const gone = await ephemeral.acquire("task-shut");
    await ephemeral.shutdown();
    expect(await alive(gone.containerId)).toBe(false);
    await sleep(800);
    expect(await alive(kept.containerId)).toBe(true);
    expect(await persistent.status("kept-idle")).toEqual({
      containerId: kept.containerId,
      state: "running",
    });
  });
});
