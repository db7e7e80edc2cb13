import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, chown, copyFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { Defaults, type Sandbox, sessionHash } from "../src/index.js";
import { firstCandidateUid } from "../src/session-user.js";
import {
  containerRunning,
  docker,
  execIn,
  type Fixture,
  fixture,
  hostProcessList,
  pidsOf,
  processesMatching,
  TestImage,
} from "./helpers.js";

/*
 * Sessions of one container, attacked the way a chat user with a shell would: each test
 * fails on a sandbox that runs every session as root with its state in /tmp.
 */

/**
 * Makes a session key unique to this run. A session's uid follows from its key's hash in every
 * container, and RLIMIT_NPROC counts a uid across the whole host: with fixed keys, a fork
 * loop left running by a killed run (or running in a concurrent one) holds the same uid at
 * its process limit, and this run's session cannot fork at all.
 */
const runTag = randomBytes(4).toString("hex");
const runKey = (key: string) => `${key}-${runTag}`;

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/**
 * Makes the slot's host dirs what the sessions share: owned by root and the sandbox group,
 * setgid, group-writable (what provisioning prepares for per-session users).
 */
async function shareSlotDirs(sandbox: Sandbox, slot: string): Promise<void> {
  for (const sub of ["workspace", "home"]) {
    const dir = join(sandbox.slotDirectory(slot), sub);
    await chown(dir, 0, Defaults.sandboxGid);
    await chmod(dir, 0o2770);
  }
}

describe("sessions in one container", () => {
  let sandbox: Sandbox;
  const slot = "iso";
  const secret = `alpha-${randomBytes(6).toString("hex")}`;
  const alice = "agent:iso:telegram:dm:1001";
  const bob = "agent:iso:telegram:dm:1002";
  const aliceHash = sessionHash(alice);

  beforeAll(async () => {
    sandbox = fx.sandbox();
    await sandbox.acquire(slot);
    await shareSlotDirs(sandbox, slot);
    const set = await sandbox.run(slot, alice, `cd /tmp && export SECRET_A=${secret}`);
    expect(set.exitCode).toBe(0);
  });

  it("runs the container's PID 1 as root with four capabilities and each session as its own uid", async () => {
    const { containerId } = await sandbox.acquire(slot);
    const host = (await docker.getContainer(containerId).inspect()).HostConfig;
    expect(host.CapDrop).toEqual(["ALL"]);
    expect([...(host.CapAdd ?? [])].sort()).toEqual(["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL"]);
    expect(host.SecurityOpt).toEqual(["no-new-privileges"]);
    const nproc = Defaults.settings.sessionProcessLimit;
    expect(host.Ulimits).toEqual([{ Name: "nproc", Soft: nproc, Hard: nproc }]);
    const ids = async (key: string) =>
      (await sandbox.run(slot, key, "id -u; id -g; grep CapEff /proc/self/status")).stdout;
    const [aliceUid, gid, caps] = (await ids(alice)).trim().split("\n");
    const [bobUid] = (await ids(bob)).trim().split("\n");
    expect(Number(aliceUid)).toBeGreaterThan(Defaults.sessionUidBase);
    expect(Number(bobUid)).toBeGreaterThan(Defaults.sessionUidBase);
    expect(bobUid).not.toBe(aliceUid);
    expect(Number(gid)).toBe(Defaults.sandboxGid);
    expect(caps).toMatch(/^CapEff:\s+0+$/);
    expect((await ids(alice)).split("\n")[0]).toBe(aliceUid);
  });

  it("keeps a session's exported variables away from other sessions", async () => {
    const snoop = await sandbox.run(
      slot,
      bob,
      `cat /tmp/.mediagate/*.env /run/mediagate/s/*/env /run/mediagate/s/${aliceHash}/env; ` +
        "ls -la /run/mediagate/s /tmp/.mediagate; grep -rs SECRET_A /tmp /run /root /workspace",
    );
    expect(`${snoop.stdout}${snoop.stderr}`).not.toContain(secret);
    expect((await sandbox.run(slot, alice, 'echo "$SECRET_A"')).stdout).toBe(`${secret}\n`);
  });

  it("never runs code another session planted in its state", async () => {
    const plant = `
      for f in /tmp/.mediagate/*.env /run/mediagate/s/*/env /run/mediagate/s/${aliceHash}/env; do
        echo 'echo HIJACKED' >>"$f"
      done
      mkdir -p /tmp/.mediagate /run/mediagate/s/${aliceHash}
      echo 'echo HIJACKED' >>/run/mediagate/s/${aliceHash}/env
      rm -rf /run/mediagate/s/${aliceHash}
      true`;
    await sandbox.run(slot, bob, plant);
    const next = await sandbox.run(slot, alice, 'pwd; echo "$SECRET_A"');
    expect(next.stdout).toBe(`/tmp\n${secret}\n`);
    expect(next.stderr).toBe("");
  });

  it("keeps /proc/<pid>/environ of a session's processes unreadable to other sessions", async () => {
    await sandbox.run(slot, alice, "sleep 4441 &");
    const snoop = await sandbox.run(
      slot,
      bob,
      "for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null",
    );
    expect(snoop.stdout).not.toContain(secret);
    expect(snoop.stdout).toContain("MEDIAGATE_SESSION="); // bob reads his own
  });

  it("does not let one session signal another session's processes", async () => {
    await sandbox.run(slot, alice, "sleep 4442 &");
    const { containerId } = await sandbox.acquire(slot);
    expect(await processesMatching(containerId, "sleep 4442")).toHaveLength(1);
    const attack = await sandbox.run(
      slot,
      bob,
      "pkill -9 -f 'sleep 4442'; for p in $(pidof sleep); do kill -9 $p; done; echo tried; kill -9 -1",
    );
    expect(attack.stdout).toContain("tried");
    expect(await processesMatching(containerId, "sleep 4442")).toHaveLength(1);
    await sandbox.killSession(alice);
    expect(await processesMatching(containerId, "sleep 4442")).toEqual([]);
  });

  it("makes files in the workspace owned by the session's uid, so a setuid copy is never root's on the host", async () => {
    const workspace = join(sandbox.slotDirectory(slot), "workspace");
    await copyFile("/usr/bin/id", join(workspace, "id-source"));
    const made = await sandbox.run(
      slot,
      bob,
      "cp /workspace/id-source /workspace/id-suid && chmod 4755 /workspace/id-suid && echo made",
    );
    expect(made.stdout).toBe("made\n");
    const planted = join(workspace, "id-suid");
    const info = await stat(planted);
    expect(info.uid).toBeGreaterThan(Defaults.sessionUidBase);
    expect(info.gid).toBe(Defaults.sandboxGid);
    // Run it as host user nobody, as an attacker with a shell on the host would; the fd
    // passes the directory permissions, which are not what this test is about.
    const euid = execFileSync("bash", [
      "-c",
      'setpriv --reuid=65534 --regid=65534 --clear-groups /proc/self/fd/3 -u 3<"$1"',
      "run-as-nobody",
      planted,
    ])
      .toString()
      .trim();
    expect(euid).not.toBe("0");
    expect(euid).toBe(String(info.uid));
  });
});

