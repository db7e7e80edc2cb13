import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LabelKeys, type Sandbox, sessionHash } from "../src/index.js";
import { stateDirectory } from "../src/shell-scripts.js";
import { docker, type Fixture, fixture } from "./helpers.js";

/*
 * Everything a session can write outside /workspace and /root is bounded: the root filesystem
 * is read-only, and /tmp, /var/tmp and /run/mediagate are tmpfs mounts of `scratchBytes`.
 * Each test writes 300 MB where it should not fit, and the container keeps working.
 */

const MiB = 1024 * 1024;
const Scratch = 16 * MiB;
const Tries = 300;

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/**
 * A shell line writing 300 MB into `file`, then printing `rc=<dd's exit code>` and
 * `size=<bytes that landed>` (0 when nothing could be made).
 */
function fill(file: string): string {
  return `dd if=/dev/zero of=${file} bs=1M count=${Tries} 2>&1; echo rc=$?; echo size=$(wc -c < ${file} 2>/dev/null || echo 0)`;
}

/** What `fill` reported: dd's output, its exit code and the bytes written. */
function filled(stdout: string): { said: string; rc: number; size: number } {
  const rc = Number(/rc=(\d+)/.exec(stdout)?.[1]);
  const size = Number(/size=\s*(\d+)/.exec(stdout)?.[1]);
  return { said: stdout, rc, size };
}

/** The rw mounts of the container as `<mount point> <fs type> <options>` lines. */
async function writableMounts(sandbox: Sandbox, slot: string): Promise<string[]> {
  const out = await sandbox.exec(slot, "cat /proc/mounts");
  return out.stdout
    .trim()
    .split("\n")
    .map((line) => line.split(" "))
    .filter(([, , , options]) => options?.split(",").includes("rw"))
    .map(([, point, type, options]) => `${point} ${type} ${options}`);
}

/** Pseudo filesystems nothing can fill: the kernel's own views and counters. */
const Pseudo = new Set(["proc", "devpts", "mqueue", "sysfs", "cgroup", "cgroup2"]);

describe("a per-session container's writable places", () => {
  let sandbox: Sandbox;
  const slot = "writable";
  const alice = "agent:w:telegram:dm:1";
  const bob = "agent:w:telegram:dm:2";

  beforeAll(async () => {
    sandbox = fx.sandbox({ scratchBytes: Scratch });
    await sandbox.acquire(slot);
  });

  it("mounts the root filesystem read-only and every other writable filesystem sized", async () => {
    const { containerId } = await sandbox.acquire(slot);
    expect((await docker.getContainer(containerId).inspect()).HostConfig.ReadonlyRootfs).toBe(true);
    const all = await sandbox.exec(slot, "cat /proc/mounts");
    expect(all.stdout).toMatch(/^overlay \/ overlay ro[,\s]/m);
    const writable = await writableMounts(sandbox, slot);
    for (const line of writable) {
      const [point = "", type = "", options = ""] = line.split(" ");
      if (point === "/workspace" || point === "/root" || Pseudo.has(type)) continue;
      expect([line, type]).toEqual([line, "tmpfs"]);
      // Every tmpfs has a size, except the cgroup directory, which nobody can write to.
      if (point !== "/sys/fs/cgroup") expect(options).toMatch(/(^|,)size=\d+k/);
    }
    for (const point of ["/tmp", "/var/tmp", "/run/mediagate"]) {
      const line = writable.find((l) => l.startsWith(`${point} `));
      expect([point, line]).toEqual([point, expect.stringContaining("size=16384k")]);
      expect(line).toContain("nosuid");
      expect(line).toContain("nodev");
    }
  });

  it.each(["/tmp", "/var/tmp"])("stops 300 MB into %s at scratchBytes with ENOSPC", async (dir) => {
    const result = filled((await sandbox.run(slot, alice, fill(`${dir}/big`))).stdout);
    expect(result.said).toContain("No space left on device");
    expect(result.rc).not.toBe(0);
    expect(result.size).toBeGreaterThan(Scratch - 2 * MiB);
    expect(result.size).toBeLessThanOrEqual(Scratch);
    await sandbox.run(slot, alice, `rm -f ${dir}/big`);
  });

  it("stops 300 MB into the session's own state directory at scratchBytes", async () => {
    const dir = stateDirectory(sessionHash(alice));
    const result = filled((await sandbox.run(slot, alice, fill(`${dir}/big`))).stdout);
    expect(result.said).toContain("No space left on device");
    expect(result.size).toBeLessThanOrEqual(Scratch);
    await sandbox.run(slot, alice, `rm -f ${dir}/big`);
  });

  it.each(["/", "/etc", "/bin", "/run", "/var"])(
    "refuses 300 MB into %s: nothing lands",
    async (dir) => {
      const result = filled((await sandbox.run(slot, alice, fill(`${dir}/big`))).stdout);
      expect(result.said).toMatch(/Read-only file system|Permission denied/);
      expect(result.rc).not.toBe(0);
      expect(result.size).toBe(0);
      // Root (the gateway's housekeeping, with DAC_OVERRIDE) cannot write there either.
      const asRoot = await sandbox.exec(slot, `id -u; ${fill(`${dir}/big`)}`);
      expect(asRoot.stdout).toContain("Read-only file system");
    },
  );

  it("keeps working with every scratch mount full: commands, a new session, then state again", async () => {
    const stateFill = `${stateDirectory(sessionHash(alice))}/full`;
    await sandbox.run(
      slot,
      alice,
      [fill("/tmp/full"), fill("/var/tmp/full"), fill(stateFill)].join("; "),
    );
    const df = await sandbox.exec(slot, "df -k /tmp /var/tmp /run/mediagate | tail -n 3");
    for (const line of df.stdout.trim().split("\n")) expect(line).toMatch(/\s0\s+100%/);
    expect((await sandbox.run(slot, alice, "echo ok")).stdout).toBe("ok\n");
    // A session that never ran here still gets its uid and runs.
    const other = await sandbox.run(slot, bob, "id -u");
    expect(other.exitCode).toBe(0);
    expect(Number(other.stdout)).toBeGreaterThan(2_000_001);
    // Once the space is free again, state is kept again.
    await sandbox.run(slot, alice, `rm -f /tmp/full /var/tmp/full ${stateFill}`);
    await sandbox.run(slot, bob, "export B=1 && cd /workspace && mkdir -p sub && cd sub");
    expect((await sandbox.run(slot, bob, "echo $B; pwd")).stdout).toBe("1\n/workspace/sub\n");
  });
});

