import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { Gateway, type GatewayConfig, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import {
  type AttachmentInput,
  asShown,
  type DispatchedMessage,
  FakeDiscord,
  type StoredMessage,
} from "../fakes/discord/index.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
} from "./harness/gateway-home.js";

const Token = "discord-inbound-media-token-Hq3z";
const Admin = "300000000000000001";
const Stranger = "300000000000000666";
/** `discord.downloadMaxBytes` of the profile: small, so an over-limit file is cheap. */
const DownloadMaxBytes = 100_000;

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Every byte value once, then random bytes: NUL, newlines, quotes and 0xff included. */
const awkwardBytes = (randomLength: number) =>
  Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(randomLength)]);

const doc = (
  filename: string,
  bytes: Buffer,
  contentType = "application/pdf",
): AttachmentInput => ({
  filename,
  bytes,
  contentType,
});

/** Runs `sha256sum` on every path in `$MEDIAGATE_ATTACHMENTS`, one line each. */
const HashAttachments = `echo "$MEDIAGATE_ATTACHMENTS" | while read -r f; do sha256sum "$f"; done`;

/** `sha256sum`'s lines as [hash, path]. */
const hashLines = (text: string) =>
  text.split("\n").map((line) => {
    const [hash = "", path = ""] = line.split(/ {2}/);
    return [hash, path] as const;
  });

/**
 * Files users send on Discord, end to end: the real gateway built from a config, discord.js
 * against the fake (whose CDN serves the attachments), the shell agent in the real Docker
 * engine. What arrives in `/workspace/inbox/` is checked from inside the container.
 */