describe("session uids", () => {
  it("skips a uid another session holds and gives a session the same uid every time", async () => {
    const sandbox = fx.sandbox();
    const slot = "uids";
    const { containerId } = await sandbox.acquire(slot);
    // With the warm pool on (test:warm-pool), the container's first session gets the uid
    // made ahead (docs/sandbox.md, "Warm pool"): it is another session's here.
    await sandbox.run(slot, "agent:uids:telegram:dm:3000", "true");
    const key = "agent:uids:telegram:dm:3001";
    const taken = firstCandidateUid(sessionHash(key));
    await execIn(containerId, [
      "sh",
      "-c",
      `mkdir -p /run/mediagate/uid && ln -s 0123456789abcdef /run/mediagate/uid/${taken}`,
    ]);
    const uid = async () => (await sandbox.run(slot, key, "id -u")).stdout.trim();
    const first = await uid();
    expect(first).toBe(String(taken + 1));
    await sandbox.killSession(key); // closes the shell: the next call claims again
    expect(await uid()).toBe(first);
    const other = await sandbox.run(slot, "agent:uids:telegram:dm:3002", "id -u");
    expect(other.stdout.trim()).not.toBe(first);
    const registry = await execIn(containerId, ["ls", "-ln", "/run/mediagate/uid"]);
    expect(registry).toContain(`${taken + 1} -> ${sessionHash(key)}`);
  });
});

