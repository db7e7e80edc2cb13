import type { Gateway } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDiscord } from "../fakes/discord/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

/** A reply of `bytes` times `char`, made in the sandbox (no newline at the end). */
const bigOutput = (bytes: number, char: string) => `head -c ${bytes} /dev/zero | tr '\\0' ${char}`;
const Notice = /\n\n✂️ Cut here: the whole reply \(1(\.0)? MB\) is attached as reply\.txt\.$/;
/** The shell agent keeps the whole output (its default keeps the last 3500 characters). */
const WholeOutput = { kind: "shell", maxReplyChars: 2_000_000 } as const;

/**
 * Long replies, end to end (docs/media.md, "Long replies"): a 1 MB reply made by the shell
 * agent in the real engine arrives as `delivery.maxTextChunks` (4; 2 on Discord here) messages of its head plus
 * one `reply.txt` whose bytes are the whole reply, through the durable outbox — on Telegram
 * (grammY against the fake) and Discord (discord.js against the fake).
 */
describe("long replies over Telegram", () => {
  const Admin = 1301;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  /** Attempts the outbox scheduled for later, run by the test. */
  const later: (() => void)[] = [];

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-long",
      [{ admins: [Admin], agent: WholeOutput }],
      {
        outboxSchedule: (run) => {
          later.push(run);
          return () => {};
        },
        retrySleep: async () => {},
      },
    );
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const sends = (since: number) =>
    bot
      .callsIn(Admin, since)
      .filter((c) => c.ok && c.method.startsWith("send") && c.method !== "sendChatAction");

  it("sends a 1 MB reply as 4 messages ending with the notice, and the whole as reply.txt", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: bigOutput(1_000_000, "a") }),
    );
    expect(sends(since).map((c) => c.method)).toEqual([
      "sendMessage",
      "sendMessage",
      "sendMessage",
      "sendMessage",
      "sendDocument",
    ]);
    const texts = bot.texts(Admin, since);
    expect(texts).toHaveLength(4);
    expect(texts.slice(0, 3)).toEqual(Array(3).fill("a".repeat(4096)));
    expect(texts[3]).toMatch(Notice);
    const [file] = bot.arrived(Admin, since);
    expect(file?.filename).toBe("reply.txt");
    expect(file?.bytes.equals(Buffer.alloc(1_000_000, "a"))).toBe(true);
  });

  it("sends reply.txt exactly once when a flood wait holds it back: the outbox resumes after the head", async () => {
    const since = bot.mark();
    bot.fake.rateLimitNext("sendDocument", 600);
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: bigOutput(1_000_000, "b") }),
    );
    expect(bot.texts(Admin, since)).toHaveLength(4);
    expect(bot.arrived(Admin, since)).toEqual([]);
    expect(later).toHaveLength(1);
    later.shift()!();
    await waitUntil(() => bot.arrived(Admin, since).length === 1, "reply.txt after the wait");
    await harness.gateway.idle();
    expect(sends(since).map((c) => c.method)).toEqual([
      "sendMessage",
      "sendMessage",
      "sendMessage",
      "sendMessage",
      "sendDocument",
    ]);
    expect(bot.arrived(Admin, since)[0]?.bytes.equals(Buffer.alloc(1_000_000, "b"))).toBe(true);
  });

  it("sends a reply that fits in 4 messages as messages only", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: bigOutput(4096 * 3, "c") }),
    );
    expect(sends(since).map((c) => c.method)).toEqual([
      "sendMessage",
      "sendMessage",
      "sendMessage",
    ]);
  });
});

describe("long replies over Discord", () => {
  const Token = "discord-long-e2e-token-Lq2w";
  const Admin = "330000000000000001";
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;
  let gateway: Gateway;

  beforeAll(async () => {
    // Not the default: the configured number reaches the channel.
    harness = await DiscordGatewayHarness.start("e2e-dlong", Token, {
      profile: { admins: [`discord:${Admin}`], agent: WholeOutput },
      config: { delivery: { maxTextChunks: 2 } },
    });
    ({ fake, gateway } = harness);
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("sends a 1 MB reply as delivery.maxTextChunks (2 here) messages ending with the notice, and the whole as reply.txt", async () => {
    const dm = fake.world.dmChannel(Admin);
    fake.sendDirectMessage({ content: bigOutput(1_000_000, "d"), authorId: Admin });
    await fake.waitForCall(() => fake.messagesIn(dm).some((m) => m.files.length > 0));
    await gateway.idle();
    const posted = fake.messagesIn(dm);
    expect(posted.map((m) => m.files.length)).toEqual([0, 0, 1]);
    expect(posted[0]?.content).toBe("d".repeat(2000));
    expect(posted[1]?.content).toMatch(Notice);
    const file = posted[2]!.files[0]!;
    expect(file.filename).toBe("reply.txt");
    expect(file.bytes.equals(Buffer.alloc(1_000_000, "d"))).toBe(true);
  });
});
