import { execFileSync, spawn } from "node:child_process";
import { mkdir, open, readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  currentInstanceId,
  Defaults,
  LabelKeys,
  Sandbox,
  SlotDirectoryError,
} from "../src/index.js";
import { SlotOwnerFile } from "../src/slot-dirs.js";
import {
  containersOf,
  docker,
  type Fixture,
  fixture,
  loopDevicesGone,
  loopDevicesUnder,
  mountsUnder,
  pathExists,
  removeProfileContainers,
  testEngine,
  testSettings,
} from "./helpers.js";

const MiB = 1024 * 1024;
const here = dirname(fileURLToPath(import.meta.url));

/** `<home>/sandboxes/disks/docker/<name>.ext4` of a slot directory. */
const imageOf = (slotDir: string) =>
  join(dirname(dirname(slotDir)), "disks", "docker", `${basename(slotDir)}.ext4`);

const modeOf = async (path: string) => (await stat(path)).mode & 0o7777;

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

describe("slot directories", () => {
  it("makes slot dirs and their parents 0700, workspace and home 0:2000000 mode 2770", async () => {
    const sandbox = fx.sandbox();
    await sandbox.acquire("perms");
    const dir = sandbox.slotDirectory("perms");
    const profileHome = join(fx.home, "profiles", fx.profile);
    for (const private_ of [
      join(fx.home, "profiles"),
      profileHome,
      join(profileHome, "sandboxes"),
      join(profileHome, "sandboxes/docker"),
      dir,
    ]) {
      expect([private_, await modeOf(private_)]).toEqual([private_, 0o700]);
    }
    for (const name of ["workspace", "home"]) {
      const info = await stat(join(dir, name));
      expect([name, info.uid, info.gid, info.mode & 0o7777]).toEqual([
        name,
        0,
        Defaults.sandboxGid,
        0o2770,
      ]);
    }
    const made = await sandbox.exec("perms", "touch /workspace/new && stat -c '%g' /workspace/new");
    expect(made.stdout).toBe(`${Defaults.sandboxGid}\n`);
  });

  it("caps memory, pids and each tmpfs mount by default", async () => {
    const sandbox = fx.sandbox({ filesystem: "tmpfs", persistent: false });
    const { containerId } = await sandbox.acquire("task-caps");
    const host = (await docker.getContainer(containerId).inspect()).HostConfig;
    expect(host.Memory).toBe(1024 * MiB);
    expect(host.PidsLimit).toBe(512);
    const mounts = await sandbox.exec("task-caps", "grep -E ' /(workspace|root) ' /proc/mounts");
    const lines = mounts.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(/^tmpfs \/(workspace|root) tmpfs /);
      expect(line).toContain("nosuid");
      expect(line).toContain("nodev");
      expect(line).toContain("size=524288k");
      expect(line).toContain("mode=2770");
      expect(line).toContain(`gid=${Defaults.sandboxGid}`);
    }
    const full = await sandbox.exec(
      "task-caps",
      "dd if=/dev/zero of=/root/big bs=1M count=600 2>&1; echo rc=$?",
      { timeoutMs: 60_000 },
    );
    expect(full.stdout).toMatch(/No space left on device/);
  });
});