describe("sessionIdentity: who a session's commands run as", () => {
  it("answers a session's own uid and the sandbox group, no uid for a session that never ran, and looks without starting a container", async () => {
    const sandbox = fx.sandbox();
    const slot = "who";
    const ran = "agent:who:telegram:dm:4001";
    expect(await sandbox.sessionIdentity(slot, ran)).toEqual({
      uid: undefined,
      gids: [Defaults.sandboxGid],
    });
    expect(await sandbox.status(slot)).toBeUndefined();
    const ids = (await sandbox.run(slot, ran, "id -u; id -G")).stdout.trim().split("\n");
    expect(await sandbox.sessionIdentity(slot, ran)).toEqual({
      uid: Number(ids[0]),
      gids: ids[1]!.split(" ").map(Number),
    });
    expect(await sandbox.sessionIdentity(slot, "agent:who:telegram:dm:4002")).toEqual({
      uid: undefined,
      gids: [Defaults.sandboxGid],
    });
    // Looking up claimed nothing: the session that never ran gets a uid only when it runs.
    const { containerId } = await sandbox.acquire(slot);
    const registry = await execIn(containerId, ["ls", "/run/mediagate/uid"]);
    expect(registry.trim().split("\n")).toEqual([ids[0]]);
  });

  it('answers the container\'s user and its groups with user: "root"', async () => {
    const sandbox = fx.sandbox({ user: "root" });
    expect(await sandbox.sessionIdentity("who-root", "a")).toEqual({ uid: undefined, gids: [] });
    const ids = (await sandbox.run("who-root", "a", "id -u; id -G")).stdout.trim().split("\n");
    expect(ids[0]).toBe("0");
    expect(await sandbox.sessionIdentity("who-root", "b")).toEqual({
      uid: 0,
      gids: ids[1]!.split(" ").map(Number),
    });
  });
});

