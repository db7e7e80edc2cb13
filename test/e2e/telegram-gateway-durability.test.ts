import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
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
    // The turn's command has started once `sleep 30` runs in the container (the typing
    // indicator goes out earlier, while the container may still be made: a turn cut off then
    // never started, and runs again after the restart).
    await waitUntil(async () => {
      const running = (await bot.containers()).find((c) => c.state === "running");
      return (
        running !== undefined && (await harness.docker.processes(running.id)).includes("sleep 30")
      );
    }, "the long turn's command to start");
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

describe("gateway over Telegram with recovery.rerunInterrupted", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-rerun", [{ admins: [Admin] }], {
      drainTimeoutMs: 300,
      settings: { recovery: { rerunInterrupted: true } },
    });
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("a turn cut off after its first command started runs again after the restart, without the notice", async () => {
    const since = bot.mark();
    // The first run marks the workspace and hangs; the run after the restart finds the mark.
    const command =
      "if [ -e /workspace/ran-once ]; then echo ran-again; else touch /workspace/ran-once; sleep 30; fi";
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: command }));
    await waitUntil(
      () => existsSync(join(bot.profileSlotDir(), "workspace", "ran-once")),
      "the turn's command to start",
    );
    await harness.restart();
    await waitUntil(() => bot.texts(Admin, since).includes("ran-again"), "the turn run again");
    expect(bot.texts(Admin, since)).toEqual(["ran-again"]);
  });
});

/**
 * The media plan is recorded with the reply before its first send (docs/durability.md): a
 * reply resumed after a long `retry_after` delivers the steps of that plan, whatever became of
 * its files since.
 */
describe("gateway over Telegram: a resumed reply delivers the plan recorded before its first send", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  /** The outbox's timers, fired by the test. */
  const scheduled: { run: () => void; delayMs: number }[] = [];

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-plan", [{ admins: [Admin] }], {
      outboxSchedule: (run, delayMs) => {
        scheduled.push({ run, delayMs });
        return () => {};
      },
    });
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("a file deleted between attempts gets its notice; every other step goes out exactly once", async () => {
    const since = bot.mark();
    // b.mp3 (an audio, by its name) is refused by flood control for an hour: the reply stops
    // there and the outbox schedules the rest.
    bot.fake.failNext("sendAudio", { kind: "rate_limit", retryAfterSeconds: 3600 });
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          "cd /workspace && printf a > a.txt && printf b > b.mp3 && printf c > c.txt",
          "echo three files",
          ...["a.txt", "b.mp3", "c.txt", "nope.txt"].map((name) => `echo MEDIA:/workspace/${name}`),
        ].join(" && "),
      }),
    );
    const caption = "three files\n\nMEDIA:/workspace/nope.txt";
    expect(bot.texts(Admin, since)).toEqual([caption, "⚠️ Couldn't deliver nope.txt"]);
    expect(scheduled.map((s) => s.delayMs)).toEqual([expect.any(Number)]);

    await rm(join(bot.profileSlotDir(), "workspace", "b.mp3"));
    scheduled[0]!.run();
    await waitUntil(
      () => bot.texts(Admin, since).includes("⚠️ Couldn't deliver b.mp3"),
      "the notice for the file deleted since",
    );
    expect(bot.arrived(Admin, since).map((file) => [file.method, file.filename])).toEqual([
      ["sendDocument", "a.txt"],
      ["sendDocument", "c.txt"],
    ]);
    expect(bot.texts(Admin, since)).toEqual([
      caption,
      "⚠️ Couldn't deliver nope.txt",
      "⚠️ Couldn't deliver b.mp3",
    ]);
  });
});
