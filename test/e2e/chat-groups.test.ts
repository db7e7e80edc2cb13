import type { Gateway } from "@mediagate/gateway";
import type { Message, Update } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDiscord } from "../fakes/discord/index.js";
import type { FakeTelegram } from "../fakes/telegram/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

/**
 * Groups stay quiet unless addressed (docs/sessions.md, "Groups"), end to end: the real
 * gateway from its config, grammY and discord.js against the fakes, the shell agent in the real
 * engine. Each row is one group update; a turn shows as the command's output in the chat and
 * its marker file in the container, no turn as neither (and no call to that chat at all).
 */
describe("Telegram groups: requireMention (default) and allowedChats", () => {
  const Admin = 1201;
  const Member = 1202;
  const Team = -100_120_001;
  const Outside = -100_120_002;
  /** A basic group, listed, that is upgraded to a supergroup by a test. */
  const Basic = -120_003;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let fromBot: Message;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-groups", [
      {
        admins: [Admin],
        allowed: [Member],
        telegram: { groups: { allowedChats: [Team, Basic] } },
      },
    ]);
    bot = harness.bot();
    // Something the bot said in the group, to reply to.
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendGroupText({
        chatId: Team,
        userId: Member,
        text: `@${fake.bot.username} echo the bot speaks`,
      }),
    );
    const answer = bot.callsIn(Team, since).find((c) => c.method === "sendMessage" && c.ok);
    fromBot = answer?.result as Message;
  });

  afterAll(async () => {
    await harness?.close();
  });

  const name = () => bot.fake.bot.username;
  type Row = {
    readonly what: string;
    readonly send: (fake: FakeTelegram, marker: string) => Update;
    /** The reply the chat gets when it is a turn; `undefined`: ignored. */
    readonly reply: ((marker: string) => RegExp) | undefined;
  };
  const run = (marker: string) => `touch /workspace/${marker}; echo ran ${marker}`;
  const ran = (marker: string) => new RegExp(`^ran ${marker}$`);
  const rows: Row[] = [
    {
      what: "plain text",
      send: (fake, m) => fake.sendGroupText({ chatId: Team, userId: Member, text: run(m) }),
      reply: undefined,
    },
    {
      what: "a mention of the bot (stripped before the agent sees it)",
      send: (fake, m) =>
        fake.sendGroupText({ chatId: Team, userId: Member, text: `@${name()} ${run(m)}` }),
      reply: ran,
    },
    {
      what: "a mention of someone else",
      send: (fake, m) =>
        fake.sendGroupText({ chatId: Team, userId: Member, text: `@ada_l ${run(m)}` }),
      reply: undefined,
    },
    {
      what: "a reply to the bot's message",
      send: (fake, m) =>
        fake.sendGroupText({ chatId: Team, userId: Member, text: run(m), replyTo: fromBot }),
      reply: ran,
    },
    {
      what: "another bot's command",
      send: (fake) =>
        fake.sendGroupText({ chatId: Team, userId: Admin, text: "/status@some_other_bot" }),
      reply: undefined,
    },
    {
      what: "/cmd@ourbot",
      send: (fake) =>
        fake.sendGroupText({ chatId: Team, userId: Admin, text: `/status@${name()}` }),
      reply: () => /^Session: agent:.*:telegram:group:-100120001:user:1201\n/,
    },
    {
      what: "a bare gateway command (Telegram sends those to every bot)",
      send: (fake) => fake.sendGroupText({ chatId: Team, userId: Member, text: "/help" }),
      reply: () => /^🤖 mediagate, profile .*\n[\s\S]*In a group I answer only when addressed/,
    },
    {
      what: "a bare command the gateway does not know",
      send: (fake) => fake.sendGroupText({ chatId: Team, userId: Member, text: "/uptime" }),
      reply: undefined,
    },
    {
      what: "a mentioned message in a group outside allowedChats",
      send: (fake, m) =>
        fake.sendGroupText({ chatId: Outside, userId: Member, text: `@${name()} ${run(m)}` }),
      reply: undefined,
    },
  ];

  it.each(rows)("$what", async (row) => {
    const marker = `m${Math.random().toString(36).slice(2, 10)}`;
    const since = bot.mark();
    const update = await bot.handle((fake) => row.send(fake, marker));
    const chat = update.message?.chat.id ?? Team;
    const texts = bot.texts(chat, since);
    const container = await bot.runningContainer();
    const files = (await harness.docker.exec(container, ["ls", "/workspace"])).stdout;
    if (row.reply === undefined) {
      expect(bot.callsIn(chat, since)).toEqual([]);
      expect(files).not.toContain(marker);
    } else {
      expect(texts).toHaveLength(1);
      expect(texts[0]).toMatch(row.reply(marker));
    }
  });

  it("warns when a listed group becomes a supergroup whose new id allowedChats lacks", async () => {
    const Upgraded = -100_120_003;
    const logged = harness.logs.length;
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.migrateGroup({ chatId: Basic, toChatId: Upgraded, userId: Member }),
    );
    await bot.handle((fake) =>
      fake.sendGroupText({ chatId: Upgraded, userId: Member, text: `@${name()} echo moved` }),
    );
    const warned = harness.logs
      .slice(logged)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.level === 40);
    expect(warned).toEqual([
      expect.objectContaining({
        chatId: Basic,
        newChatId: Upgraded,
        msg: `telegram group ${Basic} became supergroup ${Upgraded}, which telegram.groups.allowedChats does not list: the bot ignores it until ${Upgraded} is added there`,
      }),
    ]);
    // As the warning says: the supergroup is outside the list.
    expect(bot.callsIn(Upgraded, since)).toEqual([]);
  });

  it("fetches nothing for a file sent to the group without addressing the bot, and runs one that is", async () => {
    const since = bot.mark();
    const downloads = bot.fake.downloads.length;
    await bot.handle(
      (fake) =>
        fake.sendMedia({
          kind: "document",
          chatId: Team,
          userId: Member,
          fileName: "a.txt",
          bytes: Buffer.from("aaa"),
        }).update,
    );
    expect(bot.fake.calls.slice(since).filter((c) => c.method === "getFile")).toEqual([]);
    expect(bot.fake.downloads).toHaveLength(downloads);
    expect(bot.callsIn(Team, since)).toEqual([]);
    await bot.handle(
      (fake) =>
        fake.sendMedia({
          kind: "document",
          chatId: Team,
          userId: Member,
          fileName: "b.txt",
          bytes: Buffer.from("bbbb"),
          caption: `@${name()} wc -c < "$MEDIAGATE_ATTACHMENTS"`,
        }).update,
    );
    expect(bot.fake.downloads).toHaveLength(downloads + 1);
    expect(bot.texts(Team, since)).toEqual(["4"]);
  });
});