describe("a root-mode container's writable places", () => {
  it("refuses writes to its root filesystem and stops /tmp and /run/mediagate at scratchBytes", async () => {
    const sandbox = fx.sandbox({ user: "root", scratchBytes: Scratch, persistent: false });
    const slot = "task-root-writable";
    for (const dir of ["/", "/etc", "/bin"]) {
      const result = filled((await sandbox.run(slot, "s", fill(`${dir}/big`))).stdout);
      expect([dir, result.said]).toEqual([dir, expect.stringContaining("Read-only file system")]);
      expect(result.size).toBe(0);
    }
    for (const dir of ["/tmp", "/var/tmp", "/run/mediagate"]) {
      const result = filled((await sandbox.run(slot, "s", fill(`${dir}/big`))).stdout);
      expect([dir, result.said]).toEqual([dir, expect.stringContaining("No space left")]);
      expect(result.size).toBeLessThanOrEqual(Scratch);
    }
    await sandbox.run(slot, "s", "cd /workspace && export R=1");
    expect((await sandbox.run(slot, "s", "echo $R; pwd")).stdout).toBe("1\n/workspace\n");
    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
  });
});

describe("the /run/mediagate volume", () => {
  it("goes with its container, also for a tmpfs filesystem", async () => {
    const sandbox = fx.sandbox({ filesystem: "tmpfs", persistent: false, scratchBytes: Scratch });
    const slot = "task-volume";
    const { containerId } = await sandbox.acquire(slot);
    expect((await sandbox.run(slot, "s", "echo x > /workspace/f && cat /workspace/f")).stdout).toBe(
      "x\n",
    );
    const mounts = (await docker.getContainer(containerId).inspect()).Mounts;
    const volume = mounts.find((m) => m.Destination === "/run/mediagate");
    expect(volume?.Type).toBe("volume");
    const name = volume?.Name ?? "";
    const labelled = await docker.getVolume(name).inspect();
    expect(labelled.Labels?.[LabelKeys.install]).toBe(fx.install);

    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
    await expect(docker.getVolume(name).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
