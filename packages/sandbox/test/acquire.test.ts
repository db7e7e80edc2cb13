import { chmod, mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { ImageMissingError, LabelKeys } from "../src/index.js";
import {
  containersOf,
  docker,
  type Fixture,
  fixture,
  loopDevicesGone,
  manualTimers,
  mountsUnder,
  pathExists,
} from "./helpers.js";
import { classify } from "./inbox-helpers.js";

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

describe("acquire", () => {
  it("creates a labelled, hardened container with Init and the slot dirs bound", async () => {
    const sandbox = fx.sandbox({
      memoryBytes: 256 * 1024 * 1024,
      nanoCpus: 500_000_000,
      volumes: ["/tmp:/hosttmp:ro"],
    });
    const slot = "session:agent:x:telegram:dm:42";
    const { containerId } = await sandbox.acquire(slot);
    const info = await docker.getContainer(containerId).inspect();
    expect(info.State.Running).toBe(true);
    expect(info.Config.Labels).toMatchObject({
      [LabelKeys.agent]: "1",
      [LabelKeys.slot]: "session_agent_x_telegram_dm_42",
      [LabelKeys.profile]: fx.profile,
    });
    expect(info.Config.Cmd).toEqual(["sleep", "infinity"]);
    expect(info.Config.WorkingDir).toBe("/workspace");
    const host = info.HostConfig;
    expect(host.Init).toBe(true);
    expect(host.CapDrop).toEqual(["ALL"]);
    expect(host.SecurityOpt).toEqual(["no-new-privileges"]);
    expect(host.PidsLimit).toBe(512);
    expect(host.NetworkMode).toBe("none");
    expect(host.Memory).toBe(256 * 1024 * 1024);
    expect(host.NanoCpus).toBe(500_000_000);
    const dir = sandbox.slotDirectory(slot);
    expect(dir).toBe(
      join(fx.home, "profiles", fx.profile, "sandboxes/docker", "session_agent_x_telegram_dm_42-") +
        dir.slice(-12),
    );
    expect(host.Binds).toEqual([
      `${dir}/workspace:/workspace`,
      `${dir}/home:/root`,
      "/tmp:/hosttmp:ro",
    ]);
    expect((await stat(join(dir, "workspace"))).isDirectory()).toBe(true);
    const written = await sandbox.exec(slot, "echo hello > /workspace/f.txt && echo ok");
    expect(written.stdout).toBe("ok\n");
    expect((await stat(join(dir, "workspace/f.txt"))).size).toBe(6);
  });

  it("starts a container whose volume binds /tmp written with a trailing slash, the volume in place of the tmpfs", async () => {
    const host = join(fx.home, "scratch-volume");
    await mkdir(host);
    await chmod(host, 0o1777);
    const sandbox = fx.sandbox({ volumes: [`${host}:/tmp/`] });
    const { containerId } = await sandbox.acquire("tmp-volume");
    const info = await docker.getContainer(containerId).inspect();
    expect(Object.keys(info.HostConfig.Tmpfs ?? {})).toEqual(["/var/tmp"]);
    expect((await sandbox.exec("tmp-volume", "echo v > /tmp/v.txt && echo ok")).stdout).toBe(
      "ok\n",
    );
    expect(await readFile(join(host, "v.txt"), "utf8")).toBe("v\n");
  });

  it("binds the slot dirs of a non-persistent container by default", async () => {
    const sandbox = fx.sandbox({ persistent: false });
    const { containerId } = await sandbox.acquire("task-bound");
    const info = await docker.getContainer(containerId).inspect();
    const dir = sandbox.slotDirectory("task-bound");
    expect(info.HostConfig.Binds).toEqual([
      `${join(dir, "workspace")}:/workspace`,
      `${join(dir, "home")}:/root`,
    ]);
    await sandbox.exec("task-bound", "echo kept > /workspace/f.txt");
    expect((await stat(join(dir, "workspace/f.txt"))).size).toBe(5);
  });

  it("uses tmpfs instead of binds for a tmpfs filesystem", async () => {
    const sandbox = fx.sandbox({ persistent: false, filesystem: "tmpfs" });
    const { containerId } = await sandbox.acquire("task-tmpfs");
    const info = await docker.getContainer(containerId).inspect();
    expect(info.HostConfig.Binds ?? []).toEqual([]);
    expect(Object.keys(info.HostConfig.Tmpfs ?? {}).sort()).toEqual([
      "/root",
      "/tmp",
      "/var/tmp",
      "/workspace",
    ]);
    const mounts = await sandbox.exec("task-tmpfs", "grep -E ' /(workspace|root) ' /proc/mounts");
    expect(mounts.stdout).toMatch(/tmpfs \/workspace tmpfs/);
  });

  it("makes one container per slot under 20 concurrent acquires", async () => {
    const sandbox = fx.sandbox();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => sandbox.acquire("concurrent")),
    );
    const ids = new Set(results.map((r) => r.containerId));
    expect(ids.size).toBe(1);
    const slotContainers = (await containersOf(fx.profile)).filter(
      (c) => c.Labels[LabelKeys.slot] === "concurrent",
    );
    expect(slotContainers.map((c) => c.Id)).toEqual([...ids]);
  });

  it("makes one container per slot under 20 concurrent acquires from separate sandboxes", async () => {
    const sandboxes = Array.from({ length: 20 }, () => fx.sandbox({ orphanReaper: false }));
    const results = await Promise.all(sandboxes.map((s) => s.acquire("racing")));
    expect(new Set(results.map((r) => r.containerId)).size).toBe(1);
    const slotContainers = (await containersOf(fx.profile)).filter(
      (c) => c.Labels[LabelKeys.slot] === "racing",
    );
    expect(slotContainers).toHaveLength(1);
  });

  it("gives different slots different containers", async () => {
    const sandbox = fx.sandbox();
    const [a, b] = await Promise.all([sandbox.acquire("slot-a"), sandbox.acquire("slot-b")]);
    expect(a.containerId).not.toBe(b.containerId);
  });

  it("reports a missing image the engine cannot pull as ImageMissingError, making no container", async () => {
    // No registry is reachable here: the engine's pull fails (example.invalid never resolves).
    const image = "example.invalid/mediagate-no-such-image:never";
    const sandbox = fx.sandbox({ image });
    const error = await sandbox.acquire("no-image").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageMissingError);
    expect(error).toMatchObject({ name: "ImageMissingError", image });
    expect((error as ImageMissingError).pullFailure).toContain("example.invalid");
    expect((await sandbox.list()).filter((c) => c.image === image)).toEqual([]);
  });

  it("removes the directory and disk of a session whose container the engine refused, when idle and at shutdown", async () => {
    const timers = manualTimers();
    // Below the engine's 6 MB minimum: the create is refused after the slot's directory and
    // disk were made.
    const refused = { persistent: false, diskLimitBytes: 64 * 1024 * 1024, memoryBytes: 1 << 20 };
    const idle = fx.sandbox({ ...refused, warmPool: 0 }, { schedule: timers.schedule });
    const idleDir = idle.slotDirectory("session:refused-idle");
    await expect(idle.acquire("session:refused-idle")).rejects.toThrow(/Minimum memory limit/);
    expect(await mountsUnder(idleDir)).toEqual([idleDir]);
    timers.fireAll();
    await waitUntil(async () => !(await pathExists(idleDir)), "the idle slot's directory removed");
    expect(await mountsUnder(idleDir)).toEqual([]);
    await idle.shutdown();

    const stopping = fx.sandbox({ ...refused, warmPool: 0 }, { schedule: manualTimers().schedule });
    const stoppingDir = stopping.slotDirectory("session:refused-stop");
    await expect(stopping.acquire("session:refused-stop")).rejects.toThrow(/Minimum memory limit/);
    await stopping.shutdown();
    expect(await pathExists(stoppingDir)).toBe(false);
    expect(await mountsUnder(stoppingDir)).toEqual([]);
    await loopDevicesGone(join(fx.home, "profiles", fx.profile, "sandboxes", "disks"));
  });

  it("recovers when its container was removed behind its back", async () => {
    const sandbox = fx.sandbox();
    const first = await sandbox.acquire("vanishing");
    await docker.getContainer(first.containerId).remove({ force: true, v: true });
    const result = await sandbox.exec("vanishing", "echo back");
    expect(result.stdout).toBe("back\n");
    expect((await sandbox.status("vanishing"))?.containerId).not.toBe(first.containerId);
  });

  it("honours an aborted signal", async () => {
    const sandbox = fx.sandbox();
    await expect(sandbox.acquire("aborted", AbortSignal.abort())).rejects.toMatchObject({
      name: "AbortError",
    });
  });

  it("hands the signal of run, exec and saveToInbox to the acquire: nothing is made", async () => {
    const sandbox = fx.sandbox();
    const aborted = AbortSignal.abort();
    const calls = [
      sandbox.run("cold", "s", "echo hi", { signal: aborted }),
      sandbox.exec("cold", "echo hi", { signal: aborted }),
      sandbox.saveToInbox("cold", [], { sessionKey: "s", classify, signal: aborted }),
    ];
    for (const call of calls) await expect(call).rejects.toMatchObject({ name: "AbortError" });
    expect(await sandbox.status("cold")).toBeUndefined();
  });

  it("removes a container that is only made after the acquire timed out", async () => {
    const own = await fixture();
    const events = (await docker.getEvents({
      filters: { type: ["container"], label: [`${LabelKeys.profile}=${own.profile}`] },
    })) as NodeJS.ReadableStream & { destroy(): void };
    const seen: string[] = [];
    events.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        const event: unknown = JSON.parse(line);
        if (typeof event === "object" && event !== null && "status" in event) {
          seen.push(String(event.status));
        }
      }
    });
    try {
      const sandbox = own.sandbox(
        { persistAcrossProcesses: false, orphanReaper: false },
        { provisionTimeoutMs: 1 },
      );
      await expect(sandbox.acquire("task-late")).rejects.toThrow(/timed out/);
      await sandbox.shutdown();
      await waitUntil(async () => seen.includes("destroy"), "the container destroyed");
      expect(seen).toContain("create");
      expect(await containersOf(own.profile)).toEqual([]);
    } finally {
      events.destroy();
      await own.dispose();
    }
  });
});
