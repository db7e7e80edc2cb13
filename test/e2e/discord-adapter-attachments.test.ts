import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import {
  createLogger,
  DiscordChannel,
  type DiscordChannelOptions,
  type InboundMessage,
} from "@mediagate/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
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

/** A server on another port of 127.0.0.1 that records every request: a host the fetcher must not reach. */
async function elsewhere(): Promise<{ port: number; asked: string[] }> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? "");
    res.end("not Discord's");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { port: address.port, asked };
}

/** Why opening `attachment` failed (its `AttachmentFetchError` reason), or `fetched`. */
const reasonOf = (channel: DiscordChannel, attachment: InboundAttachment): Promise<string> =>
  fetchAll(channel, attachment).then(
    () => "fetched",
    (error: unknown) => `${(error as Error).name}: ${(error as { reason?: string }).reason}`,
  );

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

  it("takes a forwarded message's text and files as the sender's own", async () => {
    // Discord's "Forward": the message's own content is empty; what was forwarded is in its
    // snapshot. It used to be ignored, silently, as a message with nothing in it.
    const fake = await startFake();
    const started = await startChannel(fake);
    fake.sendDirectMessage({
      forwardOf: {
        content: "what does this error mean?",
        attachments: [file("trace.txt", "text/plain")],
      },
    });
    const forward = await handed(started, 1);
    expect(forward).toMatchObject({ chatType: "dm", text: "what does this error mean?" });
    expect(forward.attachments?.map((a) => [a.name, a.sentAs])).toEqual([["trace.txt", "file"]]);
    fake.sendDirectMessage({ forwardOf: { attachments: [file("photo.jpg", "image/jpeg")] } });
    const fileOnly = await handed(started, 2);
    expect(fileOnly.attachments?.map((a) => [a.name, a.sentAs])).toEqual([["photo.jpg", "photo"]]);
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

  it("refuses a body that ends cleanly short of the size the message announced", async () => {
    const fake = await startFake();
    const { channel, inbound } = await startChannel(fake);
    fake.sendDirectMessage({ attachments: [file("short.bin", undefined, randomBytes(90_000))] });
    await waitUntil(() => inbound.length === 1, "the message");
    fake.failNextDownload({ endAfterBytes: 30_000 }); // no Content-Length, a clean close
    expect(await reasonOf(channel, inbound[0]!.attachments![0]!)).toBe(
      "AttachmentFetchError: only 30000 of the 90000 bytes Discord announced arrived",
    );
    expect(fake.downloads).toEqual([
      expect.objectContaining({ status: 200, bytesSent: 30_000, complete: false }),
    ]);
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
    const offHost = await failure({ ...attachment, ref: "http://127.0.0.1:1/x" });
    // Unreachable: a configured API root nothing listens on (the channel is never started).
    const closedRoot = `http://127.0.0.1:${await closedPort()}`;
    const closed = new DiscordChannel({
      token: Token,
      apiRoot: `${closedRoot}/api`,
      profile: "closed",
      logger: createLogger({ level: "silent" }),
    });
    cleanups.push(() => closed.stop());
    const unreachable = await fetchAll(closed, { ...attachment, ref: `${closedRoot}/x` }).then(
      () => undefined,
      (error: unknown) => error as { name: string; reason: string },
    );

    const failures = [unavailable, cut, expired, local, garbage, offHost, unreachable];
    const reasons = failures.map((e) => e?.reason);
    expect(reasons).toEqual([
      "Discord's file server answered 503",
      "the download broke off: the connection closed before the body's end",
      "Discord no longer has it (the link expired or the message was deleted)",
      "Discord gave no web address for it",
      "Discord gave no usable address for it",
      "the address is not one of Discord's file hosts",
      "Discord's file server could not be reached",
    ]);
    expect(new Set(failures.map((e) => e?.name))).toEqual(new Set(["AttachmentFetchError"]));
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

describe("Discord adapter: attachments come from Discord's file hosts only", () => {
  it("refuses an attachment URL on another loopback port or name, or a private or link-local address, fetching nothing", async () => {
    const fake = await startFake();
    const other = await elsewhere();
    // A short timeout: without the host check a private address would be waited for.
    const { channel, inbound } = await startChannel(fake, { requestTimeoutMs: 2000 });
    const served = fake.sendDirectMessage({ attachments: [file("real.bin")] });
    await waitUntil(() => inbound.length === 1, "the first message");
    // The fake's own file, named through `localhost` instead of the configured 127.0.0.1.
    const renamed = served.attachments[0]!.url.replace("//127.0.0.1:", "//localhost:");
    const urls = [
      `http://127.0.0.1:${other.port}/attachments/1/2/a.bin`,
      renamed,
      "http://10.0.0.1/attachments/1/2/a.bin",
      "http://192.168.1.20:8080/a.bin",
      "http://169.254.169.254/latest/meta-data/",
      "http://[fd00::1]/a.bin",
    ];
    fake.sendDirectMessage({
      attachments: urls.map((url, i) => ({ filename: `f${i}.bin`, bytes: randomBytes(8), url })),
    });
    await waitUntil(() => inbound.length === 2, "the message with the outside URLs");
    const attachments = inbound[1]!.attachments!;
    expect(attachments.map((a) => a.ref)).toEqual(urls);
    const reasons: string[] = [];
    for (const attachment of attachments) reasons.push(await reasonOf(channel, attachment));
    expect(reasons).toEqual(
      urls.map(() => "AttachmentFetchError: the address is not one of Discord's file hosts"),
    );
    expect(other.asked).toEqual([]);
    expect(fake.downloads).toEqual([]);
  });

  it("follows a redirect within the configured host and refuses one to another loopback port or a private address, fetching nothing there", async () => {
    const fake = await startFake();
    const other = await elsewhere();
    const { channel, inbound } = await startChannel(fake, { requestTimeoutMs: 2000 });
    const bytes = randomBytes(50_000);
    const sent = fake.sendDirectMessage({ attachments: [file("moved.bin", undefined, bytes)] });
    await waitUntil(() => inbound.length === 1, "the message");
    const attachment = inbound[0]!.attachments![0]!;

    // Within the configured origin (the media proxy route of the same file): followed.
    fake.failNextDownload({ redirectTo: sent.attachments[0]!.proxy_url });
    expect((await fetchAll(channel, attachment)).equals(bytes)).toBe(true);

    const targets = [
      `http://127.0.0.1:${other.port}/stolen`,
      `//127.0.0.1:${other.port}/scheme-relative`,
      "http://10.0.0.1/x",
      "http://192.168.0.1/x",
      "http://169.254.169.254/latest/meta-data/",
    ];
    const reasons: string[] = [];
    for (const redirectTo of targets) {
      fake.failNextDownload({ redirectTo });
      reasons.push(await reasonOf(channel, attachment));
    }
    expect(reasons).toEqual(
      targets.map(() => "AttachmentFetchError: a redirect led away from Discord's file hosts"),
    );
    expect(other.asked).toEqual([]);
    expect(fake.downloads.map((d) => [d.via, d.status])).toEqual([
      ["cdn", 302],
      ["media", 200],
      ...targets.map(() => ["cdn", 302]),
    ]);
  });

  it("refuses Discord's CDN names when they resolve to a loopback or private address (DNS rebinding)", async () => {
    const fake = await startFake();
    const resolved: string[] = [];
    const { channel, inbound } = await startChannel(fake, {
      requestTimeoutMs: 2000,
      resolveHost: async (hostname) => {
        resolved.push(hostname);
        return hostname === "cdn.discordapp.com"
          ? [{ address: "127.0.0.1", family: 4 }]
          : [
              { address: "10.0.0.5", family: 4 },
              { address: "::ffff:192.168.1.1", family: 6 },
            ];
      },
    });
    const signed = "attachments/1/2/x.bin?ex=1&is=2&hm=3";
    fake.sendDirectMessage({
      attachments: [
        { filename: "cdn.bin", bytes: randomBytes(8), url: `https://cdn.discordapp.com/${signed}` },
        {
          filename: "media.bin",
          bytes: randomBytes(8),
          url: `https://media.discordapp.net/${signed}`,
        },
      ],
    });
    await waitUntil(() => inbound.length === 1, "the message");
    const reasons: string[] = [];
    for (const attachment of inbound[0]!.attachments!) {
      reasons.push(await reasonOf(channel, attachment));
    }
    expect(reasons).toEqual([
      "AttachmentFetchError: Discord's file host is not on a public address",
      "AttachmentFetchError: Discord's file host is not on a public address",
    ]);
    expect(resolved).toEqual(["cdn.discordapp.com", "media.discordapp.net"]);
  });
});
