import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";

const Token = "discord-models-e2e-token-Zq4v";
const Admin = "300000000000000201";

/**
 * `/model` and the fallback notice on Discord (docs/models-and-usage.md): the real gateway and
 * discord.js against the Discord fake and two fake model endpoints, in a DM.
 */
describe("gateway over Discord: models", () => {
  let main: FakeOpenAIServer;
  let backup: FakeOpenAIServer;
  let harness: DiscordGatewayHarness;

  beforeAll(async () => {
    main = await FakeOpenAIServer.start();
    backup = await FakeOpenAIServer.start();
    harness = await DiscordGatewayHarness.start("d-models", Token, {
      profile: {
        admins: [`discord:${Admin}`],
        agent: {
          kind: "openai",
          models: [
            { name: "main", baseUrl: main.baseUrl, model: "main-model" },
            { name: "backup", baseUrl: backup.baseUrl, model: "backup-model" },
          ],
          fallback: ["backup"],
        },
      },
    });
  });

  afterAll(async () => {
    await harness?.close();
    await main?.close();
    await backup?.close();
  });

  /** Sends a DM as the admin and answers what the bot said back in it. */
  const say = async (content: string, answers = 1) => {
    const { fake } = harness;
    const channel = fake.world.dmChannel(Admin);
    const since = fake.messagesIn(channel).length;
    fake.sendDirectMessage({ content, authorId: Admin });
    await waitUntil(() => fake.messagesIn(channel).length >= since + answers, "the answer");
    await harness.gateway.idle();
    return fake
      .messagesIn(channel)
      .slice(since)
      .map((message) => message.content);
  };

  it("tells the DM once that a fallback answered, before the reply", async () => {
    main.enqueue(reply.rateLimited(120_000));
    backup.enqueue(reply.text("backup here"));
    expect(await say("hello", 2)).toEqual([
      "↪️ Answered by backup: main answered HTTP 429.",
      "backup here",
    ]);
  });

  it("switches the session with a typed /model", async () => {
    expect(await say("/model backup")).toEqual([
      "✅ This session now uses backup (backup-model). The conversation goes on.",
    ]);
    backup.enqueue(reply.text("still backup"));
    const before = main.requests.length;
    expect(await say("again")).toEqual(["still backup"]);
    expect(main.requests).toHaveLength(before);
  });
});
