import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { Defaults } from "../src/index.js";
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

describe("open session shells per container", () => {
  it("closes the least recently used idle shell at maxOpenShells; its session keeps cwd and exports", async () => {
    const sandbox = fx.sandbox({ maxOpenShells: 2 });
    const slot = "cap";
    const { containerId } = await sandbox.acquire(slot);
    await sandbox.run(slot, "a", "mkdir -p /tmp/a && cd /tmp/a && export COLOR=blue");
    await sandbox.run(slot, "b", "cd /tmp");
    expect(await openShells(containerId)).toBe(2);
    await sandbox.run(slot, "c", "true");
    expect(await openShells(containerId)).toBe(2);
    // b was used after a, so a was closed; it comes back in a new shell with its state.
    const again = await sandbox.run(slot, "a", 'pwd; echo "$COLOR"');
    expect(again.stdout).toBe("/tmp/a\nblue\n");
    expect(await openShells(containerId)).toBe(2);
    expect((await sandbox.run(slot, "b", "pwd")).stdout).toBe("/tmp\n");
    expect(await openShells(containerId)).toBe(2);
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

  it("counts shells per container: another slot's container has its own room", async () => {
    const sandbox = fx.sandbox({ maxOpenShells: 1 });
    const first = await sandbox.acquire("cap-one");
    const second = await sandbox.acquire("cap-two");
    await sandbox.run("cap-one", "a", "true");
    await sandbox.run("cap-two", "a", "true");
    expect(await openShells(first.containerId)).toBe(1);
    expect(await openShells(second.containerId)).toBe(1);
  });

  it("refuses a maxOpenShells below 1", () => {
    expect(() => fx.sandbox({ maxOpenShells: 0 })).toThrow(/maxOpenShells/);
  });
});
