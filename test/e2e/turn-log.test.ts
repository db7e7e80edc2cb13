import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;

type Entry = Record<string, unknown> & { level: number; msg: string };

/**
 * The whole gateway on Telegram (real grammY against FakeTelegram, the shell agent in a real
 * Docker sandbox) writes one info line per turn that says what happened without the
 * conversation in it (docs/operations.md).
 */
describe("gateway over Telegram: the turn's log line", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-turnlog", [{ admins: [Admin] }]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const entries = (): Entry[] => harness.logs.map((line) => JSON.parse(line) as Entry);

  it("names the session, the exit, the reply size and each part's outcome, and no text", async () => {
    const command =
      "printf abc > /workspace/r.txt; echo confidential-output; echo MEDIA:/workspace/r.txt; echo MEDIA:/workspace/none.png; exit 3";
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: command }));
    const reply = bot.texts(Admin, since).join("\n");
    expect(reply).toContain("confidential-output");

    const turns = entries().filter((e) => e.msg === "turn finished");
    expect(turns).toHaveLength(1);
    const turn = turns[0]!;
    expect(turn).toMatchObject({
      level: 30,
      profile: bot.profile,
      platform: "telegram",
      sessionKey: `agent:${bot.profile}:telegram:dm:${Admin}`,
      exit: "ok",
      commands: 1,
      exitCode: 3,
      delivery: "delivered",
      deliveries: [
        { kind: "text", outcome: "sent" },
        { kind: "document", outcome: "delivered" },
        { kind: "file", outcome: "unreachable" },
      ],
    });
    expect(turn.durationMs).toBeTypeOf("number");
    expect(turn.replyChars).toBeGreaterThan("confidential-output".length);

    const textLine = entries().find((e) => e.msg === "text reply delivery attempt ended");
    expect(textLine).toMatchObject({ level: 20, textOutcome: "sent", result: "delivered" });

    // Neither the message nor the reply is logged, at info or at debug.
    for (const entry of entries()) {
      const line = JSON.stringify(entry);
      expect(line).not.toContain("confidential-output");
      expect(line).not.toContain("printf abc");
    }
  });
});
