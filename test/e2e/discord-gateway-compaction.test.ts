import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeInteraction } from "../fakes/discord/index.js";
import {
  contentText,
  FakeOpenAIServer,
  factsModel,
  isSummaryRequest,
} from "../fakes/openai/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";

const Token = "discord-compact-e2e-token-Zt4k";
const Member = "300000000000000002";
const Filler = "a sentence that only takes room in the conversation. ".repeat(8);

async function answerOf(interaction: FakeInteraction): Promise<string> {
  await waitUntil(
    () => (interaction.original?.content ?? "") !== "",
    `the answer to /${interaction.commandName}`,
  );
  return interaction.original!.content;
}

/**
 * `/compact` and `/new` end to end on Discord: discord.js against the fake, typed in a DM and
 * picked from the slash menu, with the openai agent against the fake model.
 */
describe("gateway over Discord: /compact and /new", () => {
  let model: FakeOpenAIServer;
  let harness: DiscordGatewayHarness;

  beforeAll(async () => {
    model = (await FakeOpenAIServer.start()).respondWith(factsModel());
    harness = await DiscordGatewayHarness.start("e2e-dcompact", Token, {
      profile: {
        allowedUsers: [`discord:${Member}`],
        agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
      },
    });
    await waitUntil(
      () => harness.fake.interactions.commands().length > 0,
      "the commands registered",
    );
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  const finishedTurns = () =>
    harness.logs.filter((line) => line.includes('"msg":"turn finished"')).length;

  /**
   * Sends a DM and waits for the bot's answer there; for a turn, for the turn to end first (its
   * reply streams as an edited preview, deleted once the final is delivered: docs/streaming.md).
   */
  async function dm(content: string): Promise<string> {
    const { fake } = harness;
    const channel = fake.world.dmChannel(Member);
    const before = fake.messagesIn(channel).length;
    const turns = finishedTurns();
    fake.sendDirectMessage({ content, authorId: Member });
    if (!content.startsWith("/")) await waitUntil(() => finishedTurns() > turns, "the turn ended");
    await fake.waitForCall(() => fake.messagesIn(channel).length > before);
    return fake.messagesIn(channel)[before]!.content;
  }

  it("registers the openai agent's commands, /compact with its optional focus", () => {
    const commands = harness.fake.interactions.commands();
    expect(commands.map((c) => c.name)).toEqual([
      "help",
      "new",
      "compact",
      "model",
      "usage",
      "every",
      "at",
      "cron",
      "tasks",
      "tz",
      "status",
      "stop",
      "reset",
    ]);
    expect(commands.find((c) => c.name === "compact")?.options).toEqual([
      expect.objectContaining({ name: "focus", type: 3, required: false, max_length: 1000 }),
    ]);
  });

  it("compacts, typed and from the slash menu, each with a focus", async () => {
    expect(await dm("remember FACT{the server is called Orion}")).toBe("noted");
    for (let n = 0; n < 3; n++) expect(await dm(`turn ${n}: ${Filler}`)).toBe("noted");

    const typedBefore = model.requests.length;
    expect(await dm("/compact the server name")).toMatch(/^🗜️ Compacted: \d+ older messages/);
    const summary = model.requests.slice(typedBefore).find(isSummaryRequest);
    expect(contentText(summary?.body.messages[0]?.content)).toContain("the server name");

    expect(await dm(`turn 3: ${Filler}`)).toBe("noted");
    expect(await dm(`turn 4: ${Filler}`)).toBe("noted");
    const slashBefore = model.requests.length;
    const slash = harness.fake.sendSlashCommand({
      name: "compact",
      options: { focus: "the machine\nnames" },
      authorId: Member,
    });
    expect(await answerOf(slash)).toMatch(/^🗜️ Compacted: \d+ older messages/);
    const slashSummary = model.requests.slice(slashBefore).find(isSummaryRequest);
    expect(contentText(slashSummary?.body.messages[0]?.content)).toContain("the machine names");

    expect(await dm("recall")).toBe("I remember: FACT{the server is called Orion}");
  });

  it("starts a new conversation from the slash menu", async () => {
    const slash = harness.fake.sendSlashCommand({ name: "new", authorId: Member });
    expect(await answerOf(slash)).toBe(
      "🆕 New conversation started; the sandbox and its files are kept.",
    );
    const next = model.requests.length;
    expect(await dm("recall")).toBe("I remember: nothing");
    expect(model.requests[next]!.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
  });
});
