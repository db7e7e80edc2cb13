import { describe, expect, it } from "vitest";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import type { FakeCallbackQuery, RecordedCall } from "../fakes/telegram/index.js";
import { CliTelegram } from "./harness/cli-telegram.js";

const Admin = 88;

interface Question {
  readonly messageId: number;
  readonly text: string;
  readonly data: readonly string[];
}

const telegram = CliTelegram.perTest();

/** The questions with buttons the bot posted in the admin's chat from call `since` on. */
function questions(since: number): Question[] {
  return telegram.fake.calls
    .slice(since)
    .filter(
      (c: RecordedCall) =>
        c.method === "sendMessage" &&
        c.ok &&
        String(c.params.chat_id) === String(Admin) &&
        c.params.reply_markup !== undefined,
    )
    .map((call) => {
      const message = call.result as {
        message_id: number;
        text: string;
        reply_markup: { inline_keyboard: { callback_data: string }[][] };
      };
      return {
        messageId: message.message_id,
        text: message.text,
        data: message.reply_markup.inline_keyboard.flat().map((b) => b.callback_data),
      };
    });
}

async function press(q: Question, index: number): Promise<FakeCallbackQuery> {
  const query = telegram.fake.sendCallbackQuery({
    chatId: Admin,
    messageId: q.messageId,
    data: q.data[index]!,
    userId: Admin,
  });
  await waitUntil(() => query.answer !== undefined, "the press answered");
  return query;
}

/**
 * Questions with buttons across a crash (docs/approvals.md, "Restarts"): the real CLI with the
 * shell agent and `agent.approvals: always` against FakeTelegram, SIGKILLed while an approval
 * and a /reset question wait. Nothing runs without a decision of the new process.
 */
describe("questions waiting on buttons when the gateway is SIGKILLed", () => {
  it("an old press is answered clearly and runs nothing; the message asks anew and runs after Allow", async () => {
    const gateway = await telegram.install("tg-crash-q", {
      admins: [`telegram:${Admin}`],
      agent: { kind: "shell", approvals: "always" },
    });
    await gateway.start();
    telegram.fake.sendPrivateText({ userId: Admin, text: "touch /workspace/crashed && echo ran" });
    const [approval] = await waitFor(() => {
      const found = questions(0);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(approval!.text).toContain("$ touch /workspace/crashed");
    telegram.fake.sendPrivateText({ userId: Admin, text: "/reset" });
    const reset = await waitFor(() => {
      const found = questions(0);
      expect(found).toHaveLength(2);
      return found[1]!;
    });
    expect(reset.text).toContain("is shared");

    await gateway.kill();
    const restart = telegram.fake.calls.length;
    await gateway.start();
    // The message ran no command: the new process runs it again, and it asks anew.
    const [fresh] = await waitFor(() => {
      const found = questions(restart);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(fresh!.messageId).not.toBe(approval!.messageId);

    const stale = await press(approval!, 0);
    expect(stale.answer?.text).toMatch(/^⚠️ Not run: the gateway restarted/);
    await waitFor(() =>
      expect(telegram.fake.botMessage(Admin, approval!.messageId)?.text).toMatch(
        /^⚠️ Not run: the gateway restarted/,
      ),
    );
    expect(telegram.fake.botMessage(Admin, approval!.messageId)?.reply_markup).toBeUndefined();
    const staleReset = await press(reset, 0);
    expect(staleReset.answer?.text).toMatch(
      /^This \/reset question is no longer open .* nothing was reset/,
    );
    expect(await gateway.hasFile("/workspace/crashed")).toBe(false);

    const allowed = await press(fresh!, 0);
    expect(allowed.answer?.text).toMatch(/^✅ Allowed once by/);
    await waitUntil(
      () =>
        telegram.fake.calls
          .slice(restart)
          .some((c) => c.method === "sendMessage" && c.ok && c.params.text === "ran"),
      "the command's reply",
    );
    expect(await gateway.hasFile("/workspace/crashed")).toBe(true);
    // The /reset question was recorded with its entry's close: the restart did not run /reset
    // again, so the chat got it once (with buttons, or typed if the kill came before the post).
    const resetQuestions = telegram.fake.calls.filter(
      (c) =>
        c.method === "sendMessage" &&
        c.ok &&
        String(c.params.chat_id) === String(Admin) &&
        String(c.params.text).includes("is shared"),
    );
    expect(resetQuestions).toHaveLength(1);
  }, 120_000);
});
