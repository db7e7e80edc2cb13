import { DiscordAPIError, REST, Routes } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { FakeDiscord } from "./index.js";

let fake: FakeDiscord | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A discord.js REST client pointed at a fresh fake, and a user's message in a guild channel. */
async function setUp() {
  fake = await FakeDiscord.start();
  const rest = new REST({ api: fake.apiRoot, retries: 0 }).setToken(fake.token);
  const channel = fake.guild.channels[0]!.id;
  const message = fake.sendGuildMessage(channel, { content: "hi" });
  const route = (emoji: string, messageId = message.id) =>
    Routes.channelMessageOwnReaction(channel, messageId, encodeURIComponent(emoji));
  return { fake, rest, channel, message, route };
}

describe("fake Discord reactions with the real discord.js REST", () => {
  it("adds and removes the bot's own reactions, keeping each change in order", async () => {
    const { fake, rest, channel, message, route } = await setUp();
    await rest.put(route("👀"));
    await rest.put(route("👨‍💻"));
    await rest.delete(route("👀"));
    await rest.delete(route("👀"));
    expect(fake.reactions.on(channel, message.id)).toEqual(["👨‍💻"]);
    expect(fake.reactions.changes.map((c) => `${c.op} ${c.emoji}`)).toEqual([
      "add 👀",
      "add 👨‍💻",
      "remove 👀",
      "remove 👀",
    ]);
  });

  it("answers Unknown Emoji for a custom emoji and Unknown Message for a message it lacks", async () => {
    const { fake, rest, route } = await setUp();
    const custom = await rest.put(route("party:123456789012345678")).catch((e: unknown) => e);
    expect(custom).toBeInstanceOf(DiscordAPIError);
    expect((custom as DiscordAPIError).code).toBe(10014);
    const missing = await rest.put(route("👍", "999999999999999999")).catch((e: unknown) => e);
    expect((missing as DiscordAPIError).code).toBe(10008);
    expect(fake.reactions.changes).toEqual([]);
  });
});
