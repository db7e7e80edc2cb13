import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { type Sandbox, SandboxLostError } from "../src/index.js";
import { containerExists, docker, type Fixture, fixture, processesMatching } from "./helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
beforeAll(async () => {
  fx = await fixture();
  sandbox = fx.sandbox({ orphanReaper: false });
});
afterAll(async () => {
  await fx.dispose();
});

/** A command that runs until something outside ends it, found in `ps` by {@link Sleeper}. */
const Sleeper = "sleep 300";
const LongCommand = `echo started; ${Sleeper}`;

/**
 * Starts `call` (a command that runs `sleep`), waits until its process is in the container,
 * then does `cut` to the container and returns what the call settled with.
 */
async function cutMidCommand(
  slot: string,
  call: (command: string) => Promise<unknown>,
  cut: (containerId: string) => Promise<void>,
): Promise<{ containerId: string; outcome: PromiseSettledResult<unknown> }> {
  const { containerId } = await sandbox.acquire(slot);
  const settled = Promise.allSettled([call(LongCommand)]);
  const started = async () => (await processesMatching(containerId, Sleeper)).length > 0;
  await waitUntil(started, "the command running");
  await cut(containerId);
  const [outcome] = await settled;
  return { containerId, outcome: outcome as PromiseSettledResult<unknown> };
}

const removeIt = (id: string) => docker.getContainer(id).remove({ force: true, v: true });
const stopIt = (id: string) => docker.getContainer(id).stop({ t: 0 });

describe("a sandbox that goes away mid-command", () => {
  it("reports a session command whose container was removed as lost, and provisions anew next", async () => {
    const slot = "lost-removed";
    const { containerId, outcome } = await cutMidCommand(
      slot,
      (command) => sandbox.run(slot, "s", command),
      removeIt,
    );
    expect(outcome.status).toBe("rejected");
    const error = (outcome as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(SandboxLostError);
    expect(error).toMatchObject({ reason: "container-gone", slot, containerId });

    const next = await sandbox.run(slot, "s", "echo again");
    expect(next).toMatchObject({ exitCode: 0, stdout: "again\n" });
    const now = await sandbox.status(slot);
    expect(now?.state).toBe("running");
    expect(now?.containerId).not.toBe(containerId);
  });

  it("reports a one-shot exec whose container was removed as lost", async () => {
    const slot = "lost-exec";
    const { outcome } = await cutMidCommand(
      slot,
      (command) => sandbox.exec(slot, command),
      removeIt,
    );
    expect(outcome.status).toBe("rejected");
    expect((outcome as PromiseRejectedResult).reason).toMatchObject({
      name: "SandboxLostError",
      reason: "container-gone",
    });
    expect((await sandbox.exec(slot, "echo again")).stdout).toBe("again\n");
  });

  it("reports a command whose container was stopped as lost, and runs the next one", async () => {
    const slot = "lost-stopped";
    const { containerId, outcome } = await cutMidCommand(
      slot,
      (command) => sandbox.run(slot, "s", command),
      stopIt,
    );
    expect((outcome as PromiseRejectedResult).reason).toMatchObject({
      name: "SandboxLostError",
      reason: "container-gone",
    });
    const exec = await cutMidCommand(slot, (command) => sandbox.exec(slot, command), stopIt);
    expect((exec.outcome as PromiseRejectedResult).reason).toMatchObject({
      name: "SandboxLostError",
      reason: "container-gone",
    });
    // Reused across processes: the stopped container is started again for the next command.
    expect((await sandbox.run(slot, "s", "echo again")).stdout).toBe("again\n");
    expect(await containerExists(containerId)).toBe(true);
  });

  it("keeps a command killed by a signal inside a running container as its result", async () => {
    const slot = "lost-not";
    expect(await sandbox.exec(slot, "kill -9 $$")).toMatchObject({ exitCode: 137 });
    // The command kills its session's shell (the controller, `$$` in the command's subshell):
    // a result, and a new shell for the next command.
    const killed = await sandbox.run(slot, "s", "echo before; kill -9 $$");
    expect(killed).toMatchObject({ exitCode: 137, stdout: "before\n" });
    expect((await sandbox.run(slot, "s", "echo after")).stdout).toBe("after\n");
  });
});
