import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { Defaults, maxOpenShellsOf } from "../src/index.js";
import { ClaimScript } from "../src/session-user.js";
import { execIn, execsDuring, type Fixture, fixture, processesMatching } from "./helpers.js";

let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterAll(async () => {
  await fx.dispose();
});

/**
 * Session shells (controllers) running in a container: the `sh` processes a `docker exec`
 * started directly (parent outside the container's pid namespace, so ppid 0). A command's
 * subshell is a fork of its controller and has the controller as parent.
 */
async function openShells(containerId: string): Promise<number> {
  const lines = (await execIn(containerId, ["ps", "-o", "ppid,args"])).split("\n").slice(1);
  return lines.filter((line) => /^\s*0\s+sh\s*$/.test(line)).length;
}

/** A clock the test moves by hand (`SandboxOptions.now`). */
function handClock(): { now: () => number; advance: (ms: number) => void } {
  let ms = Date.now();
  return { now: () => ms, advance: (by) => (ms += by) };
}

/** Of the execs a run of calls made: session shells opened and session uids claimed. */
function tally(commands: readonly string[]): { opens: number; claims: number; others: number } {
  const opens = commands.filter((c) => c === "sh").length;
  const claims = commands.filter((c) => c.startsWith(`sh -c ${ClaimScript.slice(0, 20)}`)).length;
  return { opens, claims, others: commands.length - opens - claims };
}

