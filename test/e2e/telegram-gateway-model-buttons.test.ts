import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import type { FakeCallbackQuery, RecordedCall } from "../fakes/telegram/index.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 5201;
const Member = 5202;
const Stranger = 5209;
const LongName = `long-${"n".repeat(59)}`;

interface Picker {
  readonly messageId: number;
  readonly text: string;
  readonly labels: readonly string[];
  readonly data: readonly string[];
}

/**
 * `/model` buttons over Telegram (docs/models-and-usage.md, "Buttons"): grammY against the fake
 * (inline keyboards, callback queries), three models on three fake endpoints, members limited
 * to two of them. Which model answers next is read from which fake was called.
 */
describe("/model buttons over Telegram", () => {
  let main: FakeOpenAIServer;
  let long: FakeOpenAIServer;
  let big: FakeOpenAIServer;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    main = await FakeOpenAIServer.start();
    long = await FakeOpenAIServer.start();
    big = await FakeOpenAIServer.start();
    harness = await TelegramGatewayHarness.start("t-mbtn", [
      {
        admins: [Admin],
        allowed: [Member],
        agent: {
          kind: "openai",
          models: [
            { name: "main", baseUrl: main.baseUrl, model: "main-model" },
            { name: LongName, baseUrl: long.baseUrl, model: "long-model" },
            { name: "big", baseUrl: big.baseUrl, model: "big-model" },
          ],
          memberModels: ["main", LongName],
        },
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
    await main?.close();
    await long?.close();
    await big?.close();
  });

  async function picker(user: number): Promise<Picker> {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: user, text: "/model" }));
    const call = bot
      .callsIn(user, since)
      .find((c) => c.method === "sendMessage" && c.ok && c.params.reply_markup !== undefined);
    expect(call).toBeDefined();
    const message = (call as RecordedCall).result as {
      message_id: number;
      text: string;
      reply_markup: { inline_keyboard: { text: string; callback_data: string }[][] };
    };
    const buttons = message.reply_markup.inline_keyboard.flat();
    return {
      messageId: message.message_id,
      text: message.text,
      labels: buttons.map((b) => b.text),
      data: buttons.map((b) => b.callback_data),
    };
  }

  async function answered(query: FakeCallbackQuery): Promise<string | undefined> {
    await waitUntil(() => query.answer !== undefined, "the press answered");
    return query.answer?.text;
  }

  const press = (chat: number, p: Picker, button: string, user: number) =>
    answered(bot.fake.pressButton({ chatId: chat, messageId: p.messageId, button, userId: user }));

  const shown = (chat: number, p: Picker) => bot.fake.botMessage(chat, p.messageId);

  it("shows a member their choices as buttons, with the text list, the current one marked", async () => {
    const p = await picker(Member);
    expect(p.text).toContain("Model of this session: main (main-model), the default.");
    expect(p.text).toContain(`◦ ${LongName} — long-model`);
    expect(p.labels).toEqual(["✓ main", LongName]);
    for (const data of p.data) expect(Buffer.byteLength(data)).toBeLessThanOrEqual(20 + 22);
    expect(p.data.join()).not.toContain(LongName);
  });

  it("a member's press switches their session: the next reply comes from that model", async () => {
    const p = await picker(Member);
    expect(await press(Member, p, LongName, Member)).toBe(
      `✅ This session now uses ${LongName} (long-model). The conversation goes on.`,
    );
    await waitFor(() =>
      expect(shown(Member, p)?.text).toMatch(
        new RegExp(`^🔁 .+ switched this session to ${LongName} \\(long-model\\)\\.`),
      ),
    );
    expect(shown(Member, p)?.reply_markup).toBeUndefined();
    long.enqueue(reply.text("long speaking"));
    const before = main.requests.length;
    expect(await bot.ask(Member, "who are you?")).toBe("long speaking");
    expect(main.requests).toHaveLength(before);
  });

  it("a second press of a closed picker is told it was chosen, and changes nothing", async () => {
    const p = await picker(Member);
    expect(p.labels).toEqual(["main", `✓ ${LongName}`]);
    expect(await press(Member, p, "main", Member)).toMatch(/now uses main/);
    const again = await answered(
      bot.fake.sendCallbackQuery({
        chatId: Member,
        messageId: p.messageId,
        data: p.data[1]!,
        userId: Member,
      }),
    );
    expect(again).toMatch(/^Already chosen: main by .+\. Send \/model to change it again\.$/);
    main.enqueue(reply.text("main speaking"));
    expect(await bot.ask(Member, "and now?")).toBe("main speaking");
  });

  it("a member is not offered an admin-only model, and a forged press for it is refused", async () => {
    const admin = await picker(Admin);
    expect(admin.labels).toEqual(["✓ main", LongName, "big"]);
    const member = await picker(Member);
    expect(member.labels).not.toContain("big");
    // A modified client sends the data of index 2 (big in the admin's list) on the member's picker.
    const forged = member.data[0]!.replace(/:0$/, ":2");
    const refused = await answered(
      bot.fake.sendCallbackQuery({
        chatId: Member,
        messageId: member.messageId,
        data: forged,
        userId: Member,
      }),
    );
    expect(refused).toBe("This button does nothing any more; send /model for the current choices.");
    // The admin's data on the member's message: bound to the admin's message, so refused too.
    const crossed = await answered(
      bot.fake.sendCallbackQuery({
        chatId: Member,
        messageId: member.messageId,
        data: admin.data[2]!,
        userId: Member,
      }),
    );
    expect(crossed).toBe("This button does nothing any more; send /model for the current choices.");
    expect(shown(Member, member)?.reply_markup).toBeDefined();
    main.enqueue(reply.text("still main"));
    expect(await bot.ask(Member, "which?")).toBe("still main");
    expect(big.requests).toHaveLength(0);
  });

  it("refuses a press by someone whose session it is not, and by a stranger", async () => {
    const p = await picker(Admin);
    expect(await press(Admin, p, "big", Member)).toBe(
      "These buttons choose the model of someone else's session; send /model for yours.",
    );
    expect(await press(Admin, p, "big", Stranger)).toBe("⛔ You are not allowed to use this bot.");
    expect(shown(Admin, p)?.reply_markup).toBeDefined();
    expect(await press(Admin, p, "✓ main", Admin)).toBe(
      "This session already uses main (main-model).",
    );
    expect(await press(Admin, p, "big", Admin)).toMatch(/now uses big/);
    big.enqueue(reply.text("big speaking"));
    expect(await bot.ask(Admin, "who?")).toBe("big speaking");
  });
});
