import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import { FakeOpenAIServer, type FakeUsage, reply } from "../fakes/openai/index.js";
import { TaskCommands } from "./harness/menus.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 5101;
const Member = 5102;
/** Debian's chromium (scripts/ensure-chromium.sh): no browser is downloaded. */
const Chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const integer = new Intl.NumberFormat("en-US");

/**
 * Models and usage end to end (docs/models-and-usage.md): a profile with two models on two
 * fake endpoints, members limited to one, the typed `/model` and `/usage` through grammY and
 * the Telegram fake, a fallback's one notice, a second profile's daily budget, and the web
 * console's Usage page in chromium.
 */
describe("models and usage over Telegram", () => {
  let main: FakeOpenAIServer;
  let backup: FakeOpenAIServer;
  let metered: FakeOpenAIServer;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let budgeted: TelegramBot;
  let browser: Browser | undefined;

  beforeAll(async () => {
    main = await FakeOpenAIServer.start();
    backup = await FakeOpenAIServer.start();
    metered = await FakeOpenAIServer.start();
    harness = await TelegramGatewayHarness.start(
      "t-models",
      [
        {
          admins: [Admin],
          allowed: [Member],
          agent: {
            kind: "openai",
            models: [
              {
                name: "main",
                baseUrl: main.baseUrl,
                model: "main-model",
                prices: { input: 3, output: 15 },
              },
              { name: "backup", baseUrl: backup.baseUrl, model: "backup-model" },
            ],
            fallback: ["backup"],
            memberModels: ["main"],
          },
        },
        {
          admins: [Admin],
          agent: {
            kind: "openai",
            baseUrl: metered.baseUrl,
            model: "metered-model",
            budget: { dailyTokens: 1000 },
          },
        },
      ],
      { web: true },
    );
    bot = harness.bot(0);
    budgeted = harness.bot(1);
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
    await main?.close();
    await backup?.close();
    await metered?.close();
  });

  const say = async (target: TelegramBot, user: number, text: string) => {
    const since = target.mark();
    await target.handle((fake) => fake.sendPrivateText({ userId: user, text }));
    return target.texts(user, since);
  };

  it("lists the openai agent's /new, /compact, /model and /usage in everyone's menu", async () => {
    await waitUntil(() => bot.fake.menus.get() !== undefined, "the default menu");
    expect(bot.fake.menus.get()?.map((entry) => entry.command)).toEqual([
      "help",
      "new",
      "compact",
      "model",
      "usage",
      ...TaskCommands,
    ]);
  });

  it("/model lists the member's choices, refuses an admin-only model and switches for an admin", async () => {
    const [list] = await say(bot, Member, "/model");
    expect(list).toContain("Model of this session: main (main-model), the default.");
    expect(list).toContain("• main — main-model");
    expect(list).not.toContain("backup —");
    expect(list).toContain("When it fails: backup.");

    expect(await say(bot, Member, "/model backup")).toEqual([
      "⛔ backup is for admins only; nothing was changed. /model lists the ones you may pick.",
    ]);
    expect(await say(bot, Member, "/model nope")).toEqual([
      'No model is named "nope". Pick one of: main (/model <name>).',
    ]);

    expect(await say(bot, Admin, "/model backup")).toEqual([
      "✅ This session now uses backup (backup-model). The conversation goes on.",
    ]);
    backup.enqueue(reply.text("backup speaking"));
    const before = main.requests.length;
    expect(await say(bot, Admin, "who are you?")).toEqual(["backup speaking"]);
    expect(main.requests).toHaveLength(before);
    // the member's session was not switched
    main.enqueue(reply.text("main speaking"));
    expect(await say(bot, Member, "who are you?")).toEqual(["main speaking"]);
  });

  it("keeps the session's pick across a restart", async () => {
    await harness.restart();
    bot = harness.bot(0);
    budgeted = harness.bot(1);
    const [list] = await say(bot, Admin, "/model");
    expect(list).toContain("Model of this session: backup (backup-model).");
    expect(list).toContain("◦ main — main-model");
    expect(await say(bot, Admin, "/model MAIN")).toEqual([
      "✅ This session now uses main (main-model). The conversation goes on.",
    ]);
  });

  it("tells the chat once when a fallback answered, before the reply", async () => {
    main.enqueue(reply.error(503, "overloaded"));
    backup.enqueue(
      reply.toolCall("terminal", { command: "echo hi" }),
      reply.text("done by backup"),
    );
    expect(await say(bot, Admin, "do something")).toEqual([
      "↪️ Answered by backup: main answered HTTP 503.",
      "done by backup",
    ]);
  });

  it("/usage: the session's totals for everyone, the profile's for admins, equal to what the fakes reported", async () => {
    const [member] = await say(bot, Member, "/usage");
    expect(member).toMatch(/^📊 Model usage of this session:\n {2}Today \(UTC\): 1 calls, /);
    expect(member).not.toContain("Profile");

    const [admin] = await say(bot, Admin, "/usage");
    const reported = [main.reportedUsage(), backup.reportedUsage()];
    const input = reported.reduce((sum, usage) => sum + usage.promptTokens, 0);
    const output = reported.reduce((sum, usage) => sum + usage.completionTokens, 0);
    const calls =
      main.requests.filter((r) => r.usage).length + backup.requests.filter((r) => r.usage).length;
    expect(admin).toContain(`Profile "${bot.profile}", all sessions:`);
    expect(admin).toContain(
      `  All time: ${calls} calls, ${integer.format(input)} in (${integer.format(reported[0]!.cachedTokens + reported[1]!.cachedTokens)} cached) + ${integer.format(output)} out tokens`,
    );
  });

  it("answers a bare /usage in a group: in an openai profile it is the gateway's own command", async () => {
    const group = -100_777_001;
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendGroupText({ chatId: group, userId: Member, text: "/usage" }),
    );
    expect(bot.texts(group, since)).toEqual([
      expect.stringMatching(/^📊 Model usage of this session:\n/),
    ]);
  });

  it("stops the 11th model call of a 10-call daily budget with its message", async () => {
    const usage: FakeUsage = { promptTokens: 60, completionTokens: 40, cachedTokens: 0 };
    metered.respondWith(() => reply.text("ok", { usage }));
    for (let call = 1; call <= 10; call++) {
      expect(await say(budgeted, Admin, `call ${call}`)).toEqual(["ok"]);
    }
    const [stopped] = await say(budgeted, Admin, "call 11");
    expect(stopped).toMatch(
      /^⛔ This bot's daily model budget is used up \(1000 of 1000 tokens today\)\. It resets at 00:00 UTC, in \d+ (h \d+ )?min; until then messages get no model answer\.$/,
    );
    expect(metered.requests).toHaveLength(10);
    const [usageText] = await say(budgeted, Admin, "/usage");
    expect(usageText).toContain("Daily budget: 1,000 tokens — reached; it resets at 00:00 UTC.");
  });

  it("the web console's Usage page charts tokens and cost per day", async () => {
    const url = harness.gateway.webUrl ?? "";
    const token = (await readFile(join(harness.home, "web-token"), "utf8")).trim();
    // Without a login session: nothing of it.
    expect((await fetch(`${url}/api/usage`)).status).toBe(401);
    const page302 = await fetch(`${url}/usage`, { redirect: "manual" });
    expect([page302.status, page302.headers.get("location")]).toEqual([302, "/login"]);
    browser = await chromium.launch({ executablePath: Chromium, args: ["--no-sandbox"] });
    const page: Page = await browser.newPage();
    await page.goto(`${url}/login`);
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForURL(`${url}/`);

    const view = (await page.evaluate(() => fetch("/api/usage").then((a) => a.json()))) as {
      profiles: {
        profile: string;
        days: { day: string; calls: number; inputTokens: number; cost: number }[];
      }[];
    };
    const metering = view.profiles.find((p) => p.profile === budgeted.profile);
    expect(metering?.days).toHaveLength(30);
    expect(metering?.days.at(-1)).toMatchObject({ calls: 10, inputTokens: 600 });
    const priced = view.profiles.find((p) => p.profile === bot.profile)?.days.at(-1);
    expect(priced?.cost).toBeGreaterThan(0);

    await page.goto(`${url}/usage`);
    const chart = page.locator(
      `[data-testid=usage][data-profile="${budgeted.profile}"] [data-testid=chart-tokens]`,
    );
    await chart.waitFor();
    const bars = chart.locator("[data-testid=bar]");
    expect(await bars.count()).toBe(30);
    expect(await bars.last().getAttribute("data-value")).toBe("1000");
    expect(await chart.locator("[data-testid=budget]").count()).toBe(1);
  });
});
