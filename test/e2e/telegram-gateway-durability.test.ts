import { interruptedText } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1101;

/**
 * The journal end to end over Telegram (docs/durability.md), in one process: a stop at the
 * drain deadline keeps what did not finish for the next start, which tells the chat about the
 * cut-off turn and runs the queued message. Crash loops with the real CLI are in test/long.
 */
describe("gateway over Telegram: nothing lost to a stop", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-dur", [{ admins: [Admin] }], {
      drainTimeoutMs: 300,
    });
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("reports itself healthy: channel up, journal writable, engine reachable", async () => {
    const health = await harness.gateway.health();
    expect(health.status).toBe("ok");
    expect(health.channels.map((c) => [c.platform, c.state])).toEqual([["telegram", "up"]]);
    expect(health.journal.writable).toBe(true);
    expect(health.engine.reachable).toBe(true);
  });

  it("a turn cut off at the drain deadline gets a notice after the restart; the message queued behind it runs", async () => {
    const since = bot.mark();
    const long = await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 30; echo never-printed" }),
    );
    // The turn is running once the typing indicator went out.
    await waitUntil(
      () => bot.callsIn(Admin, since).some((c) => c.method === "sendChatAction"),
      "the long turn to start",
    );
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "echo queued-ran" }));
    await waitUntil(
      () => bot.texts(Admin, since).length > 0,
      "the queued message's acknowledgement",
    );
    await harness.restart();
    await waitUntil(() => bot.texts(Admin, since).includes("queued-ran"), "the queued message");
    const texts = bot.texts(Admin, since);
    const longMessage = long.message;
    if (longMessage === undefined || !("text" in longMessage)) throw new Error("no message");
    const notice = interruptedText({
      profile: "",
      platform: "telegram",
      chatId: String(Admin),
      chatType: "dm",
      userId: String(Admin),
      messageId: String(longMessage.message_id),
      text: "sleep 30; echo never-printed",
      receiptId: String(long.update_id),
    });
    expect(texts).toEqual(["⏳ queued — 1 ahead; /stop cancels", notice, "queued-ran"]);
    const noticeCall = bot
      .callsIn(Admin, since)
      .find((c) => c.method === "sendMessage" && c.params.text === notice);
    expect(noticeCall?.params.reply_parameters).toMatchObject({
      message_id: longMessage.message_id,
    });
  });
});
