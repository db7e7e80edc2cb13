import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../../test-support/engine.js";
import { waitUntil } from "../../../test-support/wait.js";
import { LabelKeys } from "../src/labels.js";
import { sessionHash } from "../src/session-hash.js";
import { sessionUser } from "../src/session-user.js";
import {
  containerExists,
  containersOf,
  docker,
  execIn,
  execsDuring,
  type Fixture,
  fixture,
  loopDevicesGone,
  manualTimers,
  mountsUnder,
  pathExists,
  processesMatching,
  testSettings,
} from "./helpers.js";

/** Per-session settings with a pool of one; the reaper off so only the tests reap. */
const Pooled = { persistent: false, orphanReaper: false, warmPool: 1 };

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/** The pool's slot directories and disk images left in the fixture's profile. */
async function poolLeftovers(): Promise<string[]> {
  const sandboxes = join(fx.home, "profiles", fx.profile, "sandboxes");
  const found: string[] = [];
  for (const dir of [join(sandboxes, "docker"), join(sandboxes, "disks", "docker")]) {
    const names = await readdir(dir).catch(() => []);
    found.push(...names.filter((name) => name.includes("mediagate-warm-pool")));
  }
  return found;
}

describe("the warm pool", () => {
  it("hands a new session the container it made beforehand, with the session's directory", async () => {
    const sandbox = fx.sandbox(Pooled, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const [warm] = sandbox.warmContainers();
    expect(warm).toBeDefined();
    const before = await containersOf(fx.profile);

    const { containerId } = await sandbox.acquire("session:claim-a");
    expect(containerId).toBe(warm);
    // No container was made for the claim: the one the session got existed before it came.
    expect(before.map((c) => c.Id)).toContain(containerId);
    const wrote = await sandbox.run("session:claim-a", "a", "echo hello > /workspace/note");
    expect(wrote.exitCode).toBe(0);
    const note = join(sandbox.slotDirectory("session:claim-a"), "workspace", "note");
    expect(await readFile(note, "utf8")).toBe("hello\n");
    await sandbox.cleanup("session:claim-a");
    expect(await containerExists(containerId)).toBe(false);
    expect(await pathExists(sandbox.slotDirectory("session:claim-a"))).toBe(false);
    await sandbox.shutdown();
  });

  it("runs a new session's first command in the shell and uid it made ahead, no exec on the way", async () => {
    const sandbox = fx.sandbox(Pooled, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const slot = "session:ahead-a";
    const { containerId } = await sandbox.acquire(slot);
    const [first, execs] = await execsDuring(containerId, () =>
      sandbox.run(slot, "ahead-a", "id -u; pwd; cd /tmp; export KEPT=yes"),
    );
    // The uid claim and the shell were made while the container waited: nothing now.
    expect(execs).toEqual([]);
    expect(first.exitCode).toBe(0);
    const [uid, cwd] = first.stdout.trim().split("\n");
    expect(Number(uid)).toBeGreaterThan(0);
    expect(cwd).toBe("/workspace");
    const second = await sandbox.run(slot, "ahead-a", "pwd; echo $KEPT; id -u");
    expect(second.stdout.trim().split("\n")).toEqual(["/tmp", "yes", uid]);

    // The registry names the session, not the placeholder the uid was claimed for: the
    // session's state directory is its own, and no other is left.
    const hash = sessionHash("ahead-a");
    expect((await execIn(containerId, ["readlink", `/run/mediagate/uid/${uid}`])).trim()).toBe(
      hash,
    );
    expect((await execIn(containerId, ["ls", "/run/mediagate/s"])).trim()).toBe(hash);
    expect(
      (await execIn(containerId, ["stat", "-c", "%u %a", `/run/mediagate/s/${hash}`])).trim(),
    ).toBe(`${uid} 700`);
    await sandbox.shutdown();
  });

  it("gives the handed-over uid to the session for good: claims, lookups and /stop find it", async () => {
    const sandbox = fx.sandbox(Pooled, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const slot = "session:ahead-kill";
    const { containerId } = await sandbox.acquire(slot);
    const started = await sandbox.run(
      slot,
      "ahead-kill",
      "id -u; (exec sleep 4321) >/dev/null 2>&1 &",
    );
    const uid = Number(started.stdout.trim());
    expect(await processesMatching(containerId, "sleep 4321")).toHaveLength(1);

    // A process that never saw the hand-over (a restarted gateway) asks the container: the
    // session's uid is found, and a claim gives the same one (never a second uid).
    const hash = sessionHash("ahead-kill");
    expect(await sessionUser(docker, containerId, hash, false)).toEqual({
      uid,
      gid: expect.any(Number),
    });
    expect((await sessionUser(docker, containerId, hash, true)).uid).toBe(uid);

    expect(await sandbox.killSession("ahead-kill")).toBeGreaterThanOrEqual(1);
    await waitUntil(
      async () => (await processesMatching(containerId, "sleep 4321")).length === 0,
      "the session's background process killed",
    );
    await sandbox.cleanup(slot);
    await sandbox.shutdown();
  });

  it("opens the session's shell the usual way when the one made ahead is gone", async () => {
    const sandbox = fx.sandbox(Pooled, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const slot = "session:ahead-lost";
    const { containerId } = await sandbox.acquire(slot);
    // The waiting shell and hand-over die (as they would with an engine restart).
    const waiting = "ps -o pid,args | awk '($2 == \"sh\" && NF == 2) || /hand-ove[r]/ {print $1}'";
    await execIn(containerId, ["sh", "-c", `kill -9 $(${waiting})`]);
    expect(await processesMatching(containerId, "hand-over")).toEqual([]);
    const [ran, execs] = await execsDuring(containerId, () =>
      sandbox.run(slot, "ahead-lost", "id -u; echo ok"),
    );
    expect(ran.stdout.trim().split("\n")[1]).toBe("ok");
    expect(execs.some((command) => command.includes("mediagate-claim"))).toBe(true);
    const uid = ran.stdout.trim().split("\n")[0];
    const hash = sessionHash("ahead-lost");
    expect((await execIn(containerId, ["readlink", `/run/mediagate/uid/${uid}`])).trim()).toBe(
      hash,
    );
    await sandbox.shutdown();
  });

  it("keeps the uid a session claimed before its first command (a file read back for it)", async () => {
    const warnings: string[] = [];
    const sandbox = fx.sandbox(Pooled, {
      schedule: manualTimers().schedule,
      onWarning: (message) => warnings.push(message),
    });
    await sandbox.warmUp();
    const slot = "session:ahead-read";
    const { containerId } = await sandbox.acquire(slot);
    expect(
      await sandbox.readFile(slot, "/etc/hostname", 1024, { sessionKey: "ahead-read" }),
    ).toBeDefined();
    const hash = sessionHash("ahead-read");
    const claimed = (await sessionUser(docker, containerId, hash, false))?.uid;
    expect(claimed).toBeGreaterThan(0);
    const ran = await sandbox.run(slot, "ahead-read", "id -u; touch /workspace/mine; echo ok");
    expect(ran.stdout.trim().split("\n")).toEqual([String(claimed), "ok"]);
    const owner = await execIn(containerId, ["stat", "-c", "%u", "/workspace/mine"]);
    expect(owner.trim()).toBe(String(claimed));
    // Not a failed hand-over: the uid made ahead was never offered to a session with one.
    expect(warnings).toEqual([]);
    await sandbox.cleanup(slot);
    await sandbox.shutdown();
  });

  it("hands a root-mode session the shell made ahead too", async () => {
    const sandbox = fx.sandbox({ ...Pooled, user: "root" }, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const slot = "session:ahead-root";
    const { containerId } = await sandbox.acquire(slot);
    const [ran, execs] = await execsDuring(containerId, () =>
      sandbox.run(slot, "ahead-root", "id -u; cd /tmp"),
    );
    expect(execs).toEqual([]);
    expect(ran.stdout.trim()).toBe("0");
    expect((await sandbox.run(slot, "ahead-root", "pwd")).stdout.trim()).toBe("/tmp");
    await sandbox.cleanup(slot);
    await sandbox.shutdown();
  });

  it("in root mode, /stop ends a shell loop a command left behind in the shell made ahead", async () => {
    // Root mode finds a session's processes by the marker in their environment alone. The
    // shell made ahead started before its session was known, so its environment has none:
    // a loop its command forks (no `exec`, so no environment of its own) must get one anyway.
    const sandbox = fx.sandbox({ ...Pooled, user: "root" }, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const slot = "session:ahead-root-loop";
    const { containerId } = await sandbox.acquire(slot);
    const started = await sandbox.run(
      slot,
      "ahead-root-loop",
      "( while :; do :; done ) >/dev/null 2>&1 & echo $!",
    );
    const pid = started.stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    const alive = async () =>
      (await execIn(containerId, ["ls", "/proc"])).split(/\s+/).includes(pid);
    expect(await alive()).toBe(true);
    expect(await sandbox.killSession("ahead-root-loop")).toBeGreaterThanOrEqual(1);
    await waitUntil(async () => !(await alive()), "the session's loop killed");
    await sandbox.cleanup(slot);
    await sandbox.shutdown();
  });

  it("refills after a claim and never hands a used container to another session", async () => {
    const sandbox = fx.sandbox(Pooled, { schedule: manualTimers().schedule });
    await sandbox.warmUp();
    const first = (await sandbox.acquire("session:user-1")).containerId;
    await sandbox.run("session:user-1", "u1", "echo mine > /workspace/private");
    await sandbox.warmUp();
    const [refilled] = sandbox.warmContainers();
    expect(refilled).toBeDefined();
    expect(refilled).not.toBe(first);
    await sandbox.cleanup("session:user-1");

    const second = (await sandbox.acquire("session:user-2")).containerId;
    expect(second).toBe(refilled);
    const seen = await sandbox.run("session:user-2", "u2", "ls -A /workspace");
    expect(seen.stdout).not.toContain("private");
    await sandbox.warmUp();
    expect(sandbox.warmContainers()).not.toContain(first);
    expect(sandbox.warmContainers()).not.toContain(second);
    await sandbox.shutdown();
    expect(await containersOf(fx.profile)).toEqual([]);
  });

  it("empties itself after the idle period and refills for the next new session", async () => {
    const timers = manualTimers();
    const sandbox = fx.sandbox(Pooled, { schedule: timers.schedule });
    await sandbox.warmUp();
    const [warm] = sandbox.warmContainers();
    if (warm === undefined) throw new Error("the pool did not fill");
    timers.fireAll();
    expect(sandbox.warmContainers()).toEqual([]);
    await waitUntil(async () => !(await containerExists(warm)), "the idle warm container removed");

    const cold = (await sandbox.acquire("session:after-idle")).containerId;
    expect(cold).not.toBe(warm);
    await sandbox.warmUp();
    expect(sandbox.warmContainers()).toHaveLength(1);
    await sandbox.shutdown();
    expect(await containersOf(fx.profile)).toEqual([]);
  });

  it("hands a tmpfs session a warm container whose /workspace only it has used", async () => {
    const sandbox = fx.sandbox(
      { ...Pooled, filesystem: "tmpfs" },
      { schedule: manualTimers().schedule },
    );
    await sandbox.warmUp();
    const [warm] = sandbox.warmContainers();
    const { containerId } = await sandbox.acquire("session:tmpfs-a");
    expect(containerId).toBe(warm);
    const listed = await sandbox.run(
      "session:tmpfs-a",
      "a",
      "ls -A /workspace; stat -c %a /workspace",
    );
    // Nothing in it (no file of anyone before), and the mode sessions share (busybox drops the 2).
    expect(listed.stdout.trim()).toMatch(/^2?770$/);
    await sandbox.shutdown();
    expect(await containersOf(fx.profile)).toEqual([]);
  });

  it("is not used when warmPool is 0", async () => {
    const sandbox = fx.sandbox({ ...Pooled, warmPool: 0 });
    await sandbox.warmUp();
    expect(sandbox.warmContainers()).toEqual([]);
    expect(await containersOf(fx.profile)).toEqual([]);
    await sandbox.shutdown();
  });

  it("moves a slot's disk to the session that claims its container", async () => {
    const sandbox = fx.sandbox(
      { ...Pooled, diskLimitBytes: 64 * 1024 * 1024 },
      { schedule: manualTimers().schedule },
    );
    await sandbox.warmUp();
    const slot = "session:disk-claim";
    const slotDir = sandbox.slotDirectory(slot);
    await sandbox.acquire(slot);
    expect(await mountsUnder(slotDir)).toEqual([slotDir]);
    const written = await sandbox.run(slot, "d", "echo on-disk > /workspace/f && df -k /workspace");
    expect(written.exitCode).toBe(0);
    // The workspace is the 64 MiB disk, not the host's filesystem.
    const sizeKb = Number(written.stdout.trim().split("\n").at(-1)?.split(/\s+/)[1]);
    expect(sizeKb).toBeLessThan(70 * 1024);
    expect(await readFile(join(slotDir, "workspace", "f"), "utf8")).toBe("on-disk\n");
    expect((await stat(join(dirname(dirname(slotDir)), "disks", "docker"))).isDirectory()).toBe(
      true,
    );
    await sandbox.cleanup(slot);
    await sandbox.shutdown();
    expect(await mountsUnder(join(fx.home, "profiles", fx.profile))).toEqual([]);
    await loopDevicesGone(fx.home);
  });

  it("leaves no directory, disk or loop device of a fill that failed", async () => {
    const warnings: string[] = [];
    // The engine refuses the create (below its 6 MB memory minimum) after the slot's
    // directory and disk were made.
    const sandbox = fx.sandbox(
      { ...Pooled, diskLimitBytes: 64 * 1024 * 1024, memoryBytes: 1024 * 1024 },
      { schedule: manualTimers().schedule, onWarning: (message) => warnings.push(message) },
    );
    await sandbox.warmUp();
    expect(sandbox.warmContainers()).toEqual([]);
    expect(warnings).toContain("could not fill the warm pool");
    await sandbox.shutdown();
    expect(await poolLeftovers()).toEqual([]);
    expect(await mountsUnder(join(fx.home, "profiles", fx.profile))).toEqual([]);
    await loopDevicesGone(fx.home);
  });

  it("makes nothing when the image is missing", async () => {
    const warnings: string[] = [];
    const sandbox = fx.sandbox(
      {
        ...Pooled,
        diskLimitBytes: 64 * 1024 * 1024,
        image: "example.invalid/mediagate-sandbox:never-built",
      },
      { schedule: manualTimers().schedule, onWarning: (message) => warnings.push(message) },
    );
    await sandbox.warmUp();
    expect(warnings).toContain("could not fill the warm pool");
    // Not even for a moment: the image is looked for before the slot's directory is made.
    expect(await poolLeftovers()).toEqual([]);
    expect(await mountsUnder(join(fx.home, "profiles", fx.profile))).toEqual([]);
    await sandbox.shutdown();
  });

  it("leaves nothing of a killed process's pool after the next reap", async () => {
    const script = join(dirname(fileURLToPath(import.meta.url)), "fixtures/hold-warm.mjs");
    const settings = JSON.stringify(testSettings(Pooled));
    const child = spawn(process.execPath, [
      script,
      fx.profile,
      fx.home,
      settings,
      "session:crashed",
      testDockerHost() ?? "",
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
    let held: { claimed: string; ready: string[] };
    try {
      held = JSON.parse(await printed) as typeof held;
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    expect(held.ready).toHaveLength(1);
    const sandbox = fx.sandbox(Pooled);
    const sessionDir = sandbox.slotDirectory("session:crashed");
    expect(await pathExists(join(sessionDir, "workspace", "marker"))).toBe(true);
    const left = await containersOf(fx.profile);
    expect(left.map((c) => c.Id).sort()).toEqual([held.claimed, ...held.ready].sort());
    expect(left.every((c) => c.Labels[LabelKeys.persistent] === "0")).toBe(true);

    await sandbox.reapOrphans();
    expect(await containersOf(fx.profile)).toEqual([]);
    expect(await pathExists(sessionDir)).toBe(false);
    const slotRoot = dirname(sessionDir);
    const { readdir } = await import("node:fs/promises");
    expect(await readdir(slotRoot)).toEqual([]);
    await sandbox.shutdown();
  });
});
