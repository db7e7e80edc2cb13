import { randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  type Message,
  MessageFlags,
  MessageType,
  Partials,
  type RESTOptions,
} from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { defaultGuild, FakeDiscord, Intent } from "./index.js";

const AllIntents = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
];

let fake: FakeDiscord | undefined;
let client: Client | undefined;

afterEach(async () => {
  await client?.destroy();
  await fake?.close();
  client = undefined;
  fake = undefined;
});

async function connect(
  intents = AllIntents,
  rest: Partial<RESTOptions> = {},
  premiumTier: 0 | 2 = 2,
  heartbeatIntervalMs?: number,
): Promise<{ fake: FakeDiscord; client: Client }> {
  fake = await FakeDiscord.start({
    guilds: [defaultGuild(premiumTier)],
    ...(heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs }),
  });
  client = new Client({
    intents,
    partials: [Partials.Channel],
    rest: { api: fake.apiRoot, ...rest },
  });
  const ready = once(client, Events.ClientReady);
  await client.login(fake.token);
  await ready;
  return { fake, client };
}

function nextMessage(target: Client): Promise<Message> {
  return new Promise((resolve) => {
    const listener = (message: Message) => {
      if (message.author.id === target.user?.id) return;
      target.off(Events.MessageCreate, listener);
      resolve(message);
    };
    target.on(Events.MessageCreate, listener);
  });
}