describe("a fork loop in one session", () => {
  let sandbox: Sandbox;
  const slot = "forks";
  const attacker = runKey("agent:forks:telegram:dm:2001");
  const admin = runKey("agent:forks:telegram:dm:2002");
  let containerId: string;

  beforeAll(async () => {
    sandbox = fx.sandbox({ pidsLimit: 80, sessionProcessLimit: 24 });
    ({ containerId } = await sandbox.acquire(slot));
  });

  const count = async (needle: string) => (await processesMatching(containerId, needle)).length;
  /**
   * A loop that holds its uid at the process limit for good: busybox sh gives up when a
   * fork fails, so an outer loop keeps starting inner ones that fork until they fail.
   */
  const forkLoop = (tag: number) =>
    `while :; do sh -c 'while :; do sleep ${tag} & done' 2>/dev/null; done`;

  it("leaves other sessions able to run commands", async () => {
    await sandbox.run(
      slot,
      attacker,
      "i=0; while [ $i -lt 200 ]; do sleep 4451 & i=$((i+1)); done 2>/dev/null",
    );
    const ok = await sandbox.run(slot, admin, "echo ok");
    expect(ok).toMatchObject({ exitCode: 0, stdout: "ok\n" });
    expect(await count("sleep 4451")).toBeGreaterThan(10);
    expect(await count("sleep 4451")).toBeLessThan(24);
    expect(await sandbox.killSession(attacker)).toBeGreaterThan(10);
    expect(await count("sleep 4451")).toBe(0);
  });

  it("still kills a forking command on timeout and keeps its shell", async () => {
    const pending = sandbox.run(slot, attacker, forkLoop(4452), { timeoutMs: 3_000 });
    await waitUntil(async () => (await count("sleep 4452")) > 10, "the flood running");
    expect((await sandbox.run(slot, admin, "echo meanwhile")).stdout).toBe("meanwhile\n");
    const result = await pending;
    expect(result.timedOut).toBe(true);
    await waitUntil(async () => (await count("sleep 4452")) === 0, "the flood killed");
    expect((await sandbox.run(slot, attacker, "echo alive")).stdout).toBe("alive\n");
  });

  it("kills a timed-out command even when its session is at its process limit", async () => {
    // The flood leaves exactly one free slot, which the foreground sleep takes: the kill
    // cannot fork as the session's uid and falls back to root.
    const full = "sh -c 'while :; do sleep 4456 & done' 2>/dev/null; sleep 4457";
    const result = await sandbox.run(slot, attacker, full, { timeoutMs: 3_000 });
    expect(result.timedOut).toBe(true);
    await waitUntil(async () => (await count("sleep 445")) === 0, "every sleep killed");
    expect((await sandbox.run(slot, attacker, "echo alive")).stdout).toBe("alive\n");
  });

  it("killSession stops a session that keeps forking in the background", async () => {
    await sandbox.run(slot, attacker, `(${forkLoop(4453)}) & echo bg`);
    await waitUntil(async () => (await count("sleep 4453")) > 5, "the second flood running");
    const killed = await sandbox.killSession(attacker);
    expect(killed).toBeGreaterThan(5);
    expect(await count("sleep 445")).toBe(0);
    expect((await sandbox.run(slot, admin, "echo ok")).stdout).toBe("ok\n");
    expect((await sandbox.run(slot, attacker, "echo back")).stdout).toBe("back\n");
  });

  it("killSession stops a session whose processes each fork the next and exit", async () => {
    // Each generation lives for one fork, a few milliseconds (a builtin loop, so the
    // container's init reaps the ones gone before the uid reaches its process limit): a kill
    // that stops what it found and scans again finds a new one every round, never a set
    // that stays. A chain whose fork fails ends, so a loop starts new ones. Each generation
    // counts itself in /tmp/hops: a `ps` catches one of them only now and then, and under a
    // loaded machine's scheduling it caught none for 30 s.
    const spin = (n: number) => `i=0; while [ $i -lt ${n} ]; do i=$((i+1)); done`;
    const hop = `hop() { ${spin(100)}; echo >>/tmp/hops; hop & exit 0; }; hop`;
    const walkers = `(while :; do sh -c '${hop}'; ${spin(20_000)}; done)`;
    await sandbox.run(slot, attacker, `rm -f /tmp/hops; ${walkers} >/dev/null 2>&1 & echo bg`);
    const hops = async () =>
      Number((await execIn(containerId, ["sh", "-c", "cat /tmp/hops 2>/dev/null | wc -l"])).trim());
    await waitUntil(async () => (await hops()) >= 3, "the walkers running");
    expect(await sandbox.killSession(attacker)).toBeGreaterThan(0);
    // A surviving generation or outer loop would go on counting: none may show in any of
    // several snapshots, and the count stays.
    const counted = await hops();
    for (let look = 0; look < 5; look++) expect(await count("hop()")).toBe(0);
    expect(await hops()).toBe(counted);
    expect((await sandbox.run(slot, attacker, "echo back")).stdout).toBe("back\n");
  });

  it("kills a process that disguises its name in /proc/<pid>/stat", async () => {
    // A name with ") Z" and a newline once made the killer read it as a zombie and skip it.
    await sandbox.run(
      slot,
      attacker,
      "sh -c 'printf \"x) Z\\n\" >/proc/$$/comm; while :; do sleep 4457; done # disguised' & echo bg",
    );
    await waitUntil(
      async () => (await count("# disguised")) === 1,
      "the disguised process running",
    );
    await sandbox.killSlot(slot);
    expect(await count("# disguised")).toBe(0);
  });

  it("killSlot kills every session's processes in the slot but not the container", async () => {
    await sandbox.run(slot, attacker, `(${forkLoop(4454)}) & echo bg`);
    await sandbox.run(slot, admin, "sleep 4455 & echo bg");
    await waitUntil(async () => (await count("sleep 4454")) > 5, "the third flood running");
    const main = await processesMatching(containerId, "sleep infinity"); // init and its child
    const killed = await sandbox.killSlot(slot);
    expect(killed).toBeGreaterThan(6);
    expect(await count("sleep 445")).toBe(0);
    expect(await processesMatching(containerId, "sleep infinity")).toEqual(main);
    expect(await containerRunning(containerId)).toBe(true);
    expect((await sandbox.run(slot, admin, "echo ok")).stdout).toBe("ok\n");
    expect(await sandbox.killSlot("no-such-slot")).toBe(0);
  });
});

