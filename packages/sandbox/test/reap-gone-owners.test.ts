import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  containerExists,
  containerRunning,
  type Fixture,
  fixture,
  pathExists,
  testSettings,
} from "./helpers.js";

const script = join(dirname(fileURLToPath(import.meta.url)), "fixtures/hold-slots.mjs");

/** Non-persistent settings: one container per session slot, tied to the process that made it. */
const Scratch = { persistent: false, orphanReaper: false };

/**
 * A second Node process acquires the slots (writing a marker into each workspace) and is
 * SIGKILLed: nothing of it runs its shutdown or idle cleanup. Returns slot → container id.
 */
async function holdThenKill(fx: Fixture, slots: string[]): Promise<Record<string, string>> {
  const child = spawn(process.execPath, [
    script,
    fx.profile,
    fx.home,
    JSON.stringify(testSettings(Scratch)),
    ...slots,
  ]);
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
let otherInstall: Fixture;
beforeAll(async () => {
  fx = await fixture();
  otherInstall = await fixture({ profile: fx.profile });
});
afterAll(async () => {
  await fx.dispose();
  await otherInstall.dispose();
});

describe("reaping the containers of a killed process", () => {
  it("removes its running scratch containers and their dirs, nothing of a live owner, a persistent slot or another install", async () => {
    const sessions = ["session:agent:x:dm:1", "session:agent:x:dm:2"];
    const left = await holdThenKill(fx, [...sessions, "default"]);
    const foreign = await holdThenKill(otherInstall, [sessions[0] as string]);
    const mine = fx.sandbox(Scratch);
    const live = await mine.acquire("session:agent:x:dm:live");
    for (const slot of sessions) {
      expect(await containerRunning(left[slot] as string)).toBe(true);
      expect(await pathExists(mine.slotDirectory(slot))).toBe(true);
    }

    // What the web console shows before the reap: the same containers marked, by the same rule.
    const inventory = await mine.inventory();
    const byId = new Map(inventory.map((c) => [c.id, c]));
    for (const slot of sessions) {
      expect(byId.get(left[slot] as string)).toMatchObject({
        orphan: "its gateway process is gone",
        state: "running",
        slotDir: mine.slotDirectory(slot),
      });
      expect(byId.get(left[slot] as string)?.processes).toBeGreaterThan(0);
    }
    expect(byId.get(left.default as string)?.orphan).toBeUndefined();
    expect(byId.get(live.containerId)?.orphan).toBeUndefined();
    expect(byId.has(foreign[sessions[0] as string] as string)).toBe(false);

    const result = await fx.sandbox(Scratch).reapOrphans();

    expect(result.failed).toEqual([]);
    expect(result.removed.sort()).toEqual(sessions.map((slot) => left[slot]).sort());
    for (const slot of sessions) {
      expect(await containerExists(left[slot] as string)).toBe(false);
      expect(await pathExists(mine.slotDirectory(slot))).toBe(false);
    }
    expect(await containerRunning(left.default as string)).toBe(true);
    expect(await pathExists(join(mine.slotDirectory("default"), "workspace/marker"))).toBe(true);
    expect(await containerRunning(live.containerId)).toBe(true);
    expect(await containerRunning(foreign[sessions[0] as string] as string)).toBe(true);
    expect(
      await pathExists(otherInstall.sandbox(Scratch).slotDirectory(sessions[0] as string)),
    ).toBe(true);
  });

  it("runs the automatic reap once per process and profile, at start or first use", async () => {
    const fresh = await fixture();
    try {
      const slot = "session:agent:x:dm:once";
      const left = await holdThenKill(fresh, [slot]);
      const sandbox = fresh.sandbox({ persistent: false });
      const first = await sandbox.reapOrphansOnce();
      expect(first?.removed).toEqual([left[slot]]);
      expect(await containerExists(left[slot] as string)).toBe(false);
      expect(await sandbox.reapOrphansOnce()).toBe(first);
      expect(await fresh.sandbox({ orphanReaper: false }).reapOrphansOnce()).toBeUndefined();
    } finally {
      await fresh.dispose();
    }
  });

  it("holds the automatic reap until deferReap's promise settles, even when an acquire starts it", async () => {
    const fresh = await fixture();
    try {
      const dead = "session:agent:x:dm:held";
      const left = await holdThenKill(fresh, [dead]);
      const sandbox = fresh.sandbox({ persistent: false });
      let open = (): void => {};
      // A restarted gateway: the dead process's replies are resumed first, from its dirs.
      sandbox.deferReap(
        new Promise<void>((resolve) => {
          open = resolve;
        }),
      );
      const live = "session:agent:x:dm:new";
      await sandbox.acquire(live); // starts the reap in the background
      const events: string[] = [];
      const reaped = sandbox.reapOrphansOnce().then((result) => {
        events.push("reaped");
        return result;
      });
      // Longer than the reap of one container takes here, had it not been held.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await containerExists(left[dead] as string)).toBe(true);
      expect(await pathExists(join(sandbox.slotDirectory(dead), "workspace", "marker"))).toBe(true);
      events.push("opened");
      open();
      expect((await reaped)?.removed).toEqual([left[dead]]);
      expect(events).toEqual(["opened", "reaped"]);
      expect(await pathExists(sandbox.slotDirectory(dead))).toBe(false);
      await sandbox.cleanup(live);
      await sandbox.shutdown();
    } finally {
      await fresh.dispose();
    }
  });

  it("keeps the directories deferReap's keep names, removing their containers, and sweeps each once no longer kept", async () => {
    const fresh = await fixture();
    try {
      const pending = "session:agent:x:dm:pending";
      const done = "session:agent:x:dm:done";
      const left = await holdThenKill(fresh, [pending, done]);
      const sandbox = fresh.sandbox({ persistent: false });
      // The slots pending replies name, as the gateway's journal would answer.
      let kept = [pending];
      sandbox.deferReap(Promise.resolve(), async () => kept);
      const marker = join(sandbox.slotDirectory(pending), "workspace", "marker");

      const result = await sandbox.reapOrphansOnce();

      expect(result?.removed.sort()).toEqual([left[pending], left[done]].sort());
      expect(await containerExists(left[pending] as string)).toBe(false);
      expect(await pathExists(marker)).toBe(true);
      expect(await pathExists(sandbox.slotDirectory(done))).toBe(false);
      // Another reap of this process (the web console's) keeps it too.
      await sandbox.reapOrphans();
      expect(await pathExists(marker)).toBe(true);
      // Still pending: a sweep leaves it.
      await sandbox.sweepSlotDir(pending);
      expect(await pathExists(marker)).toBe(true);
      // Its reply closed: no container binds it, its process is gone.
      kept = [];
      await sandbox.sweepSlotDir(pending);
      expect(await pathExists(sandbox.slotDirectory(pending))).toBe(false);
      await sandbox.shutdown();
    } finally {
      await fresh.dispose();
    }
  });

  it("sweeps no directory a live process holds or that has no owner file, and none with orphanReaper off", async () => {
    const sandbox = fx.sandbox(Scratch);
    const live = "session:agent:x:dm:swept-live";
    await sandbox.acquire(live);
    const legacy = "session:agent:x:dm:swept-legacy";
    await mkdir(join(sandbox.slotDirectory(legacy), "workspace"), { recursive: true });
    await writeFile(join(sandbox.slotDirectory(legacy), "workspace", "old"), "x");
    const dead = "session:agent:x:dm:swept-off";
    const left = await holdThenKill(fx, [dead]);
    await promisify(execFile)("docker", ["rm", "-f", "-v", left[dead] as string]);

    await sandbox.sweepSlotDir(live);
    await sandbox.sweepSlotDir(legacy);
    await sandbox.sweepSlotDir(dead); // Scratch has orphanReaper: false

    expect(await pathExists(join(sandbox.slotDirectory(live), "workspace"))).toBe(true);
    expect(await pathExists(join(sandbox.slotDirectory(legacy), "workspace", "old"))).toBe(true);
    expect(await pathExists(join(sandbox.slotDirectory(dead), "workspace", "marker"))).toBe(true);
    await fx.sandbox({ persistent: false }).sweepSlotDir(dead);
    expect(await pathExists(sandbox.slotDirectory(dead))).toBe(false);
  });

  it("replaces a killed process's scratch container instead of adopting it, keeping its files", async () => {
    const slot = "session:agent:x:dm:adopt";
    const left = await holdThenKill(fx, [slot]);
    const sandbox = fx.sandbox(Scratch);
    const result = await sandbox.run(slot, "s", "cat /workspace/marker");
    expect(result.stdout).toBe("scratch\n");
    expect((await sandbox.status(slot))?.containerId).not.toBe(left[slot]);
    expect(await containerExists(left[slot] as string)).toBe(false);
  });

  it("deletes a dead process's session dir no container binds; never a bound one or one without an owner", async () => {
    const sandbox = fx.sandbox(Scratch);
    // The killed process made the dir and its container; the container is then gone (as if
    // the process had died between the two), its dir stays behind with the owner file.
    const bare = "session:agent:x:dm:never-made";
    const left = await holdThenKill(fx, [bare]);
    await promisify(execFile)("docker", ["rm", "-f", "-v", left[bare] as string]);
    // A dir of an older version (no owner file) keeps its files for the session's next container.
    const legacy = "session:agent:x:dm:legacy";
    await mkdir(join(sandbox.slotDirectory(legacy), "workspace"), { recursive: true });
    await writeFile(join(sandbox.slotDirectory(legacy), "workspace", "old"), "x");
    const live = "session:agent:x:dm:bound";
    await sandbox.acquire(live);

    const result = await sandbox.reapOrphans();

    expect(result.failed).toEqual([]);
    expect(result.removed).toEqual([sandbox.slotDirectory(bare)]);
    expect(await pathExists(sandbox.slotDirectory(bare))).toBe(false);
    expect(await pathExists(join(sandbox.slotDirectory(legacy), "workspace", "old"))).toBe(true);
    expect(await pathExists(sandbox.slotDirectory(live))).toBe(true);
  });

  it("deletes the empty session dirs a process killed while preparing or deleting leaves", async () => {
    const sandbox = fx.sandbox(Scratch);
    // Killed right after making the directory, before it recorded its owner.
    const bare = sandbox.slotDirectory("session:agent:x:dm:bare");
    await mkdir(bare, { recursive: true });
    // Killed while the owner file was being written, or while deleting (empty bound dirs).
    const halfWritten = sandbox.slotDirectory("session:agent:x:dm:half");
    await mkdir(join(halfWritten, "workspace"), { recursive: true });
    await mkdir(join(halfWritten, "home"));
    await writeFile(join(halfWritten, ".owner.tmp"), "");
    // Anything a sandbox wrote keeps a directory without an owner.
    const withFiles = sandbox.slotDirectory("session:agent:x:dm:files");
    await mkdir(join(withFiles, "home"), { recursive: true });
    await writeFile(join(withFiles, "home", ".profile"), "x");

    const result = await sandbox.reapOrphans();

    expect(result.failed).toEqual([]);
    expect(result.removed.sort()).toEqual([bare, halfWritten].sort());
    expect(await pathExists(bare)).toBe(false);
    expect(await pathExists(halfWritten)).toBe(false);
    expect(await pathExists(join(withFiles, "home", ".profile"))).toBe(true);
  });
});