describe("fake Discord gateway", () => {
  it("identifies, becomes ready and delivers the guild with its channels and threads", async () => {
    const { fake, client } = await connect();
    const guild = client.guilds.cache.get(fake.guild.id);
    expect(client.user?.id).toBe(fake.botUser.id);
    expect(guild?.premiumTier).toBe(2);
    const thread = client.channels.cache.get(fake.guild.threads[0]!.id);
    expect(thread?.isThread() && thread.parentId).toBe(fake.guild.channels[0]!.id);
    const identify = fake.calls.find((call) => call.path === "/gateway/bot");
    expect(identify?.status).toBe(200);
    expect(fake.gateway.identifyCount).toBe(1);
  });

  it("dispatches guild, thread and direct messages the way discord.js maps them", async () => {
    const { fake, client } = await connect();
    const [general] = fake.guild.channels;
    const [thread] = fake.guild.threads;

    let received = nextMessage(client);
    fake.sendGuildMessage(general!.id, { content: "hello guild", mentionBot: true });
    const inGuild = await received;
    expect(inGuild.guildId).toBe(fake.guild.id);
    expect(inGuild.member).not.toBeNull();
    expect(inGuild.mentions.users.has(fake.botUser.id)).toBe(true);
    expect(inGuild.content).toBe(`<@${fake.botUser.id}> hello guild`);

    received = nextMessage(client);
    fake.sendThreadMessage(thread!.id, { content: "in thread" });
    const inThread = await received;
    expect(inThread.channel.isThread()).toBe(true);
    expect(inThread.channel.isThread() && inThread.channel.parentId).toBe(general!.id);

    received = nextMessage(client);
    fake.sendDirectMessage({ content: "private", authorId: "300000000000000042" });
    const direct = await received;
    expect(direct.guildId).toBeNull();
    expect(direct.channel.type).toBe(ChannelType.DM);
    expect(direct.author.id).toBe("300000000000000042");
  });

  it("dispatches a reply to the bot's message as discord.js maps it: type Reply, the replied user", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const mine = await channel.send("the bot speaks");
    const received = nextMessage(client);
    fake.sendGuildMessage(channelId, { content: "answering you", replyTo: mine.id });
    const reply = await received;
    expect(reply.type).toBe(MessageType.Reply);
    expect(reply.reference?.messageId).toBe(mine.id);
    expect(reply.mentions.repliedUser?.id).toBe(fake.botUser.id);
    expect(reply.mentions.users.has(fake.botUser.id)).toBe(false);
    expect(() => fake.sendGuildMessage(channelId, { content: "x", replyTo: "1" })).toThrow(
      /no message 1/,
    );
  });

  it("hides guild message content without the MessageContent intent unless the bot is mentioned", async () => {
    const { fake, client } = await connect([
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
    ]);
    const channelId = fake.guild.channels[0]!.id;
    let received = nextMessage(client);
    fake.sendGuildMessage(channelId, { content: "secret" });
    expect((await received).content).toBe("");
    received = nextMessage(client);
    fake.sendGuildMessage(channelId, { content: "visible", mentionBot: true });
    expect((await received).content).toContain("visible");
    expect(fake.sendDirectMessage({ content: "dm" })).toBeDefined();
    expect(fake.gateway.sessions[0]!.intents & Intent.DirectMessages).toBe(0);
  });

  it("acknowledges heartbeats, so discord.js keeps the connection instead of resuming", async () => {
    const { fake, client } = await connect(AllIntents, {}, 2, 50);
    let beats = 0;
    await new Promise<void>((resolve) => {
      fake.gateway.on("op", ({ op }: { op: number }) => {
        if (op === 1 && ++beats === 4) resolve();
      });
    });
    expect(client.ws.ping).toBeGreaterThanOrEqual(0);
    expect(fake.gateway.resumeCount).toBe(0);
    expect(fake.gateway.identifyCount).toBe(1);
  });

  it("resumes after a dropped socket and replays what was dispatched meanwhile", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    const resumed = once(fake.gateway, "resume");
    fake.dropSocket();
    const missed = nextMessage(client);
    fake.sendGuildMessage(channelId, { content: "sent while down" });
    await resumed;
    expect((await missed).content).toBe("sent while down");
    const next = nextMessage(client);
    fake.sendGuildMessage(channelId, { content: "after resume" });
    expect((await next).content).toBe("after resume");
    expect(fake.gateway.identifyCount).toBe(1);
    expect(fake.gateway.resumeCount).toBe(1);
  });

  it("refuses to resume an expired session (op 9); discord.js identifies anew and nothing is replayed", async () => {
    fake = await FakeDiscord.start();
    // discord.js waits up to 6.5 s before a second IDENTIFY within 5 s of the first one; its
    // documented throttler option lets the test skip that wait.
    client = new Client({
      intents: AllIntents,
      rest: { api: fake.apiRoot },
      ws: { buildIdentifyThrottler: () => ({ waitForIdentify: async () => {} }) },
    });
    const ready = once(client, Events.ClientReady);
    await client.login(fake.token);
    await ready;
    const channelId = fake.guild.channels[0]!.id;
    const seen = nextMessage(client);
    const before = fake.sendGuildMessage(channelId, { content: "before the gap" });
    await seen;
    const sessionsReady: number[] = [];
    client.on(Events.ShardReady, (id) => sessionsReady.push(id));
    const invalid = once(fake.gateway, "invalidSession");
    const ready2 = once(client, Events.ShardReady);
    fake.invalidateSession({ holdReconnect: true });
    const gap = fake.sendGuildMessage(channelId, { content: "sent in the gap" });
    const live = nextMessage(client);
    fake.releaseGateway();
    await invalid;
    await ready2;
    fake.sendGuildMessage(channelId, { content: "after the new session" });
    expect((await live).content).toBe("after the new session");
    expect(fake.gateway.invalidSessionCount).toBe(1);
    expect(fake.gateway.identifyCount).toBe(2);
    expect(fake.gateway.resumeCount).toBe(0);
    expect(sessionsReady).toEqual([0]);
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isTextBased()) throw new Error("no text channel");
    const history = await channel.messages.fetch({ after: before.id, limit: 10 });
    expect([...history.values()].map((message) => message.id)).toContain(gap.id);
  });
});

