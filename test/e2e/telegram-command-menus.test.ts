import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const OtherAdmin = 1003;
const Member = 1002;

/**
 * A shell profile without approvals: /new, /compact, /model, /usage, /allow, /deny are not
 * offered; the task commands are, to everyone allowed.
 */
const UserMenu = [
  { command: "help", description: "What this bot is, how to send files, your commands" },
  { command: "every", description: "Make a task that runs every interval (30m, 1h, 1d)" },
  {
    command: "at",
    description: "Make a task that runs once, at a time (09:00 or 2026-12-24 09:00)",
  },
  {
    command: "cron",
    description: "Make a task by a cron pattern (minute hour day month weekday)",
  },
  {
    command: "tasks",
    description: "Your scheduled tasks, with buttons to pause, run now and delete",
  },
  {
    command: "tz",
    description: "Your time zone for /at and /cron: shows it, or sets it (Europe/Berlin)",
  },
];
const AdminMenu = [
  ...UserMenu,
  { command: "status", description: "This session, its sandbox container and queue" },
  { command: "stop", description: "Abort the running command, kill what this session started" },
  { command: "reset", description: "Stop, then a new conversation and a fresh sandbox" },
];

const chatScope = (chatId: number) => ({ type: "chat", chat_id: chatId });

/** The JSON log lines whose message contains `text`. */
function logsOf(harness: TelegramGatewayHarness, text: string): Record<string, unknown>[] {
  return harness.logs
    .filter((line) => line.includes(text))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Telegram's command menus end to end (docs/sessions.md, "Command menus"): the real gateway
 * sets them with grammY's `setMyCommands` against the fake at start-up — the user menu in the
 * default scope, the admin menu in each admin's private chat.
 */
describe("gateway over Telegram: command menus", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  const sleeps: number[] = [];

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-menu",
      [{ admins: [Admin, OtherAdmin], allowed: [Member] }],
      {
        retrySleep: async (ms) => {
          sleeps.push(ms);
        },
      },
    );
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("sets the user menu for every chat at start-up; an admin's chat Telegram does not know yet gets its menu at their first message", async () => {
    const { fake } = bot;
    await waitUntil(() => fake.callsTo("setMyCommands").length === 3, "three menus tried");
    await waitUntil(
      () => logsOf(harness, "telegram command menu not registered").length === 2,
      "the admins' menus refused",
    );
    expect(fake.menus.get()).toEqual(UserMenu);
    // neither admin has written to the bot: Telegram knows no such chat
    const refused = fake.callsTo("setMyCommands").filter((call) => !call.ok);
    expect(refused.map((call) => [call.params.scope, call.description])).toEqual([
      [chatScope(Admin), "Bad Request: chat not found"],
      [chatScope(OtherAdmin), "Bad Request: chat not found"],
    ]);
    expect(logsOf(harness, "telegram command menu not registered")[0]).toMatchObject({
      level: 40,
      scope: "chat",
      chatId: String(Admin),
      status: 400,
    });

    await bot.handle((f) => f.sendPrivateText({ userId: Admin, text: "/help" }));
    await waitUntil(() => fake.menus.get(chatScope(Admin)) !== undefined, "the admin's menu");
    expect(fake.menus.get(chatScope(Admin))).toEqual(AdminMenu);
    expect(fake.menus.get(chatScope(OtherAdmin))).toBeUndefined();
    // a member's message changes nothing: only admins' chats get a menu of their own
    await bot.handle((f) => f.sendPrivateText({ userId: Member, text: "/help" }));
    expect(fake.menus.get(chatScope(Member))).toBeUndefined();
  });

  it("sets every menu at start-up once the admins' chats exist: the default scope and each admin's chat", async () => {
    const { fake } = bot;
    await bot.handle((f) => f.sendPrivateText({ userId: OtherAdmin, text: "echo hi" }));
    const since = bot.mark();
    await harness.restart();
    await waitUntil(
      () => fake.calls.slice(since).filter((c) => c.method === "setMyCommands").length === 3,
      "three menus set",
    );
    const sets = fake.calls.slice(since).filter((c) => c.method === "setMyCommands");
    expect(sets.every((call) => call.ok)).toBe(true);
    expect(sets.map((call) => call.params.scope)).toEqual([
      { type: "default" },
      chatScope(Admin),
      chatScope(OtherAdmin),
    ]);
    expect(sets.map((call) => call.params.commands)).toEqual([UserMenu, AdminMenu, AdminMenu]);
    expect([...fake.menus.all().keys()].sort()).toEqual(["chat:1001", "chat:1003", "default"]);
  });

  it("goes on when setMyCommands keeps failing: each menu tried a bounded number of times, a warning each, messages answered", async () => {
    const { fake } = bot;
    fake.serverErrorNext("setMyCommands", 502, 1000);
    const since = bot.mark();
    const warnedBefore = logsOf(harness, "telegram command menu not registered").length;
    await harness.restart();
    await waitUntil(
      () => logsOf(harness, "telegram command menu not registered").length === warnedBefore + 3,
      "three warnings",
    );
    const tries = fake.calls.slice(since).filter((c) => c.method === "setMyCommands");
    // the retry policy's 4 attempts per menu (Defaults.retry.maxAttempts), no more
    expect(tries).toHaveLength(12);
    expect(tries.every((call) => call.status === 502)).toBe(true);
    const texts = bot.mark();
    await bot.handle((f) => f.sendPrivateText({ userId: Admin, text: "echo still answering" }));
    expect(bot.texts(Admin, texts)).toEqual(["still answering"]);
    expect(harness.logs.join("\n")).not.toContain(fake.token);
  });
});

describe("gateway over Telegram: command menus switched off", () => {
  it("calls no menu method with telegram.commands.register: false", async () => {
    const harness = await TelegramGatewayHarness.start("t-menu-off", [
      { admins: [Admin], telegram: { commands: { register: false } } },
    ]);
    try {
      const bot = harness.bot();
      await bot.handle((f) => f.sendPrivateText({ userId: Admin, text: "/help" }));
      await harness.restart();
      await bot.handle((f) => f.sendPrivateText({ userId: Admin, text: "echo after restart" }));
      expect(
        bot.fake.calls.filter((call) => /MyCommands$/.test(call.method)).map((c) => c.method),
      ).toEqual([]);
      expect(
        logsOf(harness, "telegram command menus not registered (commands.register: false)"),
      ).toHaveLength(2);
    } finally {
      await harness.close();
    }
  });
});