describe("disk ceiling (diskLimitBytes)", () => {
  it("fails writes past the ceiling with ENOSPC and keeps the host image within it", async () => {
    const limit = 64 * MiB;
    const sandbox = fx.sandbox({ diskLimitBytes: limit, persistent: false });
    const slot = "task-ceiling";
    const dir = sandbox.slotDirectory(slot);
    const write = await sandbox.exec(
      slot,
      "dd if=/dev/zero of=/workspace/big bs=1M count=100 2>&1; echo rc=$?",
      { timeoutMs: 60_000 },
    );
    expect(write.stdout).toMatch(/No space left on device/);
    expect(write.stdout).not.toContain("rc=0");
    const image = await stat(imageOf(dir));
    expect(image.size).toBe(limit);
    expect(image.blocks * 512).toBeLessThanOrEqual(limit);
    expect(await mountsUnder(dir)).toEqual([dir]);
    expect(await modeOf(dir)).toBe(0o700);
    expect(loopDevicesUnder(dirname(imageOf(dir)))).toHaveLength(1);
    const mounts = await sandbox.exec(slot, "grep -E ' /(workspace|root) ' /proc/mounts");
    for (const line of mounts.stdout.trim().split("\n")) {
      expect(line).toMatch(/ ext4 rw,nosuid,nodev/);
    }

    await sandbox.cleanup(slot);
    expect(await mountsUnder(dir)).toEqual([]);
    await loopDevicesGone(dirname(imageOf(dir)));
    expect(await pathExists(dir)).toBe(false);
    expect(await pathExists(imageOf(dir))).toBe(false);
  });

  it("mounts the image again when it is not mounted (a reboot), with the slot's files", async () => {
    const settings = { diskLimitBytes: 64 * MiB };
    const sandbox = fx.sandbox(settings);
    const slot = "remounted";
    const dir = sandbox.slotDirectory(slot);
    await sandbox.exec(slot, "echo kept > /workspace/note");
    await sandbox.cleanup(slot, { force: true });
    execFileSync("umount", [dir]);
    expect(await mountsUnder(dir)).toEqual([]);

    const restarted = fx.sandbox(settings);
    expect((await restarted.exec(slot, "cat /workspace/note")).stdout).toBe("kept\n");
    expect(await mountsUnder(dir)).toEqual([dir]);
    await restarted.cleanup(slot, { force: true, deleteDirs: true });
    expect(await mountsUnder(dir)).toEqual([]);
    await loopDevicesGone(dirname(imageOf(dir)));
  });

  it("refuses to make a container when the disk cannot be mounted, naming the fix", async () => {
    const sandbox = fx.sandbox({ diskLimitBytes: 64 * MiB });
    const slot = "unmountable";
    await mkdir(imageOf(sandbox.slotDirectory(slot)), { recursive: true });
    const error = await sandbox.acquire(slot).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlotDirectoryError);
    expect(error).toMatchObject({ operation: "prepare" });
    expect(String(error)).toContain("diskLimitBytes: 0");
    const made = (await containersOf(fx.profile)).filter(
      (c) => c.Labels[LabelKeys.slot] === "unmountable",
    );
    expect(made).toEqual([]);
  });
  it("names a damaged disk image and /reset, not diskLimitBytes: 0, and /reset makes a new one", async () => {
    const settings = { diskLimitBytes: 64 * MiB };
    const sandbox = fx.sandbox(settings);
    const slot = "damaged";
    const dir = sandbox.slotDirectory(slot);
    await sandbox.exec(slot, "echo lost > /workspace/note");
    await sandbox.cleanup(slot, { force: true });
    execFileSync("umount", [dir]);
    // The next mount would reuse a loop device still bound to the image (util-linux does), and
    // read the old superblock from its cache: wait until the kernel detached it.
    await loopDevicesGone(dirname(imageOf(dir)));
    // Its first 4 MiB overwritten between two runs: the superblock is gone.
    const image = await open(imageOf(dir), "r+");
    await image.write(Buffer.alloc(4 * MiB), 0, 4 * MiB, 0);
    await image.close();

    const restarted = fx.sandbox(settings);
    const error = await restarted.exec(slot, "true").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlotDirectoryError);
    expect(String(error)).toContain(`its disk image ${imageOf(dir)} holds no ext4 file system`);
    expect(String(error)).toContain("/reset deletes the slot's files with the image");
    expect(String(error)).not.toContain("diskLimitBytes: 0");

    await restarted.cleanup(slot, { force: true, deleteDirs: true });
    expect((await restarted.exec(slot, "ls /workspace")).stdout).toBe("");
    expect(await mountsUnder(dir)).toEqual([dir]);
    await restarted.cleanup(slot, { force: true, deleteDirs: true });
    expect(await mountsUnder(dir)).toEqual([]);
    await loopDevicesGone(dirname(imageOf(dir)));
  });
  it("gives a slot whose disk the sandbox filled (every inode) a container again, in another process too", async () => {
    const settings = { diskLimitBytes: 8 * MiB };
    const sandbox = fx.sandbox(settings);
    const slot = "no-inodes";
    const dir = sandbox.slotDirectory(slot);
    const session = "agent:full:telegram:dm:7";
    const fill = await sandbox.run(
      slot,
      session,
      "cd /workspace; i=0; while touch f$i 2>/dev/null; do i=$((i+1)); done; df -i . | tail -1",
      { timeoutMs: 60_000 },
    );
    // The slot's disk, every inode used. busybox df names the first mount of the device it
    // finds, /workspace or /root: the engine mounts binds of equal depth in no fixed order
    // (/root came first in 1 of 10 containers here).
    expect(fill.stdout).toMatch(/^\/dev\/loop\d+ +\d+ +\d+ +0 +100% \/(workspace|root)\n$/);
    // The container goes (the engine restarted, the OOM killer, `sandbox rm`), and the owner
    // file names a gateway process that is gone.
    await sandbox.cleanup(slot, { force: true });
    const owner = await open(join(dir, SlotOwnerFile), "r+");
    await owner.truncate(0);
    await owner.write("gone-host/boot/1/1", 0);
    await owner.close();

    const restarted = fx.sandbox(settings);
    const freed = await restarted.run(
      slot,
      session,
      "rm /workspace/f*; touch /workspace/ok && echo ok",
    );
    expect(freed.stdout).toBe("ok\n");
    expect(await readFile(join(dir, SlotOwnerFile), "utf8")).toBe(currentInstanceId());
    await restarted.cleanup(slot, { force: true, deleteDirs: true });
    expect(await mountsUnder(dir)).toEqual([]);
    await loopDevicesGone(dirname(imageOf(dir)));
  });
});