describe("fake Discord REST", () => {
  it("keeps the bytes and filenames of a multipart message create", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[1]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    const sent = await channel.send({
      content: "two files",
      files: [
        { attachment: bytes, name: "raw bytes.bin" },
        { attachment: Buffer.from("hello"), name: "hello.txt" },
      ],
    });
    const [stored] = fake.messagesIn(channelId);
    expect(stored?.content).toBe("two files");
    expect(stored?.files.map((file) => file.filename)).toEqual(["raw bytes.bin", "hello.txt"]);
    expect(stored?.files[0]?.bytes.equals(bytes)).toBe(true);
    expect(sent.attachments.size).toBe(2);
    expect(sent.attachments.first()?.size).toBe(bytes.length);
  });

  it("returns the original message for a repeated nonce with enforce_nonce", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const first = await channel.send({ content: "once", nonce: "abc123", enforceNonce: true });
    const second = await channel.send({ content: "once", nonce: "abc123", enforceNonce: true });
    const third = await channel.send({ content: "once", nonce: "abc123" });
    expect(second.id).toBe(first.id);
    expect(third.id).not.toBe(first.id);
    expect(fake.messagesIn(channelId)).toHaveLength(2);
    expect(fake.messageCreates(channelId).map((call) => call.deduplicated)).toEqual([
      false,
      true,
      false,
    ]);
  });

  it("answers injected 429s with retry-after, which discord.js waits out", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    fake.injectFailure({ kind: "rate_limit", retryAfterSeconds: 0.3 });
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    await channel.send("after the limit");
    expect(fake.messageCreates(channelId).map((call) => call.status)).toEqual([429, 200]);
    expect(fake.messagesIn(channelId)).toHaveLength(1);
  });

  it("creates the message on a 5xx-after-processing, so a nonce retry finds it", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    fake.injectFailure({ kind: "server_error_after_processing", status: 502 });
    fake.injectFailure({ kind: "server_error", status: 503 });
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    // discord.js retries 5xx itself with the same body, hence the same nonce.
    const sent = await channel.send({ content: "exactly once", nonce: "n-1", enforceNonce: true });
    const creates = fake.messageCreates(channelId);
    expect(creates.map((call) => [call.status, call.injected])).toEqual([
      [502, "server_error_after_processing"],
      [503, "server_error"],
      [200, undefined],
    ]);
    expect(creates[2]?.deduplicated).toBe(true);
    expect(fake.messagesIn(channelId).map((message) => message.id)).toEqual([sent.id]);
  });

  it("can drop the connection after creating the message, or refuse a create with a 400", async () => {
    const { fake, client } = await connect(AllIntents, { retries: 0 });
    const channelId = fake.guild.channels[0]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    fake.injectFailure({ kind: "connection_drop_after_processing" });
    await expect(channel.send("dropped")).rejects.toThrow();
    fake.injectFailure({ kind: "client_error" });
    await expect(channel.send("refused")).rejects.toMatchObject({ status: 400, code: 50035 });
    expect(fake.messageCreates(channelId).map((call) => call.status)).toEqual([0, 400]);
    expect(fake.messagesIn(channelId).map((message) => message.content)).toEqual(["dropped"]);
  });

  it("edits and deletes the bot's own messages, echoes both, and refuses unknown or others' messages", async () => {
    const { fake, client } = await connect(AllIntents, { retries: 0 });
    const channelId = fake.guild.channels[0]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const sent = await channel.send("working 1s");
    const updated = once(client, Events.MessageUpdate);
    const edited = await sent.edit("working 2s");
    expect(edited.content).toBe("working 2s");
    expect(edited.editedTimestamp).not.toBeNull();
    const [, after] = (await updated) as [unknown, Message];
    expect(after.content).toBe("working 2s");
    expect(fake.messagesIn(channelId).map((m) => m.content)).toEqual(["working 2s"]);
    const history = await channel.messages.fetch({ limit: 10, cache: false });
    expect(history.get(sent.id)?.content).toBe("working 2s");

    const users = fake.sendGuildMessage(channelId, { content: "mine", mentionBot: true });
    await expect(channel.messages.edit(users.id, "hijacked")).rejects.toMatchObject({
      status: 403,
      code: 50005,
    });
    await expect(channel.messages.edit("1234567890123456789", "x")).rejects.toMatchObject({
      status: 404,
      code: 10008,
    });
    await expect(sent.edit({ content: "" })).rejects.toMatchObject({ status: 400, code: 50006 });
    expect(fake.messagesIn(channelId).map((m) => m.content)).toEqual(["working 2s"]);

    const deleted = once(client, Events.MessageDelete);
    await channel.messages.delete(sent.id);
    await deleted;
    expect(fake.messagesIn(channelId)).toEqual([]);
    expect(fake.world.history(channelId).map((m) => m.id)).toEqual([users.id]);
    await expect(channel.messages.delete(sent.id)).rejects.toMatchObject({ code: 10008 });
    expect(
      fake.calls
        .filter((c) => c.route === "/channels/:id/messages/:id")
        .map((c) => [c.method, c.status]),
    ).toEqual([
      ["PATCH", 200],
      ["PATCH", 403],
      ["PATCH", 404],
      ["PATCH", 400],
      ["DELETE", 204],
      ["DELETE", 404],
    ]);
  });

  it("fails the next edit with an injected failure and applies none of it", async () => {
    const { fake, client } = await connect(AllIntents, { retries: 0 });
    const channelId = fake.guild.channels[0]!.id;
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const sent = await channel.send("a");
    fake.injectFailure({ kind: "server_error", method: "PATCH", path: /\/messages\/\d+$/ });
    await expect(sent.edit("b")).rejects.toMatchObject({ status: 500 });
    expect(fake.messagesIn(channelId).map((m) => m.content)).toEqual(["a"]);
  });

  it("answers typing with a bare 204 and rejects a wrong token", async () => {
    const { fake, client } = await connect();
    const channel = await client.channels.fetch(fake.guild.channels[0]!.id);
    if (!channel?.isSendable()) throw new Error("not sendable");
    await channel.sendTyping();
    const typing = fake.calls.find((call) => call.path.endsWith("/typing"));
    expect(typing?.status).toBe(204);

    const intruder = new Client({ intents: AllIntents, rest: { api: fake.apiRoot, retries: 0 } });
    await expect(intruder.login("wrong-token")).rejects.toThrow();
    await intruder.destroy();
  });

  it("rejects Discord's limits: over 2000 characters, over 10 files, over the upload limit", async () => {
    const { fake, client } = await connect(AllIntents, {}, 0);
    const channel = await client.channels.fetch(fake.guild.channels[0]!.id);
    if (!channel?.isSendable()) throw new Error("not sendable");
    await expect(channel.send("x".repeat(2001))).rejects.toMatchObject({ code: 50035 });
    const files = Array.from({ length: 11 }, (_, index) => ({
      attachment: Buffer.from([index]),
      name: `f${index}.bin`,
    }));
    await expect(channel.send({ files })).rejects.toMatchObject({ code: 50035 });
    const big = Buffer.alloc(10 * 1024 * 1024 + 1);
    await expect(
      channel.send({ files: [{ attachment: big, name: "big.bin" }] }),
    ).rejects.toMatchObject({
      status: 413,
    });
  });

  it("lists a channel's messages, users' and the bot's, the way Discord pages them", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    const ids = Array.from(
      { length: 5 },
      (_, index) => fake.sendGuildMessage(channelId, { content: `m${index}` }).id,
    );
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const own = await channel.send("bot says");
    const contents = (page: Iterable<Message>) => [...page].map((message) => message.content);

    const after = await channel.messages.fetch({ after: ids[1]!, limit: 2, cache: false });
    expect(contents(after.values())).toEqual(["m3", "m2"]); // the two right after, newest first
    const before = await channel.messages.fetch({ before: ids[3]!, limit: 2, cache: false });
    expect(contents(before.values())).toEqual(["m2", "m1"]);
    const newest = await channel.messages.fetch({ limit: 3, cache: false });
    expect(contents(newest.values())).toEqual(["bot says", "m4", "m3"]);
    expect(newest.first()?.id).toBe(own.id);
    expect(newest.first()?.author.id).toBe(fake.botUser.id);
  });

  it("revokes the token: REST answers 401 and the gateway closes with 4004", async () => {
    const { fake, client } = await connect();
    const closed = new Promise<number>((resolve) =>
      client.on(Events.ShardDisconnect, (event) => resolve(event.code)),
    );
    fake.revokeToken();
    expect(await closed).toBe(4004);
    await expect(
      client.channels.fetch(fake.guild.channels[0]!.id, { force: true }),
    ).rejects.toMatchObject({
      status: 401,
    });
  });

  it("answers 403 for a channel the bot lost access to", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[1]!.id;
    fake.denyAccess(channelId);
    await expect(client.channels.fetch(channelId, { force: true })).rejects.toMatchObject({
      status: 403,
      code: 50001,
    });
  });
});

