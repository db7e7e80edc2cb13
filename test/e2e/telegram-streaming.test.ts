import { splitText } from "@mediagate/gateway";
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
const Group = -100777;
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

const finalParts = (text: string) => splitText(text, { maxLength: 4096 });

describe("streamed replies on Telegram", () => {
  it("shows a private chat drafts, then the 10,000-character answer once, in order, at Telegram's pace", async () => {
    const gateway = await install("tg-stream-draft");
    await gateway.start();
    model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 30 } }));
    fake.sendPrivateText({ userId: User, text: "tell me everything" });
    const parts = finalParts(LongAnswer);
    await waitUntil(() => shown(User).length === parts.length, "the final messages", 60_000);

    expect(parts).toHaveLength(3);
    expect(shown(User)).toEqual(parts);
    const drafts = inChat(User).filter((call) => call.method === "sendMessageDraft");
    expect(drafts.length).toBeGreaterThan(1);
    const ids = drafts.map((call) => Number(call.params.draft_id));
    // A new draft per chunk past 4,096: the ids only grow, and each draft fits.
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBeGreaterThan(1);
    expect(drafts.every((call) => String(call.params.text).length <= 4096)).toBe(true);
    // The final went out after the last draft, each part once.
    const lastDraft = Math.max(...drafts.map((call) => call.seq));
    const sends = inChat(User).filter((call) => call.method === "sendMessage");
    expect(sends.map((call) => call.params.text)).toEqual(parts);
    expect(sends.every((call) => call.seq > lastDraft)).toBe(true);
    expect(fake.editLimits?.refused).toBe(0);
    expect(fake.editLimits?.most(String(User))).toBeLessThanOrEqual(1);
  }, 120_000);

  it("edits one message in a group within 20 edits a minute, rolls over past 4,096 and leaves only the final", async () => {
    const gateway = await install("tg-stream-group", { allowedUsers: [`telegram:${User}`] });
    await gateway.start();
    model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 200 } }));
    fake.sendGroupText({ chatId: Group, userId: User, text: "tell the group everything" });
    const parts = finalParts(LongAnswer);
    await waitUntil(
      () => inChat(Group).filter((call) => call.method === "deleteMessage").length >= 2,
      "the preview messages to go",
      60_000,
    );

    const edits = inChat(Group).filter((call) => call.method === "editMessageText");
    expect(edits.length).toBeGreaterThan(0);
    expect(inChat(Group).some((call) => call.method === "sendMessageDraft")).toBe(false);
    expect(shown(Group)).toEqual(parts);
    expect(fake.editLimits?.refused).toBe(0);
    expect(fake.editLimits?.most(String(Group), 60_000)).toBeLessThanOrEqual(20);
    expect(fake.editLimits?.most(String(Group), 1000)).toBeLessThanOrEqual(1);
  }, 120_000);

  it("never loses the final to 429s on the preview's edits", async () => {
    const gateway = await install("tg-stream-429", { stream: "edit" });
    await gateway.start();
    fake.rateLimitNext("editMessageText", 2, 50);
    model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 40 } }));
    fake.sendPrivateText({ userId: User, text: "go" });
    const parts = finalParts(LongAnswer);
    await waitUntil(
      () => JSON.stringify(shown(User)) === JSON.stringify(parts),
      "the final messages alone",
      60_000,
    );
    expect(
      fake.calls.some((call) => call.method === "editMessageText" && call.status === 429),
    ).toBe(true);
    expect(shown(User)).toEqual(parts);
  }, 120_000);
});
