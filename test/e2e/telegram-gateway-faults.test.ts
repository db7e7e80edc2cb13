import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { pngWith, writeCommand } from "./harness/sandbox-files.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;

/**
 * Delivery under pressure, end to end: Telegram's flood control and server errors injected by
 * the fake (429 with retry_after, 5xx), and a reply made of 1 MB of MEDIA: noise. Files that
 * arrived are counted in the fake's successful calls only.
 */
describe("gateway over Telegram: delivery under rate limits and noise", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  /** Delays the outbox asked for; each scheduled attempt runs after 50 ms instead. */
  const scheduled: number[] = [];
  /** Waits between send attempts (Telegram's short `retry_after`): recorded, not waited. */
  const retryWaits: number[] = [];

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-flood",
      [{ admins: [Admin], allowed: [Member] }],
      {
        outboxSchedule: (run, delayMs) => {
          scheduled.push(delayMs);
          const timer = setTimeout(run, 50);
          return () => clearTimeout(timer);
        },
        retrySleep: async (ms) => {
          retryWaits.push(ms);
        },
      },
    );
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("delivers every file exactly once through a storm of 429s on documents, photos and albums", async () => {
    const docs = [randomBytes(5000), randomBytes(7000), randomBytes(3000)];
    const photos = [pngWith(randomBytes(32)), pngWith(randomBytes(32)), pngWith(randomBytes(32))];
    const faultsBefore = bot.fake.calls.filter((c) => c.fault === "rate_limit").length;
    const since = bot.mark();

    bot.fake.rateLimitNext("sendDocument", 1, 2);
    bot.fake.rateLimitNext("sendMediaGroup", 1, 2);
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          writeCommand("/workspace/d0.bin", docs[0]!),
          writeCommand("/workspace/d1.bin", docs[1]!),
          writeCommand("/workspace/p0.png", photos[0]!),
          writeCommand("/workspace/p1.png", photos[1]!),
          "echo two of each",
          "for f in d0.bin p0.png d1.bin p1.png; do echo MEDIA:/workspace/$f; done",
        ].join("; "),
      }),
    );
    bot.fake.rateLimitNext("sendPhoto", 1, 2);
    bot.fake.rateLimitNext("sendDocument", 1, 1);
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          writeCommand("/workspace/p2.png", photos[2]!),
          writeCommand("/workspace/d2.bin", docs[2]!),
          "echo MEDIA:/workspace/p2.png; echo MEDIA:/workspace/d2.bin",
        ].join("; "),
      }),
    );

    const faults = bot.fake.calls.filter((c) => c.fault === "rate_limit").length - faultsBefore;
    expect(faults).toBe(7);
    // Each 429 asked for 1 s, and the next attempt came after that wait (which is not slept).
    expect(retryWaits).toEqual(Array(7).fill(1000));
    const arrived = bot.arrived(Admin, since);
    const byName = new Map<string, Buffer[]>();
    for (const file of arrived) {
      byName.set(file.filename ?? "?", [...(byName.get(file.filename ?? "?") ?? []), file.bytes]);
    }
    const expected: [string, Buffer][] = [
      ["d0.bin", docs[0]!],
      ["d1.bin", docs[1]!],
      ["d2.bin", docs[2]!],
      ["p0.png", photos[0]!],
      ["p1.png", photos[1]!],
      ["p2.png", photos[2]!],
    ];
    expect([...byName.keys()].sort()).toEqual(expected.map(([name]) => name));
    for (const [name, bytes] of expected) {
      expect(byName.get(name), name).toHaveLength(1);
      expect(byName.get(name)![0]!.equals(bytes), name).toBe(true);
    }
    const album = arrived.filter((f) => f.method === "sendMediaGroup").map((f) => f.filename);
    expect(album).toEqual(["p0.png", "p1.png"]);
    expect(bot.texts(Admin, since).join("\n")).not.toContain("Couldn't deliver");
  });

  it("retries a reply text through 429s; a 5xx upload is not resent (at-most-once)", async () => {
    const since = bot.mark();
    bot.fake.rateLimitNext("sendMessage", 1, 2);
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "echo through the flood" }),
    );
    // A 5xx may come after Telegram posted the file: by default it is not sent again.
    bot.fake.serverErrorNext("sendDocument", 502, 1);
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf five-oh-two > /workspace/f.txt; echo MEDIA:/workspace/f.txt",
      }),
    );
    expect(bot.texts(Admin, since)).toEqual([
      "through the flood",
      "⚠️ f.txt may not have arrived: the connection broke while it was being sent, and it is not sent twice.",
    ]);
    const uploads = bot.callsIn(Admin, since).filter((c) => c.method === "sendDocument");
    expect(uploads.map((c) => c.status)).toEqual([502]);
  });

  it("tells the chat at once when Telegram refuses a reply's text, instead of retrying what it does not send again", async () => {
    const since = bot.mark();
    scheduled.length = 0;
    bot.fake.failNext("sendMessage", {
      kind: "error",
      status: 400,
      description: "Bad Request: TOPIC_CLOSED",
    });
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "echo refused" }));
    expect(bot.texts(Admin, since)).toEqual([
      "⚠️ Couldn't deliver this reply's text: Telegram did not take it.",
    ]);
    expect(scheduled).toEqual([]);
    expect(bot.callsIn(Admin, since).filter((c) => c.method === "sendMessage")).toHaveLength(2);
  });

  it("does not sleep through a long flood wait: the reply is scheduled for after it, then delivered", async () => {
    const since = bot.mark();
    scheduled.length = 0;
    bot.fake.rateLimitNext("sendDocument", 120, 1);
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf later > /workspace/later.txt; echo MEDIA:/workspace/later.txt",
      }),
    );
    await waitUntil(() => bot.arrived(Admin, since).length > 0, "the scheduled delivery");
    expect(scheduled).toEqual([120_000]);
    expect(bot.arrived(Admin, since).map((f) => f.bytes.toString())).toEqual(["later"]);
    expect(bot.callsIn(Admin, since).filter((c) => c.method === "sendDocument")).toHaveLength(2);
    expect(bot.texts(Admin, since).join("\n")).not.toContain("Couldn't deliver");
  });

  it("answers a 1 MB reply full of MEDIA: noise, and another session is answered meanwhile", async () => {
    const since = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "yes 'MEDIA:/x MEDIA:`/y MEDIA:\"/z' | head -c 1048576; echo",
      }),
    );
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Member, text: "echo the other session is answered" }),
    );
    await waitUntil(
      () => bot.texts(Member, since).includes("the other session is answered"),
      "the other session's answer",
      60_000,
    );
    await waitUntil(() => bot.texts(Admin, since).length > 0, "the noisy reply", 60_000);
    await harness.gateway.idle();
    const noisy = bot.texts(Admin, since).join("\n");
    expect(noisy).toContain("Couldn't deliver x");
    // Only the output itself, whole as far as the sandbox kept it (docs/media.md).
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.filename?.startsWith("output-"), f.bytes.length])).toEqual([
      [true, 1024 * 1024],
    ]);
  });

  it("never writes a bot token into the logs", () => {
    expect(harness.logs.length).toBeGreaterThan(0);
    const text = harness.logs.join("");
    for (const secret of harness.secrets) expect(text).not.toContain(secret);
  });
});