describe("fake Discord attachments and CDN", () => {
  const download = async (url: string, init?: RequestInit) => {
    const response = await fetch(url, init);
    return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
  };

  it("carries users' attachments in MESSAGE_CREATE with URLs its CDN serves byte-for-byte", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[0]!.id;
    const report = Buffer.concat([Buffer.from([0, 255, 10, 13]), randomBytes(200_000)]);
    const received = nextMessage(client);
    const sent = fake.sendGuildMessage(channelId, {
      mentionBot: true,
      attachments: [
        { filename: "report final.pdf", bytes: report, contentType: "application/pdf" },
        { filename: "pic.png", bytes: Buffer.from("png"), contentType: "image/png" },
      ],
    });
    const message = await received;
    expect(message.content).toBe(`<@${fake.botUser.id}> `);
    const attachments = [...message.attachments.values()];
    expect(attachments.map((a) => [a.id, a.name, a.size, a.contentType])).toEqual([
      [sent.attachments[0]!.id, "report final.pdf", report.length, "application/pdf"],
      [sent.attachments[1]!.id, "pic.png", 3, "image/png"],
    ]);
    expect(fake.downloads).toEqual([]);
    const viaCdn = await download(attachments[0]!.url);
    expect(viaCdn.status).toBe(200);
    expect(viaCdn.bytes.equals(report)).toBe(true);
    const viaProxy = await download(attachments[1]!.proxyURL);
    expect(viaProxy.bytes.toString()).toBe("png");
    expect(fake.downloads).toEqual([
      expect.objectContaining({
        attachmentId: sent.attachments[0]!.id,
        via: "cdn",
        status: 200,
        bytesSent: report.length,
        authorization: false,
      }),
      expect.objectContaining({ attachmentId: sent.attachments[1]!.id, via: "media" }),
    ]);
  });

  it("marks a voice message with IS_VOICE_MESSAGE and gives its attachment a duration", async () => {
    const { fake, client } = await connect();
    const received = nextMessage(client);
    fake.sendDirectMessage({
      attachments: [
        {
          filename: "voice-message.ogg",
          bytes: Buffer.from("OggS"),
          contentType: "audio/ogg",
          voice: true,
        },
      ],
    });
    const message = await received;
    expect(message.flags.has(MessageFlags.IsVoiceMessage)).toBe(true);
    expect(message.attachments.first()?.duration).toBe(2.5);
    expect(message.content).toBe("");
  });

  it("lists attachments in the REST history (catch-up), still downloadable", async () => {
    const { fake, client } = await connect();
    const channelId = fake.guild.channels[1]!.id;
    fake.sendGuildMessage(channelId, {
      content: "with a file",
      attachments: [
        { filename: "a.txt", bytes: Buffer.from("history bytes"), contentType: "text/plain" },
      ],
    });
    const channel = await client.channels.fetch(channelId);
    if (!channel?.isTextBased()) throw new Error("not text");
    const page = await channel.messages.fetch({ limit: 10, cache: false });
    const attachment = page.first()?.attachments.first();
    expect(attachment?.name).toBe("a.txt");
    expect((await download(attachment!.url)).bytes.toString()).toBe("history bytes");
  });

  it("hides attachments without the MessageContent intent unless the bot is mentioned", async () => {
    const { fake, client } = await connect([
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
    ]);
    const channelId = fake.guild.channels[0]!.id;
    const files = [{ filename: "x.bin", bytes: Buffer.from("x") }];
    let received = nextMessage(client);
    fake.sendGuildMessage(channelId, { attachments: files });
    expect((await received).attachments.size).toBe(0);
    received = nextMessage(client);
    fake.sendGuildMessage(channelId, { attachments: files, mentionBot: true });
    expect((await received).attachments.size).toBe(1);
  });

  it("serves the bot's own uploads too, and 404s an unsigned or unknown URL", async () => {
    const { fake, client } = await connect();
    const channel = await client.channels.fetch(fake.guild.channels[0]!.id);
    if (!channel?.isSendable()) throw new Error("not sendable");
    const sent = await channel.send({
      files: [{ attachment: Buffer.from("own"), name: "own.txt" }],
    });
    const url = sent.attachments.first()!.url;
    expect((await download(url)).bytes.toString()).toBe("own");
    const unsigned = new URL(url);
    unsigned.search = "";
    expect((await download(unsigned.href)).status).toBe(404);
    const unknown = url.replace(sent.attachments.first()!.id, "1234567890123456789");
    expect((await download(unknown)).status).toBe(404);
    expect(fake.downloads.map((d) => d.status)).toEqual([200, 404, 404]);
  });

  it("fails the next download with a status, or cuts it off after some bytes", async () => {
    const { fake } = await connect();
    const bytes = randomBytes(300_000);
    const sent = fake.sendDirectMessage({ attachments: [{ filename: "f.bin", bytes }] });
    const url = sent.attachments[0]!.url;
    fake.failNextDownload({ status: 503 });
    expect((await download(url)).status).toBe(503);
    fake.failNextDownload({ cutAfterBytes: 100_000 });
    await expect(download(url)).rejects.toThrow();
    expect((await download(url)).bytes.equals(bytes)).toBe(true);
    expect(fake.downloads.map((d) => [d.status, d.complete])).toEqual([
      [503, false],
      [200, false],
      [200, true],
    ]);
    expect(fake.downloads[1]?.bytesSent).toBe(100_000);
  });
});