describe("Discord guild channels: mentioned, a reply to the bot, or a configured channel", () => {
  const Token = "discord-groups-e2e-token-Zr8p";
  const Member = "320000000000000002";
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;
  let gateway: Gateway;

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dgroups", Token, {
      profile: { allowedUsers: [`discord:${Member}`] },
      discord: (discord) => ({ channels: [discord.guild.channels[1]!.id] }),
    });
    ({ fake, gateway } = harness);
  });

  afterAll(async () => {
    await harness?.close();
  });

  const contents = (channelId: string, from: number) =>
    fake
      .messagesIn(channelId)
      .slice(from)
      .map((m) => m.content);

  it("answers a mention and a reply to its own message, ignores plain text; a configured channel answers all", async () => {
    const quiet = fake.guild.channels[0]!.id;
    const open = fake.guild.channels[1]!.id;
    let from = fake.messagesIn(quiet).length;
    fake.sendGuildMessage(quiet, { content: "echo mentioned", mentionBot: true, authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from);
    await gateway.idle();
    const mine = fake.messagesIn(quiet).at(-1)!;
    expect(contents(quiet, from)).toEqual(["mentioned"]);

    from = fake.messagesIn(quiet).length;
    fake.sendGuildMessage(quiet, { content: "echo plain", authorId: Member });
    fake.sendGuildMessage(quiet, { content: "echo replied", replyTo: mine.id, authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from);
    await gateway.idle();
    expect(contents(quiet, from)).toEqual(["replied"]);

    const before = fake.messagesIn(open).length;
    fake.sendGuildMessage(open, { content: "echo configured", authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(open).length > before);
    await gateway.idle();
    expect(contents(open, before)).toEqual(["configured"]);
  });

  it("answers a message that is only its mention as /help, as on Telegram", async () => {
    const quiet = fake.guild.channels[0]!.id;
    const from = fake.messagesIn(quiet).length;
    fake.sendGuildMessage(quiet, { content: "", mentionBot: true, authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from);
    await gateway.idle();
    const [help, ...rest] = contents(quiet, from);
    expect(rest).toEqual([]);
    expect(help).toContain(`profile "${harness.profile}" (shell agent)`);
    expect(help).toContain("/help — this text");
  });

  it("answers the gateway's own commands typed bare, but no other bare command, /approve, or a shell profile's /model", async () => {
    const quiet = fake.guild.channels[0]!.id;
    let from = fake.messagesIn(quiet).length;
    // Not addressed: a turn for either would answer before the one after (one session, in order).
    fake.sendGuildMessage(quiet, { content: "/uptime", authorId: Member });
    fake.sendGuildMessage(quiet, { content: "/approve ABCD", authorId: Member });
    // A shell profile's /model and /usage are its shell's, not the gateway's: not addressed.
    fake.sendGuildMessage(quiet, { content: "/model", authorId: Member });
    fake.sendGuildMessage(quiet, { content: "/usage", authorId: Member });
    fake.sendGuildMessage(quiet, { content: "echo after", mentionBot: true, authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from);
    await gateway.idle();
    expect(contents(quiet, from)).toEqual(["after"]);

    from = fake.messagesIn(quiet).length;
    fake.sendGuildMessage(quiet, { content: "/help", authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from);
    fake.sendGuildMessage(quiet, { content: "/start", authorId: Member });
    await fake.waitForCall(() => fake.messagesIn(quiet).length > from + 1);
    await gateway.idle();
    const answers = contents(quiet, from);
    expect(answers).toHaveLength(2);
    for (const answer of answers) expect(answer).toContain("/help — this text");
  });
});

describe("Discord allowedChannels: the only guild channels answered (their threads too), DMs as ever", () => {
  const Token = "discord-allowed-e2e-token-Hq4c";
  const Member = "320000000000000003";
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dallow", Token, {
      profile: { allowedUsers: [`discord:${Member}`] },
      discord: (discord) => ({ allowedChannels: [discord.guild.channels[0]!.id] }),
    });
    ({ fake } = harness);
    await waitUntil(() => fake.interactions.commands().length > 0, "the commands registered");
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Whether the channel ever took a message from the chat with this chat id. */
  const tookIn = (chatId: string) =>
    harness.logs.some((line) => line.includes('"message in"') && line.includes(chatId));

  it("ignores a mention outside the list, answers one in a listed channel, its thread and a DM", async () => {
    const [allowed, outside] = fake.guild.channels.map((c) => c.id) as [string, string];
    const thread = fake.guild.threads[0]!.id;
    const dm = fake.world.dmChannel(Member);
    fake.sendGuildMessage(outside, { content: "echo outside", mentionBot: true, authorId: Member });
    fake.sendGuildMessage(outside, { content: "/help", authorId: Member });
    fake.sendGuildMessage(allowed, { content: "echo inside", mentionBot: true, authorId: Member });
    fake.sendThreadMessage(thread, { content: "echo thread", mentionBot: true, authorId: Member });
    fake.sendDirectMessage({ content: "echo direct", authorId: Member });
    await fake.waitForCall(
      () =>
        fake.messagesIn(allowed).length > 0 &&
        fake.messagesIn(thread).length > 0 &&
        fake.messagesIn(dm).length > 0,
    );
    await harness.gateway.idle();
    expect(fake.messagesIn(allowed).map((m) => m.content)).toEqual(["inside"]);
    expect(fake.messagesIn(thread).map((m) => m.content)).toEqual(["thread"]);
    expect(fake.messagesIn(dm).map((m) => m.content)).toEqual(["direct"]);
    // Dropped on arrival (the events come in order, so both were seen before the later ones).
    expect(tookIn(allowed)).toBe(true);
    expect(tookIn(outside)).toBe(false);
    expect(fake.messagesIn(outside)).toEqual([]);
  });

  it("answers a slash command outside the list ephemerally that it does not answer there", async () => {
    const [allowed, outside] = fake.guild.channels.map((c) => c.id) as [string, string];
    const refused = fake.sendSlashCommand({ name: "help", channelId: outside, authorId: Member });
    await waitUntil(() => (refused.original?.content ?? "") !== "", "the refusal");
    expect(refused.original).toMatchObject({
      content: "This bot does not answer in this channel.",
      flags: 64,
    });
    const help = fake.sendSlashCommand({ name: "help", channelId: allowed, authorId: Member });
    await waitUntil(() => (help.original?.content ?? "") !== "", "the help");
    expect(help.original!.content).toContain("/help — this text");
    await harness.gateway.idle();
    expect(fake.messagesIn(outside)).toEqual([]);
  });
});
