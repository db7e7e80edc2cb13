import { Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleRecorder, SandboxLostNotice } from "./harness/console-recorder.js";
import { DockerObserver } from "./harness/docker-observer.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
  waitUntil,
} from "./harness/gateway-home.js";

describe("gateway whose sandbox container goes away mid-command", () => {
  const profile = uniqueProfileName("e2e-lost");
  const docker = new DockerObserver();
  let home = "";
  let gateway: Gateway | undefined;
  let channel: ConsoleRecorder;

  beforeAll(async () => {
    home = await createTempHome("lost");
    const env = testEnv(home);
    const config = resolveConfig(
      { home, profiles: [{ name: profile, sandbox: { image: TestImage, diskLimitBytes: 0 } }] },
      { env },
    );
    channel = new ConsoleRecorder(profile);
    gateway = await Gateway.create(config, { channels: [channel] });
    await gateway.start();
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
  });

  it("tells the chat the sandbox stopped, and the next message runs in a new container", async () => {
    channel.send("echo ready");
    await gateway!.idle();
    expect(channel.texts).toEqual(["ready"]);
    const [first] = await docker.profileContainers(profile);
    expect(first).toBeDefined();

    channel.send("sleep 300");
    await waitUntil(
      async () => (await docker.processes(first!.id)).some((p) => p.includes("sleep 300")),
      "the command is running",
    );
    await docker.removeForce(first!.id);
    await gateway!.idle();
    expect(channel.texts).toEqual(["ready", SandboxLostNotice]);

    channel.send("echo again");
    await gateway!.idle();
    expect(channel.texts).toEqual(["ready", SandboxLostNotice, "again"]);
    const now = await docker.profileContainers(profile);
    expect(now.map((c) => c.id)).not.toContain(first!.id);
    expect(now).toHaveLength(1);
  });
});