describe("fake Discord application commands and interactions", () => {
  const commands = [
    { name: "help", description: "what this bot is" },
    {
      name: "reset",
      description: "start over",
      options: [{ type: 5, name: "confirm", description: "go ahead", required: false }],
    },
  ];

  function nextInteraction(target: Client) {
    return new Promise<import("discord.js").ChatInputCommandInteraction>((resolve) => {
      target.once(Events.InteractionCreate, (interaction) => {
        if (interaction.isChatInputCommand()) resolve(interaction);
      });
    });
  }

  it("overwrites the global commands with PUT (ids kept across overwrites) and lists them", async () => {
    const { fake, client } = await connect();
    const first = await client.application!.commands.set(commands);
    expect([...first.values()].map((c) => c.name).sort()).toEqual(["help", "reset"]);
    const again = await client.application!.commands.set(commands);
    expect(again.find((c) => c.name === "reset")?.id).toBe(
      first.find((c) => c.name === "reset")?.id,
    );
    const fetched = await client.application!.commands.fetch();
    expect(fetched.size).toBe(2);
    expect(fake.interactions.commands().map((c) => [c.name, c.description])).toEqual([
      ["help", "what this bot is"],
      ["reset", "start over"],
    ]);
    expect(fake.interactions.commands()[1]!.options).toEqual([
      { type: 5, name: "confirm", description: "go ahead", required: false },
    ]);
    const puts = fake.calls.filter((call) => call.method === "PUT");
    expect(puts.map((call) => [call.route, call.status])).toEqual([
      ["/applications/:id/commands", 200],
      ["/applications/:id/commands", 200],
    ]);
  });

  it("refuses a command name Discord refuses", async () => {
    const { fake, client } = await connect();
    await expect(
      client.application!.commands.set([{ name: "Bad Name", description: "x" }]),
    ).rejects.toMatchObject({ status: 400, code: 50035 });
    expect(fake.interactions.commands()).toEqual([]);
  });

  it("dispatches a slash command in a guild channel; deferred ephemerally, edited, followed up", async () => {
    const { fake, client } = await connect();
    await client.application!.commands.set(commands);
    const channel = fake.guild.channels[0]!.id;
    const received = nextInteraction(client);
    const sent = fake.sendSlashCommand({
      name: "reset",
      options: { confirm: true },
      channelId: channel,
      authorId: "300000000000000042",
    });
    const interaction = await received;
    expect(interaction.commandName).toBe("reset");
    expect(interaction.options.getBoolean("confirm")).toBe(true);
    expect(interaction.user.id).toBe("300000000000000042");
    expect(interaction.channelId).toBe(channel);
    expect(interaction.inGuild()).toBe(true);
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    expect(sent.callback).toEqual({ type: 5, flags: 64 });
    await interaction.editReply({ content: "done" });
    await interaction.followUp({ content: "and more", flags: MessageFlags.Ephemeral });
    expect(sent.original).toMatchObject({ content: "done", flags: 64 });
    expect(sent.followUps).toMatchObject([{ content: "and more", flags: 64 }]);
    await expect(interaction.deferReply()).rejects.toThrow(); // discord.js knows it was answered
    // nothing of it is in the channel: ephemeral answers are the user's alone
    expect(fake.messagesIn(channel)).toEqual([]);
    const routes = fake.calls.filter(
      (call) => call.route.startsWith("/interactions") || call.route.startsWith("/webhooks"),
    );
    expect(routes.map((call) => [call.method, call.route, call.status])).toEqual([
      ["POST", "/interactions/:id/:token/callback", 204],
      ["PATCH", "/webhooks/:id/:token/messages/@original", 200],
      ["POST", "/webhooks/:id/:token", 200],
    ]);
  });

  it("dispatches a slash command in a DM and answers a reply in place; a second callback is 400", async () => {
    const { fake, client } = await connect();
    await client.application!.commands.set(commands);
    const received = nextInteraction(client);
    const sent = fake.sendSlashCommand({ name: "help" });
    const interaction = await received;
    expect(interaction.inGuild()).toBe(false);
    expect(interaction.channelId).toBe(fake.world.dmChannel("300000000000000001"));
    await interaction.reply({ content: "hello", flags: MessageFlags.Ephemeral });
    expect(sent.original).toMatchObject({ content: "hello", flags: 64 });
    const answer = await fetch(
      `${fake.apiRoot}/v10/interactions/${sent.id}/${sent.token}/callback`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: 4, data: { content: "again" } }),
      },
    );
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { code: number }).code).toBe(40060);
    expect(() => fake.sendSlashCommand({ name: "nope" })).toThrow(/not a registered command/);
  });

  it("sends options as the command was registered: a string for a boolean, a subcommand", async () => {
    const { fake, client } = await connect();
    await client.application!.commands.set(commands);
    const received = nextInteraction(client);
    fake.sendSlashCommand({
      name: "reset",
      options: [
        { name: "confirm", type: 3, value: "yes" },
        { name: "now", type: 1, options: [{ name: "count", type: 10, value: 2 }] },
      ],
    });
    const interaction = await received;
    expect(interaction.options.data.map((o) => [o.name, o.type, o.value])).toEqual([
      ["confirm", 3, "yes"],
      ["now", 1, undefined],
    ]);
    expect(interaction.options.data[1]!.options?.map((o) => [o.name, o.type, o.value])).toEqual([
      ["count", 10, 2],
    ]);
    expect(() => interaction.options.getBoolean("confirm")).toThrow(/of type: 3; expected 5/);
  });

  it("answers 404 Unknown interaction for a wrong token", async () => {
    const { fake } = await connect();
    const sent = fake.sendSlashCommand({ name: "help", unregistered: true });
    const answer = await fetch(`${fake.apiRoot}/v10/interactions/${sent.id}/wrong-token/callback`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: 5 }),
    });
    expect(answer.status).toBe(404);
    expect(sent.callback).toBeUndefined();
  });
});