describe("a container at its pids limit", () => {
  const PidsLimit = 64;

  /**
   * A session's fork loop that never gives up: an interactive shell does not exit when a
   * fork fails, it reads the next `sleep … &` from `yes`. It waits for /tmp/go, so that
   * every session has started one before the container is full.
   */
  const loop = (tag: number) =>
    `(while [ ! -e /tmp/go ]; do sleep 0.1; done; yes 'sleep ${tag} &' | sh -i) >/dev/null 2>&1 & echo started`;

  it("killSlot ends four sessions' fork loops on the first try, running nothing inside", async () => {
    const sandbox = fx.sandbox({ pidsLimit: PidsLimit, sessionProcessLimit: 24 });
    const slot = "full";
    const { containerId } = await sandbox.acquire(slot);
    await shareSlotDirs(sandbox, slot);
    for (const n of [1, 2, 3, 4]) {
      const started = await sandbox.run(
        slot,
        runKey(`agent:full:telegram:dm:${3000 + n}`),
        loop(4471),
      );
      expect(started.stdout).toBe("started\n");
    }
    await sandbox.run(slot, runKey("agent:full:telegram:dm:3005"), "touch /tmp/go");
    await waitUntil(async () => (await pidsOf(containerId)) >= PidsLimit, "the container full");
    const flood = async () =>
      (await hostProcessList(containerId)).filter((p) => /sleep 4471|sh -i|^yes/.test(p));
    expect((await flood()).length).toBeGreaterThan(40);
    const execs = (await docker.getContainer(containerId).inspect()).ExecIDs ?? [];

    const killed = await sandbox.killSlot(slot);

    expect(killed).toBeGreaterThan(40);
    expect(await flood()).toEqual([]);
    const execsAfter = (await docker.getContainer(containerId).inspect()).ExecIDs ?? [];
    expect(execsAfter.filter((id) => !execs.includes(id))).toEqual([]);
    expect(await containerRunning(containerId)).toBe(true);
    expect(
      (await sandbox.run(slot, runKey("agent:full:telegram:dm:3001"), "echo back")).stdout,
    ).toBe("back\n");
  });
});

describe("one-shot exec", () => {
  it("runs as the dedicated one-shot uid, never root", async () => {
    const sandbox = fx.sandbox();
    const result = await sandbox.exec("oneshot", "id -u; id -g; umask; echo $HOME");
    expect(result.stdout).toBe(`${Defaults.sessionUidBase}\n${Defaults.sandboxGid}\n0002\n/root\n`);
    const argv = await sandbox.exec("oneshot", ["id", "-u"]);
    expect(argv.stdout).toBe(`${Defaults.sessionUidBase}\n`);
  });
});

describe('user: "root"', () => {
  it("runs everything as root with no capabilities, as before", async () => {
    const sandbox = fx.sandbox({ user: "root" });
    const { containerId } = await sandbox.acquire("rooted");
    const host = (await docker.getContainer(containerId).inspect()).HostConfig;
    expect(host.CapAdd ?? []).toEqual([]);
    expect(host.Ulimits ?? []).toEqual([]);
    const a = await sandbox.run("rooted", "a", "id -u; export X=1; sleep 4461 &");
    expect(a.stdout).toBe("0\n");
    expect((await sandbox.exec("rooted", "id -u")).stdout).toBe("0\n");
    expect((await sandbox.run("rooted", "b", 'echo "x=$X"')).stdout).toBe("x=\n");
    expect(await sandbox.killSlot("rooted")).toBeGreaterThanOrEqual(1);
    expect(await processesMatching(containerId, "sleep 4461")).toEqual([]);
  });

  describe("with an image whose USER is not root", () => {
    const image = `mediagate-sandbox:test-user-${randomBytes(4).toString("hex")}`;
    let own: Fixture;
    beforeAll(async () => {
      own = await fixture();
      const source = await docker.createContainer({ Image: TestImage, Cmd: ["true"] });
      try {
        const [repo, tag] = image.split(":");
        await source.commit({ repo, tag, changes: "USER 1000" });
      } finally {
        await source.remove({ force: true, v: true });
      }
    });
    afterAll(async () => {
      await own?.dispose();
      await docker.getImage(image).remove({ force: true });
    });

    it("/stop all kills the processes of its commands, which run as that user", async () => {
      const sandbox = own.sandbox({ user: "root", image });
      const { containerId } = await sandbox.acquire("user-1000");
      const started = await sandbox.exec(
        "user-1000",
        "id -u; for n in 4462 4463; do sleep $n >/dev/null 2>&1 & done; echo bg",
      );
      expect(started.stdout).toBe("1000\nbg\n");
      const sleeps = async () =>
        [
          ...(await processesMatching(containerId, "sleep 4462")),
          ...(await processesMatching(containerId, "sleep 4463")),
        ].length;
      expect(await sleeps()).toBe(2);
      expect(await sandbox.killSlot("user-1000")).toBe(2);
      expect(await sleeps()).toBe(0);
      expect(await containerRunning(containerId)).toBe(true);
      expect((await sandbox.exec("user-1000", "echo back")).stdout).toBe("back\n");
    });
  });
});