describe("open session shells per container", () => {
  it("closes the least recently used idle shell at maxOpenShells once unused for shellKeepMs; its session keeps cwd and exports", async () => {
    const clock = handClock();
    const sandbox = fx.sandbox({ maxOpenShells: 2 }, { now: clock.now });
    const slot = "cap";
    const { containerId } = await sandbox.acquire(slot);
    await sandbox.run(slot, "a", "mkdir -p /tmp/a && cd /tmp/a && export COLOR=blue");
    clock.advance(1);
    await sandbox.run(slot, "b", "cd /tmp");
    expect(await openShells(containerId)).toBe(2);
    clock.advance(Defaults.shellKeepMs);
    await sandbox.run(slot, "c", "true");
    await waitUntil(async () => (await openShells(containerId)) === 2, "a's shell exited");
    // b was used after a, so a was closed; it comes back in a new shell with its state
    // (b is closed for it: unused for shellKeepMs as well).
    const [again, execs] = await execsDuring(containerId, () =>
      sandbox.run(slot, "a", 'pwd; echo "$COLOR"'),
    );
    expect(again.stdout).toBe("/tmp/a\nblue\n");
    expect(tally(execs)).toEqual({ opens: 1, claims: 0, others: 0 });
    await waitUntil(async () => (await openShells(containerId)) === 2, "b's shell exited");
    expect((await sandbox.run(slot, "b", "pwd")).stdout).toBe("/tmp\n");
    expect(await openShells(containerId)).toBe(2);
  });

  it("sessions beyond the cap taking turns keep their shells and uids: no open or claim per call", async () => {
    // A cap derived from a small pids limit; one session more than it holds.
    const settings = { pidsLimit: 24, maxOpenShells: undefined };
    const cap = maxOpenShellsOf({ ...settings, memoryBytes: Defaults.settings.memoryBytes });
    const sessions = Array.from({ length: cap + 1 }, (_, i) => `cyclic-${i}`);
    const rounds = 4;
    // The clock stands still: every shell counts as just used, however slow the engine is.
    const sandbox = fx.sandbox(settings, { now: handClock().now });
    const slot = "cap-cyclic";
    const { containerId } = await sandbox.acquire(slot);
    const [outputs, execs] = await execsDuring(containerId, async () => {
      const seen: string[] = [];
      for (let round = 0; round < rounds; round++) {
        for (const [i, session] of sessions.entries()) {
          const command = round === 0 ? `export N=${i}; echo $N` : 'echo "$N"';
          seen.push((await sandbox.run(slot, session, command)).stdout);
        }
      }
      return seen;
    });
    // Every session kept its own state on every call, in a shell or not.
    expect(outputs).toEqual(
      Array.from({ length: rounds }, () => sessions.map((_, i) => `${i}\n`)).flat(),
    );
    const { opens, claims, others } = tally(execs);
    expect(claims).toBe(sessions.length); // one per session, not one per call
    expect(opens).toBe(cap); // the least recently used shell was not closed in turn
    expect(others).toBe(rounds); // the one session without a shell, a one-shot exec per call
    expect(await openShells(containerId)).toBe(cap);
  });

  it("a session's uid, once known, is not asked of the container again (sessionIdentity)", async () => {
    const sandbox = fx.sandbox();
    const slot = "cap-identity";
    const { containerId } = await sandbox.acquire(slot);
    await sandbox.run(slot, "known", "true");
    const [identity, execs] = await execsDuring(containerId, () =>
      sandbox.sessionIdentity(slot, "known"),
    );
    expect(identity.uid).toBeGreaterThan(Defaults.sessionUidBase);
    expect(execs).toEqual([]);
  });

  it("runs a session's command as a one-shot exec while every open shell is busy", async () => {
    const sandbox = fx.sandbox({ maxOpenShells: 1 });
    const slot = "cap-busy";
    const { containerId } = await sandbox.acquire(slot);
    await sandbox.run(slot, "b", "cd /tmp && export SHAPE=round");
    const stop = new AbortController();
    const busy = sandbox.run(slot, "a", "sleep 300", { signal: stop.signal });
    try {
      const started = async () => (await processesMatching(containerId, "sleep 300")).length > 0;
      await waitUntil(started, "the command running");
      const meanwhile = await sandbox.run(slot, "b", 'pwd; echo "$SHAPE"');
      expect(meanwhile).toMatchObject({ exitCode: 0, stdout: "/tmp\nround\n" });
      expect(await openShells(containerId)).toBe(1);
    } finally {
      stop.abort();
      await busy;
    }
  });

  it("ends a one-shot exec when its command does, though a job it started in the background runs on", async () => {
    const sandbox = fx.sandbox({ maxOpenShells: 1 });
    const slot = "cap-background";
    const { containerId } = await sandbox.acquire(slot);
    const stop = new AbortController();
    const busy = sandbox.run(slot, "a", "sleep 300", { signal: stop.signal });
    try {
      const started = async () => (await processesMatching(containerId, "sleep 300")).length > 0;
      await waitUntil(started, "the command running");
      // The background job holds the exec's stdout and stderr open: before, the one-shot
      // waited for them to close (this engine gives up 2 s after the exec's process ended,
      // others never), so the call ran to its time limit and killed the job.
      const server = await sandbox.run(slot, "b", "sleep 4461 & echo started", {
        timeoutMs: 1_500,
      });
      expect(server).toMatchObject({ exitCode: 0, stdout: "started\n", timedOut: false });
      expect(await processesMatching(containerId, "sleep 4461")).toHaveLength(1);
      expect(await openShells(containerId)).toBe(1);
    } finally {
      stop.abort();
      await busy;
      await sandbox.killSession("b");
    }
  });

  it("counts shells per container: another slot's container has its own room", async () => {
    const sandbox = fx.sandbox({ maxOpenShells: 1 });
    const first = await sandbox.acquire("cap-one");
    const second = await sandbox.acquire("cap-two");
    await sandbox.run("cap-one", "a", "true");
    await sandbox.run("cap-two", "a", "true");
    expect(await openShells(first.containerId)).toBe(1);
    expect(await openShells(second.containerId)).toBe(1);
  });

  it("counts the shells of every profile sharing a container: one profile's cannot push the container past the cap", async () => {
    const slot = `shared:cap-${fx.profile}`;
    const mine = fx.sandbox({ maxOpenShells: 1 });
    const neighbour = await fixture({ home: fx.home });
    try {
      const theirs = neighbour.sandbox({ maxOpenShells: 1 });
      const { containerId } = await mine.acquire(slot);
      expect((await theirs.acquire(slot)).containerId).toBe(containerId);
      await mine.run(slot, "a", "cd /tmp");
      // The container is full with the other profile's shell, which this one cannot close.
      const [result, execs] = await execsDuring(containerId, () => theirs.run(slot, "b", "pwd"));
      expect(result.stdout).toBe("/workspace\n");
      expect(execs.filter((command) => command === "sh")).toEqual([]);
      expect(await openShells(containerId)).toBe(1);
      expect((await mine.run(slot, "a", "pwd")).stdout).toBe("/tmp\n");
    } finally {
      await neighbour.dispose();
    }
  });

  it("refuses a maxOpenShells below 1", () => {
    expect(() => fx.sandbox({ maxOpenShells: 0 })).toThrow(/maxOpenShells/);
  });
});
