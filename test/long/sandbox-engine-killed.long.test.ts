import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyEnv, Gateway, resolveConfig } from "@mediagate/gateway";
import {
  connectDocker,
  Defaults,
  DockerUnavailableError,
  Sandbox,
  SandboxLostError,
} from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleRecorder, SandboxLostNotice } from "../e2e/harness/console-recorder.js";
import { TestImage, waitUntil } from "../e2e/harness/gateway-home.js";
import { PrivateEngine } from "./private-engine.js";

/**
 * Issue 9: with the engine stopped or killed mid-command the chat got `(no output) [exit
 * code -1]` as if the command had ended. The engine here is the test's own dockerd (see
 * PrivateEngine), SIGKILLed by pid while a command runs in one of its containers and
 * started again before each test ends, so the shared engine is never touched.
 */

const Sleeper = "sleep 300";

let engine: PrivateEngine;
beforeAll(async () => {
  engine = await PrivateEngine.start(TestImage);
}, 180_000);
afterAll(async () => {
  await engine?.dispose();
});

/** Waits until `sleep 300` runs in the container, SIGKILLs the engine, and awaits `call`. */
async function killEngineDuring(
  containerId: string,
  call: Promise<unknown>,
): Promise<PromiseSettledResult<unknown>> {
  const [settled] = await Promise.all([
    Promise.allSettled([call]),
    (async () => {
      await waitUntil(
        async () => (await engine.processes(containerId)).some((p) => p.includes(Sleeper)),
        "the command runs",
      );
      await engine.kill();
    })(),
  ]);
  return settled[0] as PromiseSettledResult<unknown>;
}

const Calls = [
  {
    mode: "a session shell command",
    call: (sandbox: Sandbox, slot: string) => sandbox.run(slot, "s", `echo started; ${Sleeper}`),
  },
  {
    mode: "a one-shot exec",
    call: (sandbox: Sandbox, slot: string) => sandbox.exec(slot, `echo started; ${Sleeper}`),
  },
] as const;

describe("a Docker engine killed mid-command", () => {
  it.each(Calls)(
    "$mode is reported as lost, and the next command re-provisions once the engine is back",
    async ({ call }) => {
      const home = await mkdtemp(join(tmpdir(), "mg-engine-home-"));
      const profile = `kill-${randomBytes(4).toString("hex")}`;
      const sandbox = new Sandbox({
        engine: connectDocker({ host: engine.host }),
        profile,
        profileHome: join(home, "profiles", profile),
        rootHome: home,
        settings: { ...Defaults.settings, image: TestImage, diskLimitBytes: 0 },
      });
      const slot = "default";
      try {
        const { containerId } = await sandbox.acquire(slot);
        try {
          const outcome = await killEngineDuring(containerId, call(sandbox, slot));
          expect(outcome.status).toBe("rejected");
          const error = (outcome as PromiseRejectedResult).reason;
          expect(error).toBeInstanceOf(SandboxLostError);
          expect(error).toMatchObject({ reason: "engine-unreachable", slot, containerId });
          await expect(sandbox.run(slot, "s", "echo down")).rejects.toBeInstanceOf(
            DockerUnavailableError,
          );
        } finally {
          await engine.restart();
        }
        const again = await sandbox.run(slot, "s", "echo again");
        expect(again).toMatchObject({ exitCode: 0, stdout: "again\n" });
        expect((await sandbox.status(slot))?.state).toBe("running");
      } finally {
        await sandbox.shutdown();
        for (const id of await engine.containers(`mediagate.profile=${profile}`)) {
          await engine.remove(id);
        }
        await rm(home, { recursive: true, force: true });
      }
    },
  );

  it("the gateway tells the chat the sandbox stopped, and answers the next message once the engine is back", async () => {
    const home = await mkdtemp(join(tmpdir(), "mg-engine-gw-"));
    const profile = `kill-gw-${randomBytes(4).toString("hex")}`;
    const env = { ...emptyEnv(home), dockerHost: engine.host };
    const config = resolveConfig(
      { home, profiles: [{ name: profile, sandbox: { image: TestImage, diskLimitBytes: 0 } }] },
      { env },
    );
    const channel = new ConsoleRecorder(profile);
    const gateway = await Gateway.create(config, { channels: [channel] });
    try {
      await gateway.start();
      channel.send("echo ready");
      await gateway.idle();
      expect(channel.texts).toEqual(["ready"]);
      const [containerId] = await engine.containers(`mediagate.profile=${profile}`);
      try {
        channel.send(Sleeper);
        await killEngineDuring(containerId as string, gateway.idle());
        expect(channel.texts).toEqual(["ready", SandboxLostNotice]);
      } finally {
        await engine.restart();
      }
      channel.send("echo again");
      await gateway.idle();
      expect(channel.texts).toEqual(["ready", SandboxLostNotice, "again"]);
    } finally {
      await gateway.stop();
      for (const id of await engine.containers(`mediagate.profile=${profile}`)) {
        await engine.remove(id);
      }
      await rm(home, { recursive: true, force: true });
    }
  });
});
