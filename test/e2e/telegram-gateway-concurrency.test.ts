import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Slow = 1501;
const Other = 1502;

/**
 * The `concurrency` cap and deliveries (docs/configuration.md, "Why `concurrency` defaults to
 * 16"), end to end: the real gateway with `concurrency: 1`, TelegramChannel and grammY against
 * FakeTelegram, the shell agent in the real engine. FakeTelegram takes one reply and holds
 * its answer for as long as the test wants, as a platform slow to answer does.
 */
describe("gateway over Telegram: a slow delivery and the concurrency cap", () => {
  let harness: TelegramGatewayHarness;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-conc", [{ admins: [Slow], allowed: [Other] }], {
      settings: { concurrency: 1 },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("a reply the platform is slow to take leaves the one place to another chat's turn; its own chat's next message waits for it", async () => {
    const bot = harness.bot(0);
    const texts = (chat: number) =>
      bot.fake.botMessagesIn(chat).map((message) => String(message.text));
    let release!: () => void;
    bot.fake.failNext("sendMessage", {
      kind: "held",
      until: new Promise<void>((resolve) => {
        release = resolve;
      }),
    });

    await bot.post((fake) => fake.sendPrivateText({ userId: Slow, text: "echo first-$((1 + 1))" }));
    await waitUntil(
      () => texts(Slow).includes("first-2"),
      "the first reply posted, its answer held",
    );
    await bot.post((fake) => fake.sendPrivateText({ userId: Slow, text: "echo again-$((2 + 2))" }));
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Other, text: "echo other-$((3 + 3))" }),
    );
    // The other chat's turn takes the one place while the first reply's answer is still held.
    await waitUntil(() => texts(Other).includes("other-6"), "the other chat's answer");
    expect(bot.fake.callsTo("sendMessage").filter((call) => call.fault === "held")).toEqual([]);
    // The slow chat's next message waits for that delivery, and is not told it is queued.
    expect(texts(Slow)).toEqual(["first-2"]);

    release();
    await waitUntil(() => texts(Slow).length >= 2, "the slow chat's second answer");
    await harness.gateway.idle();
    expect(texts(Slow)).toEqual(["first-2", "again-4"]);
    expect(texts(Other)).toEqual(["other-6"]);
    expect(bot.fake.callsTo("sendMessage").filter((call) => call.fault === "held")).toHaveLength(1);
  });
});
