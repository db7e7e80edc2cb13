import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { FakeTelegram, type RecordedCall } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Streamed replies (docs/streaming.md) through the real CLI, grammY and FakeTelegram, with the
 * openai agent streaming from the fake model: drafts in a private chat, one edited message in
 * a group, Telegram's edit pace kept, a 429 never losing the final, a SIGKILL mid-stream.
 */

const User = 88;
let fake: FakeTelegram;
let apiRoot: string;
let model: FakeOpenAIServer;
const disposers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  fake = new FakeTelegram();
  ({ apiRoot } = await fake.start());
  fake.limitEdits();
  model = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await model.close();
  await fake.stop();
});

async function install(prefix: string, profile: Record<string, unknown> = {}): Promise<CliInstall> {
  const made = await CliInstall.create(prefix, {
    telegram: {
      token: fake.token,
      apiRoot,
      pollTimeoutSeconds: 1,
      groups: { requireMention: false },
    },
    allowedUsers: [`telegram:${User}`],
    agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
    ...profile,
  });
  disposers.push(() => made.dispose());
  return made;
}

/** 10,000 characters in numbered lines, so every split point and order shows. */
const LongAnswer = Array.from(
  { length: 200 },
  (_, i) => `line ${String(i).padStart(3, "0")}: ${"streamed text ".repeat(3).trim()}`,
)
  .join("\n")
  .slice(0, 10_000);

const inChat = (chatId: number, since = 0): RecordedCall[] =>
  fake.calls
    .slice(since)
    .filter((call) => call.ok && String(call.params.chat_id) === String(chatId));

/** The bot's messages the chat still shows (not deleted), in the order they were sent. */
function shown(chatId: number, since = 0): string[] {
  return inChat(chatId, since)
    .filter((call) => call.method === "sendMessage")
    .map((call) => (call.result as { message_id: number }).message_id)
    .flatMap((id) => {
      const message = fake.botMessage(chatId, id);
      return message === undefined ? [] : [String(message.text)];
    });
}

// SIGKILL-and-restart tests of telegram-streaming.test.ts, in the long suite with the others (test/long/README.md).
describe("streamed replies on Telegram, through a SIGKILL", () => {
  it("after a SIGKILL mid-stream: no duplicate, the stale preview deleted, the user told", async () => {
    const gateway = await install("tg-stream-kill", { stream: "edit" });
    await gateway.start();
    model.enqueue(
      reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 100, hangAfterChars: 6000 } }),
      reply.text("the answer, in full"),
    );
    fake.sendPrivateText({ userId: User, text: "long one" });
    // Two preview messages (a rollover past 4,096), and the second edited: it was recorded.
    await waitUntil(
      () => inChat(User).filter((call) => call.method === "sendMessage").length >= 2,
      "the preview's rollover",
      60_000,
    );
    const [first, second] = inChat(User)
      .filter((call) => call.method === "sendMessage")
      .map((call) => (call.result as { message_id: number }).message_id);
    await waitUntil(
      () =>
        inChat(User).some(
          (call) => call.method === "editMessageText" && call.params.message_id === second,
        ),
      "the rollover to be edited",
      60_000,
    );
    await gateway.kill();

    const restart = fake.calls.length;
    await gateway.start();
    const expected = ["⏹ cut off by a restart; running it again", "the answer, in full"];
    await waitUntil(
      () => JSON.stringify(shown(User)) === JSON.stringify(expected),
      "the notice and the final alone",
      60_000,
    );
    await waitUntil(
      () => inChat(User, restart).some((call) => call.method === "deleteMessage"),
      "the stale rollover deleted",
    );
    expect(fake.botMessage(User, second ?? 0)).toBeUndefined();
    expect(fake.botMessage(User, first ?? 0)?.text).toBe(
      "⏹ cut off by a restart; running it again",
    );
    const everything = shown(User);
    expect(everything.filter((text) => text === "the answer, in full")).toHaveLength(1);
    expect(everything).toEqual(expected);
  }, 180_000);
});
