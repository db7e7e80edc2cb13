import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import type { FakeCallbackQuery, RecordedCall } from "../fakes/telegram/index.js";
import { TaskCommands } from "./harness/menus.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 3001;
const Asker = 3002;
const Other = 3003;
const TenMinutesMs = 10 * 60 * 1000;
/** Debian's chromium (scripts/ensure-chromium.sh): no browser is downloaded. */
const Chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

interface Question {
  readonly messageId: number;
  readonly text: string;
  readonly data: readonly string[];
}

/**
 * Approvals over Telegram, end to end (docs/approvals.md): the real gateway with the shell agent
 * and `agent.approvals: always`, grammY against FakeTelegram (inline keyboards, callback
 * queries), the real Docker engine. What ran is read from the sandbox's files; the web console's
 * Approvals page is read in chromium.
 */
describe("gateway over Telegram: approvals with buttons", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let browser: Browser | undefined;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-appr",
      [{ admins: [Admin], allowed: [Asker, Other], agent: { kind: "shell", approvals: "always" } }],
      { drainTimeoutMs: 300, web: true },
    );
    bot = harness.bot();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  const made = (name: string) => existsSync(join(bot.profileSlotDir(), "workspace", name));
  const send = (user: number, text: string) =>
    bot.post((fake) => fake.sendPrivateText({ userId: user, text }));

  /** The next question with buttons the bot posts in `chat` after `since`. */
  async function question(chat: number, since: number): Promise<Question> {
    const call = await waitFor(() => {
      const found = bot
        .callsIn(chat, since)
        .find((c) => c.method === "sendMessage" && c.ok && c.params.reply_markup !== undefined);
      expect(found).toBeDefined();
      return found as RecordedCall;
    });
    const message = call.result as {
      message_id: number;
      text: string;
      reply_markup: { inline_keyboard: { text: string; callback_data: string }[][] };
    };
    return {
      messageId: message.message_id,
      text: message.text,
      data: message.reply_markup.inline_keyboard.flat().map((b) => b.callback_data),
    };
  }

  async function press(
    chat: number,
    q: Question,
    button: string,
    user: number,
  ): Promise<FakeCallbackQuery> {
    const query = bot.fake.pressButton({
      chatId: chat,
      messageId: q.messageId,
      button,
      userId: user,
    });
    await waitUntil(() => query.answer !== undefined, "the press answered");
    return query;
  }

  const shown = (chat: number, q: Question) => bot.fake.botMessage(chat, q.messageId);

  it("lists /allow and /deny in the menus: everyone's, and the admin's with the admin commands", async () => {
    await waitUntil(() => bot.fake.menus.get() !== undefined, "the default menu");
    const names = (entries: readonly { command: string }[] | undefined) =>
      entries?.map((entry) => entry.command);
    expect(names(bot.fake.menus.get())).toEqual(["help", "allow", "deny", ...TaskCommands]);
    // The admin's own menu is set once Telegram knows their chat: after their first message.
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/help" }));
    const adminScope = { type: "chat", chat_id: Admin } as const;
    await waitUntil(() => bot.fake.menus.get(adminScope) !== undefined, "the admin's menu");
    expect(names(bot.fake.menus.get(adminScope))).toEqual([
      "help",
      "allow",
      "deny",
      ...TaskCommands,
      "status",
      "stop",
      "reset",
    ]);
  });

  it("runs the command only after Allow once, and shows who allowed it", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/allowed-once && echo made-it");
    const q = await question(Asker, since);
    expect(q.text).toContain("$ touch /workspace/allowed-once && echo made-it");
    expect(q.data).toHaveLength(3);
    for (const data of q.data) expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
    expect(made("allowed-once")).toBe(false);

    const query = await press(Asker, q, "Allow once", Asker);
    await harness.gateway.idle();
    expect(query.answer?.text).toMatch(/^✅ Allowed once by/);
    expect(made("allowed-once")).toBe(true);
    expect(bot.texts(Asker, since)).toContain("made-it");
    const message = await waitFor(() => {
      const now = shown(Asker, q);
      expect(now?.text).toMatch(/^✅ Allowed once by @?\w+:\n\$ touch/);
      return now;
    });
    expect(message?.reply_markup).toBeUndefined();
  });

  it("runs nothing on Deny, and the reply says it was denied", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/denied");
    const q = await question(Asker, since);
    await press(Asker, q, "Deny", Asker);
    await harness.gateway.idle();
    expect(made("denied")).toBe(false);
    expect(bot.texts(Asker, since).join("\n")).toMatch(/🚫 Not run: .* denied it/);
    await waitFor(() => expect(shown(Asker, q)?.text).toMatch(/^🚫 Denied by/));
  });

  it("refuses a press by someone who may not decide; a second press is told it is decided", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/not-yours");
    const q = await question(Asker, since);
    const stranger = await press(Asker, q, "Allow once", Other);
    expect(stranger.answer?.text).toMatch(/^Only the person who asked \(or an admin\)/);
    expect(shown(Asker, q)?.reply_markup).toBeDefined();
    expect(made("not-yours")).toBe(false);

    const admin = await press(Asker, q, "Deny", Admin);
    expect(admin.answer?.text).toMatch(/^🚫 Denied by/);
    // A stale keyboard (another device of the user) can still send the press.
    const again = bot.fake.sendCallbackQuery({
      chatId: Asker,
      messageId: q.messageId,
      data: q.data[0]!,
      userId: Asker,
    });
    await waitUntil(() => again.answer !== undefined, "the second press answered");
    expect(again.answer?.text).toMatch(/^Already decided: 🚫 Denied by/);
    await harness.gateway.idle();
    expect(made("not-yours")).toBe(false);
  });

  it("refuses forged data and a press carried to another chat; the typed /deny still decides", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/forged");
    const q = await question(Asker, since);
    const forged = bot.fake.sendCallbackQuery({
      chatId: Asker,
      messageId: q.messageId,
      data: "ap:AAAAAAAAAAAAAAAAAAAAAA:once",
      userId: Asker,
    });
    // The real approval's data, sent on a message of the bot in another chat.
    await send(Other, "/help");
    const elsewhere = await waitFor(() => {
      const found = bot.callsIn(Other, since).find((c) => c.method === "sendMessage" && c.ok);
      expect(found).toBeDefined();
      return found as RecordedCall;
    });
    const moved = bot.fake.sendCallbackQuery({
      chatId: Other,
      messageId: (elsewhere.result as { message_id: number }).message_id,
      data: q.data[0]!,
      userId: Other,
    });
    await waitUntil(
      () => forged.answer !== undefined && moved.answer !== undefined,
      "both presses answered",
    );
    expect(forged.answer?.text).toBe("This button does nothing any more.");
    expect(moved.answer?.text).toBe("This button does nothing any more.");
    expect(shown(Asker, q)?.reply_markup).toBeDefined();
    expect(made("forged")).toBe(false);

    await send(Asker, "/deny");
    await harness.gateway.idle();
    expect(made("forged")).toBe(false);
    await waitFor(() => expect(shown(Asker, q)?.text).toMatch(/^🚫 Denied by/));
    expect(shown(Asker, q)?.reply_markup).toBeUndefined();
  });

  it("expires after 10 minutes: the agent is told, the buttons say so, a late press is answered", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/expired");
    const q = await question(Asker, since);
    harness.stateClock.advance(TenMinutesMs);
    await harness.gateway.idle();
    expect(made("expired")).toBe(false);
    expect(bot.texts(Asker, since).join("\n")).toMatch(
      /🚫 Not run: nobody approved it within 10 min/,
    );
    await waitFor(() => expect(shown(Asker, q)?.text).toMatch(/^⌛ Expired/));
    const late = bot.fake.sendCallbackQuery({
      chatId: Asker,
      messageId: q.messageId,
      data: q.data[0]!,
      userId: Asker,
    });
    await waitUntil(() => late.answer !== undefined, "the late press answered");
    expect(late.answer?.text).toMatch(/^Already decided: ⌛ Expired/);
  });

  it("closes the buttons of a question that expired while it was being posted", async () => {
    // The question reaches the chat, but Telegram's answer (its message id) is held: the
    // expiry comes before the gateway knows which message to close.
    const before = bot.fake.botMessagesIn(Asker).length;
    bot.fake.failNext("sendMessage", { kind: "slow", delayMs: 500 });
    await send(Asker, "touch /workspace/lapsed-in-flight");
    const posted = await waitFor(() => {
      const message = bot.fake.botMessagesIn(Asker)[before] as
        | { message_id: number; text: string }
        | undefined;
      expect(message?.text).toMatch(/^🔐 Approval needed/);
      return message!;
    });
    harness.stateClock.advance(TenMinutesMs);
    await harness.gateway.idle();
    expect(made("lapsed-in-flight")).toBe(false);
    await waitFor(() =>
      expect(bot.fake.botMessage(Asker, posted.message_id)?.text).toMatch(/^⌛ Expired/),
    );
    expect(bot.fake.botMessage(Asker, posted.message_id)?.reply_markup).toBeUndefined();
  });

  it("the typed /allow runs it and closes the buttons", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/typed-allow");
    const q = await question(Asker, since);
    await send(Asker, "/allow");
    await harness.gateway.idle();
    expect(made("typed-allow")).toBe(true);
    await waitFor(() => expect(shown(Asker, q)?.text).toMatch(/^✅ Allowed once by/));
    expect(shown(Asker, q)?.reply_markup).toBeUndefined();
  });

  it("a typed /allow sent before the question was asked decides nothing, and says so", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/late-question");
    const q = await question(Asker, since);
    // Sent ten seconds ago, for a question since gone: it waited in Telegram's queue.
    const answered = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({
        userId: Asker,
        text: "/allow",
        date: Math.floor(harness.stateClock.now() / 1000) - 10,
      }),
    );
    const refusal = await waitFor(() => {
      const said = bot
        .callsIn(Asker, answered)
        .find((c) => c.method === "sendMessage" && String(c.params.text).startsWith("⚠️"));
      expect(said).toBeDefined();
      return String(said?.params.text);
    });
    expect(refusal).toMatch(/^⚠️ Not decided: your \/allow was sent before the question/);
    expect(refusal).toContain("$ touch /workspace/late-question");
    expect(made("late-question")).toBe(false);
    expect(shown(Asker, q)?.reply_markup).toBeDefined();
    await send(Asker, "/allow");
    await harness.gateway.idle();
    expect(made("late-question")).toBe(true);
  });

  it("a press after a restart is answered clearly, and the message asks anew", async () => {
    const since = bot.mark();
    await send(Asker, "touch /workspace/after-restart");
    const old = await question(Asker, since);
    const restarted = bot.mark();
    await harness.restart();
    await waitFor(() =>
      expect(shown(Asker, old)?.text).toMatch(/^⚠️ Not run: the gateway restarted/),
    );
    const stale = bot.fake.sendCallbackQuery({
      chatId: Asker,
      messageId: old.messageId,
      data: old.data[0]!,
      userId: Asker,
    });
    await waitUntil(() => stale.answer !== undefined, "the stale press answered");
    expect(stale.answer?.text).toMatch(/^Already decided: ⚠️ Not run: the gateway restarted/);
    expect(made("after-restart")).toBe(false);

    const fresh = await question(Asker, restarted);
    expect(fresh.messageId).not.toBe(old.messageId);
    await press(Asker, fresh, "Allow once", Asker);
    await harness.gateway.idle();
    expect(made("after-restart")).toBe(true);
  });

  it("Allow for this session: later commands of the session run without asking", async () => {
    const since = bot.mark();
    await send(Admin, "touch /workspace/session-1");
    const q = await question(Admin, since);
    await press(Admin, q, "Allow for this session", Admin);
    await harness.gateway.idle();
    expect(made("session-1")).toBe(true);
    const next = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "touch /workspace/session-2" }),
    );
    expect(made("session-2")).toBe(true);
    expect(bot.callsIn(Admin, next).some((c) => c.params.reply_markup !== undefined)).toBe(false);
  });

  it("a /reset question waiting at a restart says to ask again; a press on it resets nothing", async () => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/reset" }));
    const q = await question(Admin, since);
    await harness.restart();
    const closed = shown(Admin, q);
    expect(closed?.text).toBe(
      "⚠️ Not reset: the gateway restarted before anyone answered, so this question no longer counts. Send /reset again if you still want it.",
    );
    expect(closed?.reply_markup).toBeUndefined();
    // A keyboard another device still shows sends the press to the new process.
    const stale = bot.fake.sendCallbackQuery({
      chatId: Admin,
      messageId: q.messageId,
      data: q.data[0]!,
      userId: Admin,
    });
    await waitUntil(() => stale.answer !== undefined, "the stale press answered");
    expect(stale.answer?.text).toMatch(
      /^This \/reset question is no longer open .* nothing was reset/,
    );
    await harness.gateway.idle();
    expect(made("allowed-once")).toBe(true);
  });

  it("/reset on the shared slot asks with Confirm / Cancel; only an admin's press counts", async () => {
    expect(made("allowed-once")).toBe(true);
    let since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/reset" }));
    let q = await question(Admin, since);
    expect(q.text).toContain("is shared");
    const member = bot.fake.pressButton({
      chatId: Admin,
      messageId: q.messageId,
      button: "Confirm",
      userId: Asker,
    });
    await waitUntil(() => member.answer !== undefined, "the member's press answered");
    expect(member.answer?.text).toBe("⛔ /reset is for admins only; nothing was done.");
    const cancel = await press(Admin, q, "Cancel", Admin);
    expect(cancel.answer).toBeDefined();
    await waitFor(() => expect(shown(Admin, q)?.text).toMatch(/^Reset cancelled by/));
    expect(made("allowed-once")).toBe(true);

    since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/reset" }));
    q = await question(Admin, since);
    await press(Admin, q, "Confirm", Admin);
    await waitFor(() =>
      expect(bot.texts(Admin, since).join("\n")).toMatch(/♻️ Reset: new conversation started/),
    );
    await waitFor(() => expect(shown(Admin, q)?.text).toMatch(/^♻️ Reset confirmed by/));
    expect(shown(Admin, q)?.reply_markup).toBeUndefined();
    expect(made("allowed-once")).toBe(false);
  });

  it("the web console lists each question: who asked, what, who decided, when, and how it ended", async () => {
    const url = harness.gateway.webUrl ?? "";
    expect((await fetch(`${url}/api/approvals`)).status).toBe(401);
    const token = (await readFile(join(harness.home, "web-token"), "utf8")).trim();
    browser = await chromium.launch({ executablePath: Chromium, args: ["--no-sandbox"] });
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${url}/login`);
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForURL(`${url}/`);
    await page.goto(`${url}/approvals`);
    const row = (action: string) =>
      page.locator("[data-testid=approval]").filter({ hasText: `/workspace/${action}` });
    const cell = async (action: string, name: string) =>
      ((await row(action).first().locator(`[data-testid=${name}]`).textContent()) ?? "").trim();
    await row("allowed-once").first().waitFor();

    expect(await row("allowed-once").getAttribute("data-status")).toBe("allowed");
    expect(await cell("allowed-once", "requester")).toContain(`telegram:${Asker}`);
    expect(await cell("allowed-once", "decider")).toContain(`telegram:${Asker}`);
    expect(await row("denied").getAttribute("data-status")).toBe("denied");
    expect(await row("not-yours").getAttribute("data-status")).toBe("denied");
    expect(await cell("not-yours", "decider")).toContain(`telegram:${Admin}`);
    expect(await row("expired").getAttribute("data-status")).toBe("expired");
    expect(await cell("expired", "decider")).toBe("nobody (expired)");
    expect(await row("session-1").getAttribute("data-status")).toBe("allowed_session");
    const restarted = row("after-restart");
    expect(await restarted.count()).toBe(2);
    expect(await restarted.nth(0).getAttribute("data-status")).toBe("allowed");
    expect(await restarted.nth(1).getAttribute("data-status")).toBe("interrupted");

    // A new question shows as waiting while the page is open, and its decision follows live.
    const since = bot.mark();
    await send(Asker, "touch /workspace/watched");
    const q = await question(Asker, since);
    await waitFor(async () =>
      expect(await row("watched").getAttribute("data-status")).toBe("pending"),
    );
    expect(await cell("watched", "outcome")).toMatch(/waiting.*expires/);
    await press(Asker, q, "Deny", Asker);
    await waitFor(async () =>
      expect(await row("watched").getAttribute("data-status")).toBe("denied"),
    );
    await harness.gateway.idle();
    expect(made("watched")).toBe(false);
  });
});