describe("deleting a slot directory", () => {
  it("leaves the directory and reports it when the delete container cannot run", async () => {
    const sandbox = fx.sandbox();
    const slot = "undeletable";
    const dir = sandbox.slotDirectory(slot);
    const { containerId } = await sandbox.acquire(slot);
    await sandbox.exec(slot, "echo precious > /workspace/data.txt");
    const broken = fx.sandbox({ image: "mediagate-no-such-image:never" });
    const error = await broken
      .cleanup(slot, { force: true, deleteDirs: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlotDirectoryError);
    expect(error).toMatchObject({ operation: "delete", slotDir: dir });
    expect(await readFile(join(dir, "workspace/data.txt"), "utf8")).toBe("precious\n");
    expect(await pathExists(join(dir, "home"))).toBe(true);
    await expect(docker.getContainer(containerId).inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it("provisions the slot for another profile and another process only after its delete", async () => {
    const slot = `shared:locked-${fx.profile}`;
    const a = fx.sandbox();
    const other = `${fx.profile}-b`;
    const b = new Sandbox({
      engine: testEngine(),
      profile: other,
      profileHome: join(fx.home, "profiles", other),
      rootHome: fx.home,
      settings: testSettings(),
    });
    const dir = a.slotDirectory(slot);
    expect(b.slotDirectory(slot)).toBe(dir);
    const child = spawn(process.execPath, [
      join(here, "fixtures/acquire-when-told.mjs"),
      `${fx.profile}-c`,
      fx.home,
      slot,
      JSON.stringify(testSettings()),
      "c-marker",
    ]);
    const events = (await docker.getEvents({
      filters: { type: ["container"] },
    })) as NodeJS.ReadableStream & { destroy(): void };
    try {
      let out = "";
      const printed = (needle: string) =>
        new Promise<void>((resolve, reject) => {
          const look = () => (out.includes(needle) ? resolve() : undefined);
          child.stdout.on("data", (chunk: Buffer) => {
            out += chunk.toString();
            look();
          });
          child.on("exit", (code) => reject(new Error(`child exited (${code}): ${out}`)));
          look();
        });
      await printed("ready\n");
      await a.exec(slot, "mkdir -p d && cd d && seq 1 2000 | xargs touch");

      const seen: { status: string; deletes: boolean; slot: boolean }[] = [];
      let onDeleteStarted: () => void = () => {};
      const deleteStarted = new Promise<void>((resolve) => {
        onDeleteStarted = resolve;
      });
      // Events arrive as JSON lines, but a chunk may end inside one (other tests' events too).
      let partial = "";
      events.on("data", (chunk: Buffer) => {
        const lines = (partial + chunk.toString()).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines.filter(Boolean)) {
          const event = JSON.parse(line) as {
            status?: string;
            Actor?: { Attributes?: Record<string, string> };
          };
          const labels = event.Actor?.Attributes ?? {};
          const deletes =
            labels[LabelKeys.slotDelete] === "1" && labels[LabelKeys.profile] === fx.profile;
          const ofSlot = labels[LabelKeys.slot] === `shared_locked-${fx.profile}`;
          if (!deletes && !ofSlot) continue;
          seen.push({ status: String(event.status), deletes, slot: ofSlot });
          if (deletes && event.status === "start") onDeleteStarted();
        }
      });

      const cleaning = a.cleanup(slot, { force: true, deleteDirs: true });
      await deleteStarted;
      child.stdin.write("go\n");
      const fromB = b.exec(slot, "echo from-b > /workspace/b-marker");
      await cleaning;
      await printed("containerId");
      expect((await fromB).exitCode).toBe(0);

      const deleteGone = seen.findIndex((e) => e.deletes && e.status === "destroy");
      const startedAt = seen.findIndex((e) => e.deletes && e.status === "start");
      const madeDuring = seen
        .map((e, i) => ({ ...e, i }))
        .filter((e) => e.slot && e.status === "create" && e.i > startedAt);
      expect(deleteGone).toBeGreaterThan(startedAt);
      expect(madeDuring.length).toBeGreaterThan(0);
      for (const made of madeDuring) expect(made.i).toBeGreaterThan(deleteGone);
      expect(await readFile(join(dir, "workspace/b-marker"), "utf8")).toBe("from-b\n");
      expect(await readFile(join(dir, "workspace/c-marker"), "utf8")).toBe(
        "from-the-other-process\n",
      );
      expect(await pathExists(join(dir, "workspace/d"))).toBe(false);
    } finally {
      events.destroy();
      child.kill();
      await b.shutdown();
      await removeProfileContainers(other);
      await removeProfileContainers(`${fx.profile}-c`);
    }
  });
});
