import { noticeFor } from "@mediagate/media";
import { afterEach, describe, expect, it } from "vitest";
import { FakeDiscord, type FakeDiscordOptions } from "../fakes/discord/index.js";
import { FaultProxy } from "../fakes/fault-proxy/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

const Token = "discord-durable-token-Pq7w2Rt9";
const HumanId = "300000000000000001";

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startFake(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = await FakeDiscord.start({ token: Token, ...options });
  cleanups.push(() => fake.close());
  return fake;
}

// SIGKILL-and-restart tests of discord-durability.test.ts, in the long suite with the others (test/long/README.md).
describe("Discord: the outbox's own notices through a crash (the real CLI, SIGKILLed)", () => {
  it("a notice posted but not recorded is created again with the same nonce: the fake returns the first", async () => {
    const withheld = noticeFor({
      status: "denied",
      path: "/etc/shadow",
      reason: "",
      candidates: [],
    });
    const fake = await startFake();
    const proxy = new FaultProxy(fake.apiRoot);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const install = await CliInstall.create("dc-notice", {
      discord: { token: Token, apiRoot: `${proxy.url}${new URL(fake.apiRoot).pathname}` },
      allowedUsers: [`discord:${HumanId}`],
      // The test counts the channel's messages: on a slow machine a turn past the progress
      // threshold would post a status message first, and the proxy would hold that one.
      progress: { enabled: false },
    });
    cleanups.push(() => install.dispose());
    const dm = fake.world.dmChannel(HumanId);
    // The reply is only a refused file: the one message is the outbox's notice. Discord posts
    // it, and its answer never comes back.
    proxy.add(
      { method: "POST", path: `${new URL(fake.apiRoot).pathname}/v10/channels/${dm}/messages` },
      { kind: "hang", stage: "after" },
    );
    await install.start();
    fake.sendDirectMessage({ content: "echo MEDIA:/etc/shadow", authorId: HumanId });
    await waitUntil(() => fake.messageCreates(dm).length === 1, "the notice to be posted");
    await install.kill();

    await install.start();
    await waitUntil(() => fake.messageCreates(dm).length === 2, "the notice to be created again");
    const creates = fake.messageCreates(dm);
    expect(creates.map((call) => call.deduplicated)).toEqual([false, true]);
    expect(creates[1]?.nonce).toBe(creates[0]?.nonce);
    expect(fake.messagesIn(dm).map((message) => message.content)).toEqual([withheld]);
  });
});

describe("Discord: a status message a SIGKILL left showing (the real CLI)", () => {
  it("is edited to say its turn was cut off before the restarted gateway posts anything else to the chat", async () => {
    const fake = await startFake();
    const install = await CliInstall.create("dc-status", {
      discord: { token: Token, apiRoot: fake.apiRoot },
      allowedUsers: [`discord:${HumanId}`],
      progress: { afterSeconds: 1 },
    });
    cleanups.push(() => install.dispose());
    const dm = fake.world.dmChannel(HumanId);
    const isStatus = (content: unknown) => String(content).startsWith("⏳ working");
    await install.start();
    fake.sendDirectMessage({
      content: "touch /tmp/began; sleep 120; echo never",
      authorId: HumanId,
    });
    // Its command runs: the turn is cut off by the kill, not run again.
    await waitUntil(() => install.hasFile("/tmp/began"), "the command to run");
    await waitUntil(
      () => fake.messagesIn(dm).some((message) => isStatus(message.content)),
      "the status message",
    );
    const statusId = fake.messagesIn(dm).find((message) => isStatus(message.content))!.id;
    const statusPath = `/channels/${dm}/messages/${statusId}`;
    // The first edit comes after the status was recorded with its turn.
    await waitUntil(
      () => fake.calls.some((call) => call.method === "PATCH" && call.path === statusPath),
      "the status to be edited",
    );
    await install.kill();

    const restart = fake.calls.length;
    await install.start();
    await waitUntil(
      () =>
        fake.messagesIn(dm).some((message) => message.content.includes("The gateway restarted")),
      "the notice for the cut-off turn",
    );
    const toChat = fake.calls
      .slice(restart)
      .filter((call) => call.path.startsWith(`/channels/${dm}/messages`));
    expect(toChat[0]).toMatchObject({
      method: "PATCH",
      path: statusPath,
      payload: { content: "⏹ cut off by a restart" },
    });
    expect(toChat.filter((call) => call.method === "POST")).toHaveLength(1);
    expect(fake.messagesIn(dm).map((message) => message.content)).toEqual([
      "⏹ cut off by a restart",
      expect.stringContaining("The gateway restarted"),
    ]);
  }, 120_000);
});