describe("gateway over Discord: files users send reach the sandbox", () => {
  const profile = uniqueProfileName("t-discord-inbound");
  let fake: FakeDiscord;
  let config: GatewayConfig;
  let gateway: Gateway | undefined;
  let home = "";
  let general = "";

  beforeAll(async () => {
    fake = await FakeDiscord.start({ token: Token });
    home = await createTempHome("e2e-discord-inbound");
    config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            discord: { token: Token, apiRoot: fake.apiRoot, downloadMaxBytes: DownloadMaxBytes },
            admins: [`discord:${Admin}`],
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    // Status messages only when a test moves this clock (none does here): a slow turn posts
    // none that a test could take for its reply.
    gateway = await Gateway.create(config, {
      activityIntervalMs: 100,
      progressClock: manualClock(),
    });
    await gateway.start();
    general = fake.guild.channels[0]!.id;
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
    await fake?.close();
  });

  /**
   * Dispatches one message and waits until the gateway has handled it (a post seen, then
   * idle); returns what the bot posted in the chat meanwhile.
   */
  async function turn(
    channelId: string,
    send: () => DispatchedMessage,
  ): Promise<{ posts: StoredMessage[]; sent: DispatchedMessage }> {
    const before = fake.messagesIn(channelId).length;
    const sent = send();
    await fake.waitForCall(() => fake.messagesIn(channelId).length > before);
    await gateway!.idle();
    return { posts: fake.messagesIn(channelId).slice(before), sent };
  }

  const inDm = (content: string, attachments: AttachmentInput[] = []) =>
    turn(fake.world.dmChannel(Admin), () =>
      fake.sendDirectMessage({ content, attachments, authorId: Admin }),
    );

  const inGuild = (content: string, attachments: AttachmentInput[] = []) =>
    turn(general, () =>
      fake.sendGuildMessage(general, { content, attachments, mentionBot: true, authorId: Admin }),
    );

  it("saves a document byte-for-byte in a guild channel (bot mentioned) and in a DM", async () => {
    for (const [where, send] of [
      ["guild", inGuild],
      ["dm", inDm],
    ] as const) {
      const bytes = awkwardBytes(40_000);
      const { posts } = await send('sha256sum "$MEDIAGATE_ATTACHMENTS"', [
        doc(`contract ${where}.pdf`, bytes),
      ]);
      expect(posts).toHaveLength(1);
      const [[hash, path]] = hashLines(asShown(posts[0]!.content)) as [readonly [string, string]];
      expect(hash).toBe(sha256(bytes));
      expect(path).toMatch(new RegExp(`^/workspace/inbox/contract.${where}.*\\.pdf$`));
    }
  });

  it("makes one turn of a message with three attachments, with three paths", async () => {
    const files = ["a.txt", "b.csv", "c.bin"].map((name) => doc(name, randomBytes(3000)));
    const { posts } = await inDm(HashAttachments, files);
    expect(posts).toHaveLength(1);
    const lines = hashLines(asShown(posts[0]!.content));
    expect(lines.map(([hash]) => hash)).toEqual(files.map((file) => sha256(file.bytes)));
    expect(lines.map(([, path]) => path)).toEqual([
      expect.stringMatching(/^\/workspace\/inbox\/a.*\.txt$/),
      expect.stringMatching(/^\/workspace\/inbox\/b.*\.csv$/),
      expect.stringMatching(/^\/workspace\/inbox\/c.*\.bin$/),
    ]);
  });

  it("lists the saved files when the message has attachments and no text", async () => {
    const files = ["one.txt", "two.txt", "three.txt"].map((name) =>
      doc(name, Buffer.from(`${name} ${randomBytes(8).toString("hex")}`), "text/plain"),
    );
    const { posts } = await inGuild("", files);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.content.split("\n")).toEqual([
      expect.stringMatching(/^\/workspace\/inbox\/one.*\.txt \(.+, \d+ B\)$/),
      expect.stringMatching(/^\/workspace\/inbox\/two.*\.txt \(.+, \d+ B\)$/),
      expect.stringMatching(/^\/workspace\/inbox\/three.*\.txt \(.+, \d+ B\)$/),
    ]);
  });

  it("refuses an attachment over downloadMaxBytes unread, with a notice, and saves the others", async () => {
    await inDm("rm -rf /workspace/inbox; echo cleared");
    const small = doc("small.txt", Buffer.from("small and welcome"), "text/plain");
    const big = doc("big.bin", randomBytes(DownloadMaxBytes + 50_000), "application/zip");
    const other = doc("other.txt", Buffer.from("also welcome"), "text/plain");
    const { posts, sent } = await inDm("", [small, big, other]);
    expect(posts.map((post) => post.content)).toEqual([
      expect.stringMatching(/^📎 “big\.bin” was not saved: it is larger than 100 KB/),
      expect.stringMatching(/^\/workspace\/inbox\/small.*\n\/workspace\/inbox\/other.*$/),
    ]);
    expect(fake.cdn.downloadsOf(sent.attachments[1]!.id)).toEqual([]);
    for (const saved of [sent.attachments[0]!, sent.attachments[2]!]) {
      expect(fake.cdn.downloadsOf(saved.id).map((download) => download.complete)).toEqual([true]);
    }
    const listing = await inDm("ls -A /workspace/inbox");
    expect(listing.posts.map((post) => post.content.split("\n").sort())).toEqual([
      [expect.stringMatching(/^other.*\.txt$/), expect.stringMatching(/^small.*\.txt$/)],
    ]);
  });

  it("never downloads a stranger's attachment", async () => {
    const strangerDm = fake.world.dmChannel(Stranger);
    const sent = fake.sendDirectMessage({
      content: HashAttachments,
      attachments: [doc("from-stranger.pdf", randomBytes(2000))],
      authorId: Stranger,
    });
    // The admin's turn after it: the gateway has handled the stranger's message by then.
    const sentinel = await inDm(`echo sentinel-${sent.id}`);
    expect(sentinel.posts.map((post) => post.content)).toEqual([`sentinel-${sent.id}`]);
    await gateway!.idle();
    expect(fake.cdn.downloadsOf(sent.attachments[0]!.id)).toEqual([]);
    expect(
      fake
        .messagesIn(strangerDm)
        .map((post) => post.content)
        .join("\n"),
    ).not.toMatch(/[0-9a-f]{64}/);
    const listing = await inDm("ls -A /workspace/inbox");
    expect(listing.posts[0]?.content).not.toContain("from-stranger");
  });

  it("catches up a message with an attachment sent while the gateway was down and saves its file", async () => {
    await inDm("echo before the restart");
    await gateway!.stop();
    const bytes = awkwardBytes(20_000);
    const dm = fake.world.dmChannel(Admin);
    const before = fake.messagesIn(dm).length;
    fake.sendDirectMessage({
      content: 'sha256sum "$MEDIAGATE_ATTACHMENTS"',
      attachments: [doc("while-down.pdf", bytes)],
      authorId: Admin,
    });
    // Status messages only when a test moves this clock (none does here): a slow turn posts
    // none that a test could take for its reply.
    gateway = await Gateway.create(config, {
      activityIntervalMs: 100,
      progressClock: manualClock(),
    });
    await gateway.start();
    await fake.waitForCall(() => fake.messagesIn(dm).length > before);
    await gateway.idle();
    const posts = fake.messagesIn(dm).slice(before);
    expect(posts).toHaveLength(1);
    const [[hash, path]] = hashLines(asShown(posts[0]!.content)) as [readonly [string, string]];
    expect(hash).toBe(sha256(bytes));
    expect(path).toMatch(/^\/workspace\/inbox\/while-down.*\.pdf$/);
  });

  it("tells the user an attachment off Discord's file hosts could not be downloaded, asking that host nothing", async () => {
    const asked: string[] = [];
    const other = createServer((req, res) => {
      asked.push(req.url ?? "");
      res.end("not Discord's");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = other.address() as { port: number };
      const { posts } = await inDm("echo ran", [
        { filename: "lure.pdf", bytes: randomBytes(100), url: `http://127.0.0.1:${port}/lure.pdf` },
      ]);
      expect(posts.map((post) => post.content)).toEqual([
        "📎 “lure.pdf” could not be downloaded (the address is not one of Discord's file hosts). Send it again.",
        "ran",
      ]);
      expect(asked).toEqual([]);
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it("sent the bot token to none of the downloads", () => {
    expect(fake.downloads.length).toBeGreaterThan(0);
    expect(fake.downloads.filter((download) => download.authorization)).toEqual([]);
  });
});
