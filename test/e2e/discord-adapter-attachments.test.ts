import { createHash, randomBytes } from "node:crypto";
import {
  createLogger,
  DiscordChannel,
  type DiscordChannelOptions,
  type InboundMessage,
} from "@mediagate/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { type AttachmentInput, FakeDiscord } from "../fakes/discord/index.js";
import { waitUntil } from "./harness/gateway-home.js";

type InboundAttachment = NonNullable<InboundMessage["attachments"]>[number];

const Token = "discord-attachments-token-Vb7q2Lm";

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Started {
  readonly channel: DiscordChannel;
  readonly inbound: InboundMessage[];
  readonly logs: string[];
  stop(): Promise<void>;
}

async function startFake(): Promise<FakeDiscord> {
  const fake = await FakeDiscord.start({ token: Token });
  cleanups.push(() => fake.close());
  return fake;
}

async function startChannel(
  fake: FakeDiscord,
  options: Partial<DiscordChannelOptions> = {},
): Promise<Started> {
  const logs: string[] = [];
  const channel = new DiscordChannel({
    token: Token,
    apiRoot: fake.apiRoot,
    profile: "attachments",
    logger: createLogger({ level: "debug", destination: { write: (line) => logs.push(line) } }),
    ...options,
  });
  const inbound: InboundMessage[] = [];
  await channel.start({
    onMessage: async (message) => {
      inbound.push(message);
    },
    onFatal: () => {},
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await channel.stop();
  };
  cleanups.push(stop);
  return { channel, inbound, logs, stop };
}

/** Waits for the `count`-th message handed over and returns it. */
async function handed(started: Started, count: number): Promise<InboundMessage> {
  await waitUntil(() => started.inbound.length >= count, `${count} messages handed over`);
  return started.inbound[count - 1]!;
}

/** Reads an attachment through the adapter's fetcher, all of it. */
async function fetchAll(
  channel: DiscordChannel,
  attachment: InboundAttachment,
  signal = new AbortController().signal,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await channel.attachments.open(attachment, signal)) {
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

const file = (filename: string, contentType?: string, bytes = randomBytes(64)): AttachmentInput =>
  contentType === undefined ? { filename, bytes } : { filename, bytes, contentType };

describe("Discord adapter: inbound attachments", () => {
  it("maps every attachment of a guild, thread and DM message, and answers one with no text", async () => {
    const fake = await startFake();
    const started = await startChannel(fake);
    const general = fake.guild.channels[0]!.id;
    const thread = fake.guild.threads[0]!.id;

    const inGuild = fake.sendGuildMessage(general, {
      mentionBot: true,
      attachments: [
        file("report.pdf", "application/pdf"),
        file("photo.jpg", "image/jpeg"),
        file("clip.mp4", "video/mp4"),
        file("song.mp3", "audio/mpeg"),
        file("blob"),
      ],
    });
    const guildMessage = await handed(started, 1);
    expect(guildMessage.text).toBe("");
    expect(guildMessage.chatType).toBe("group");
    expect(guildMessage.attachments).toEqual([
      {
        name: "report.pdf",
        sentAs: "file",
        size: 64,
        mime: "application/pdf",
        ref: inGuild.attachments[0]!.url,
      },
      { name: "photo.jpg", sentAs: "photo", size: 64, mime: "image/jpeg", ref: expect.any(String) },
      { name: "clip.mp4", sentAs: "video", size: 64, mime: "video/mp4", ref: expect.any(String) },
      { name: "song.mp3", sentAs: "audio", size: 64, mime: "audio/mpeg", ref: expect.any(String) },
      { name: "blob", sentAs: "file", size: 64, mime: undefined, ref: expect.any(String) },
    ]);

    fake.sendThreadMessage(thread, {
      content: "look at this",
      mentionBot: true,
      attachments: [file("notes.txt", "text/plain; charset=utf-8")],
    });
    const threadMessage = await handed(started, 2);
    expect(threadMessage).toMatchObject({
      chatId: general,
      threadId: thread,
      text: "look at this",
    });
    expect(threadMessage.attachments?.map((a) => [a.name, a.sentAs])).toEqual([
      ["notes.txt", "file"],
    ]);

    fake.sendDirectMessage({ attachments: [file("voice-message.ogg", "audio/ogg")] });
    fake.sendDirectMessage({
      attachments: [{ ...file("voice-message.ogg", "audio/ogg"), voice: true }],
    });
    const plainAudio = await handed(started, 3);
    const voice = await handed(started, 4);
    expect(plainAudio.chatType).toBe("dm");
    expect(plainAudio.attachments?.[0]?.sentAs).toBe("audio");
    expect(voice.attachments?.[0]).toMatchObject({ name: "voice-message.ogg", sentAs: "voice" });
    expect(fake.downloads).toEqual([]); // mapping downloads nothing
  });

  it("keeps the addressing rules: an attachment in an unconfigured channel without a mention is ignored", async () => {
    const fake = await startFake();
    const started = await startChannel(fake);
    const general = fake.guild.channels[0]!.id;
    const room = fake.guild.channels[1]!.id;
    fake.sendGuildMessage(general, { attachments: [file("ignored.txt", "text/plain")] });
    fake.sendGuildMessage(general, { content: "with mention", mentionBot: true });
    expect((await handed(started, 1)).text).toBe("with mention");

    const configured = await startChannel(fake, { respondIn: { channelIds: [room] } });
    fake.sendGuildMessage(room, { attachments: [file("kept.txt", "text/plain")] });
    const kept = await handed(configured, 1);
    expect(kept.attachments?.map((a) => a.name)).toEqual(["kept.txt"]);
    expect(started.inbound.map((m) => m.text)).toEqual(["with mention"]);
  });

  it("carries the attachments of a message caught up after a restart", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const first = await startChannel(fake);
    const seen = fake.sendGuildMessage(general, { content: "seen", mentionBot: true });
    await handed(first, 1);
    await first.stop();

    const bytes = randomBytes(5000);
    fake.sendGuildMessage(general, {
      content: "while down",
      mentionBot: true,
      attachments: [
        file("missed.bin", "application/octet-stream", bytes),
        file("b.png", "image/png"),
      ],
    });
    const second = await startChannel(fake);
    await second.channel.catchUp([{ channelId: general, lastMessageId: seen.id }], async (m) => {
      second.inbound.push(m);
    });
    const caught = await handed(second, 1);
    expect(caught.text).toBe("while down");
    expect(caught.attachments?.map((a) => [a.name, a.sentAs, a.size])).toEqual([
      ["missed.bin", "file", 5000],
      ["b.png", "photo", 64],
    ]);
    expect(sha256(await fetchAll(second.channel, caught.attachments![0]!))).toBe(sha256(bytes));
  });
});

describe("Discord adapter: the attachment fetcher", () => {
  it("streams the bytes from the CDN URL without sending the bot token", async () => {
    const fake = await startFake();
    const { channel, inbound } = await startChannel(fake);
    const bytes = Buffer.concat([Buffer.from([0, 10, 13, 255]), randomBytes(700_000)]);
    fake.sendDirectMessage({ attachments: [file("big.bin", undefined, bytes)] });
    await waitUntil(() => inbound.length === 1, "the message");
    const got = await fetchAll(channel, inbound[0]!.attachments![0]!);
    expect(got.equals(bytes)).toBe(true);
    expect(fake.downloads).toEqual([
      expect.objectContaining({ via: "cdn", status: 200, authorization: false, complete: true }),
    ]);
    expect(channel.attachments.maxBytes).toBe(25 * 1024 * 1024);
  });

  it("takes its limit from downloadMaxBytes and refuses a body whose length is over it, unread", async () => {
    const fake = await startFake();
    const { channel, inbound } = await startChannel(fake, { downloadMaxBytes: 100_000 });
    expect(channel.attachments.maxBytes).toBe(100_000);
    // The message announces 10 bytes; the CDN's Content-Length says what it really is.
    fake.sendDirectMessage({
      attachments: [{ filename: "liar.bin", bytes: randomBytes(3_000_000), declaredSize: 10 }],
    });
    await waitUntil(() => inbound.length === 1, "the message");
    // Refused by `open` itself: not one chunk is handed to the inbox.
    await expect(
      channel.attachments.open(inbound[0]!.attachments![0]!, new AbortController().signal),
    ).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: "it is 3 MB, over the 100 KB limit",
    });
  });

  it("turns CDN failures into reasons that name no token and no URL", async () => {
    const fake = await startFake();
    const { channel, inbound } = await startChannel(fake);
    fake.sendDirectMessage({ attachments: [file("a.bin", undefined, randomBytes(300_000))] });
    await waitUntil(() => inbound.length === 1, "the message");
    const attachment = inbound[0]!.attachments![0]!;
    const failure = (a: InboundAttachment) =>
      fetchAll(channel, a).then(
        () => undefined,
        (error: unknown) => error as { name: string; reason: string },
      );

    fake.failNextDownload({ status: 503 });
    const unavailable = await failure(attachment);
    fake.failNextDownload({ cutAfterBytes: 100_000 });
    const cut = await failure(attachment);
    const expired = await failure({ ...attachment, ref: attachment.ref.replace(/hm=\w+/, "hm=0") });
    const local = await failure({ ...attachment, ref: "file:///etc/passwd" });
    const garbage = await failure({ ...attachment, ref: "not a url" });
    const unreachable = await failure({ ...attachment, ref: "http://127.0.0.1:1/x" });

    const reasons = [unavailable, cut, expired, local, garbage, unreachable].map((e) => e?.reason);
    expect(reasons).toEqual([
      "Discord's file server answered 503",
      "the download broke off",
      "Discord no longer has it (the link expired or the message was deleted)",
      "Discord gave no web address for it",
      "Discord gave no usable address for it",
      "Discord's file server could not be reached",
    ]);
    expect(
      new Set([unavailable, cut, expired, local, garbage, unreachable].map((e) => e?.name)),
    ).toEqual(new Set(["AttachmentFetchError"]));
    for (const reason of reasons) {
      expect(reason).not.toContain(Token);
      expect(reason).not.toContain("127.0.0.1");
    }
    expect(fake.downloads.map((d) => d.status)).toEqual([503, 200, 404]);
  });

  it("stops the download when the signal aborts", async () => {
    const fake = await startFake();
    const { channel, inbound } = await startChannel(fake);
    const size = 16 * 1024 * 1024;
    fake.sendDirectMessage({ attachments: [file("long.bin", undefined, Buffer.alloc(size, 7))] });
    await waitUntil(() => inbound.length === 1, "the message");
    const stop = new AbortController();
    const chunks = await channel.attachments.open(inbound[0]!.attachments![0]!, stop.signal);
    let read = 0;
    const reading = (async () => {
      for await (const chunk of chunks) {
        read += chunk.length;
        if (read > 0) stop.abort();
      }
    })();
    await expect(reading).rejects.toThrow();
    expect(read).toBeLessThan(size);
  });
});
