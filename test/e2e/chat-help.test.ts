import type { Gateway } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDiscord, StoredMessage } from "../fakes/discord/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const AdminLines = ["/status — ", "/stop — ", "/stop all — ", "/reset — "];

/** What every help answer holds, whoever asks: the bot, what a message does, files. */
function expectAbout(text: string, profile: string): void {
  expect(text).toContain(`🤖 mediagate, profile "${profile}" (shell agent).`);
  expect(text).toContain("Each message is run as a shell command in this chat's sandbox");
  expect(text).toContain("/workspace/inbox/");
  expect(text).toContain("/help — this text");
  // The task commands are every allowed user's (docs/schedules.md).
  for (const line of [
    "/every <interval> <prompt> — ",
    "/at <HH:MM",
    '/cron "<min',
    "/tasks — ",
    "/tz [zone] — ",
  ])
    expect(text).toContain(line);
}

function expectAdminCommands(text: string, shown: boolean): void {
  for (const line of AdminLines) {
    if (shown) expect(text).toContain(line);
    else expect(text).not.toContain(line);
  }
}

/**
 * First contact, end to end: `/start` (what Telegram sends when someone opens the bot) and
 * `/help` answer with what the bot is and the commands the sender may use, through the real
 * gateway, grammY and discord.js against the fakes; nothing runs in a sandbox for them. A
 * command that fails reads as if typed into `sh`, never naming the gateway's wrapper.
 */
describe("/start and /help over Telegram", () => {
  const Admin = 1101;
  const Member = 1102;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-help", [
      { admins: [Admin], allowed: [Member] },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = async (user: number, text: string): Promise<string[]> => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: user, text }));
    return bot.texts(user, since);
  };

  it("answers /start and /help of an allowed user with the bot, how to send files and /help only; nothing runs", async () => {
    for (const command of ["/start", "/help", "/start some-deep-link"]) {
      const texts = await ask(Member, command);
      expect(texts).toHaveLength(1);
      expectAbout(texts[0]!, bot.profile);
      expect(texts[0]).toContain("Files: send a photo, document, voice note");
      expect(texts[0]).toContain("up to 20 MB each");
      expectAdminCommands(texts[0]!, false);
      expect(texts[0]).not.toContain("not found");
    }
    expect(await bot.containers()).toEqual([]);
  });

  it("lists the admin commands for an admin", async () => {
    const [text] = await ask(Admin, "/start");
    expectAbout(text!, bot.profile);
    expect(text).toContain("Commands (you are an admin):");
    expectAdminCommands(text!, true);
    const [help] = await ask(Admin, `/help@${bot.fake.bot.username}`);
    expect(help).toBe(text);
  });

  it("shows a failing command's error as sh's own, never the wrapper's eval or line numbers", async () => {
    const texts = await ask(Member, "/nosuchcommand");
    expect(texts).toEqual(["sh: /nosuchcommand: not found\n[exit code 127]"]);
    const twoLines = await ask(Member, "echo first\nnosuch-two");
    expect(twoLines).toEqual(["first\nsh: nosuch-two: not found\n[exit code 127]"]);
    expect(await ask(Member, "cd /nonexistent")).toEqual([
      expect.not.stringMatching(/eval|line \d{2,}/),
    ]);
  });
});

describe("/start and /help over Discord", () => {
  const Token = "discord-help-e2e-token-Qw7x";
  const Admin = "310000000000000001";
  const Member = "310000000000000002";
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;
  let gateway: Gateway;
  let profile = "";

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dhelp", Token, {
      profile: { admins: [`discord:${Admin}`], allowedUsers: [`discord:${Member}`] },
    });
    ({ fake, gateway, profile } = harness);
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** The next message the bot posts in `channelId` after the ones already there. */
  async function nextPost(channelId: string, send: () => void): Promise<StoredMessage> {
    const before = fake.messagesIn(channelId).length;
    send();
    await fake.waitForCall(() => fake.messagesIn(channelId).length > before);
    await gateway.idle();
    return fake.messagesIn(channelId)[before]!;
  }

  it("answers /help of an allowed user in a DM with /help only, and of an admin with the admin commands", async () => {
    const memberDm = fake.world.dmChannel(Member);
    const member = await nextPost(memberDm, () =>
      fake.sendDirectMessage({ content: "/help", authorId: Member }),
    );
    expectAbout(member.content, profile);
    expect(member.content).toContain("Files: attach them to a message (up to 26.2 MB each)");
    expectAdminCommands(member.content, false);

    const adminDm = fake.world.dmChannel(Admin);
    const admin = await nextPost(adminDm, () =>
      fake.sendDirectMessage({ content: "/start", authorId: Admin }),
    );
    expectAbout(admin.content, profile);
    expectAdminCommands(admin.content, true);
  });

  it("tells a guild channel how to address the bot", async () => {
    const channel = fake.guild.channels[0]!.id;
    const post = await nextPost(channel, () =>
      fake.sendGuildMessage(channel, { content: "/help", mentionBot: true, authorId: Member }),
    );
    expectAbout(post.content, profile);
    expect(post.content).toContain(`when mentioned (<@${fake.botUser.id}>)`);
    expectAdminCommands(post.content, false);
  });
});
