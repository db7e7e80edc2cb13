import { splitText } from "@mediagate/gateway";
import { describe, expect, it } from "vitest";
import { reply } from "../fakes/openai/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { LongAnswer, StreamUser, useTelegramStreaming } from "./harness/streaming.js";

/**
 * Streamed replies (docs/streaming.md) through the real CLI, grammY and FakeTelegram, with the
 * openai agent streaming from the fake model: drafts in a private chat, one edited message in
 * a group, Telegram's edit pace kept, a 429 never losing the final. A SIGKILL mid-stream is in
 * telegram-streaming-kills.long.test.ts.
 */

const Group = -100777;
const streaming = useTelegramStreaming();

const finalParts = (text: string) => splitText(text, { maxLength: 4096 });

describe("streamed replies on Telegram", () => {
  it("shows a private chat drafts, then the 10,000-character answer once, in order, at Telegram's pace", async () => {
    const gateway = await streaming.install("tg-stream-draft");
    await gateway.start();
    streaming.model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 30 } }));
    streaming.fake.sendPrivateText({ userId: StreamUser, text: "tell me everything" });
    const parts = finalParts(LongAnswer);
    await waitUntil(
      () => streaming.shown(StreamUser).length === parts.length,
      "the final messages",
      60_000,
    );

    expect(parts).toHaveLength(3);
    expect(streaming.shown(StreamUser)).toEqual(parts);
    const drafts = streaming
      .inChat(StreamUser)
      .filter((call) => call.method === "sendMessageDraft");
    expect(drafts.length).toBeGreaterThan(1);
    const ids = drafts.map((call) => Number(call.params.draft_id));
    // A new draft per chunk past 4,096: the ids only grow, and each draft fits.
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBeGreaterThan(1);
    expect(drafts.every((call) => String(call.params.text).length <= 4096)).toBe(true);
    // The final went out after the last draft, each part once.
    const lastDraft = Math.max(...drafts.map((call) => call.seq));
    const sends = streaming.inChat(StreamUser).filter((call) => call.method === "sendMessage");
    expect(sends.map((call) => call.params.text)).toEqual(parts);
    expect(sends.every((call) => call.seq > lastDraft)).toBe(true);
    expect(streaming.fake.editLimits?.refused).toBe(0);
    expect(streaming.fake.editLimits?.most(String(StreamUser))).toBeLessThanOrEqual(1);
  }, 120_000);

  it("edits one message in a group within 20 edits a minute, fills it to 4,096 and leaves only the final", async () => {
    const gateway = await streaming.install("tg-stream-group", {
      allowedUsers: [`telegram:${StreamUser}`],
    });
    await gateway.start();
    // 10 s of stream: the group's edits come every 3 s, so the preview reaches 4,096.
    streaming.model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 200 } }));
    streaming.fake.sendGroupText({
      chatId: Group,
      userId: StreamUser,
      text: "tell the group everything",
    });
    const parts = finalParts(LongAnswer);
    // The final alone: every preview message deleted. How many there were (one, or a second
    // past 4,096) depends on how the edits fell in the stream, which a loaded machine moves.
    await waitUntil(
      () => JSON.stringify(streaming.shown(Group)) === JSON.stringify(parts),
      "the final messages alone",
      60_000,
    );

    const edits = streaming.inChat(Group).filter((call) => call.method === "editMessageText");
    // The preview's messages are the ones sent and gone, told by id: a preview message sent as
    // the stream ended can hold the same text as the final's last part.
    const previews = streaming
      .inChat(Group)
      .filter((call) => call.method === "sendMessage")
      .map((call) => (call.result as { message_id: number }).message_id)
      .filter((id) => streaming.fake.botMessage(Group, id) === undefined);
    const deleted = streaming
      .inChat(Group)
      .filter((call) => call.method === "deleteMessage")
      .map((call) => Number(call.params.message_id));
    expect(previews.length).toBeGreaterThan(0);
    expect(deleted.sort((a, b) => a - b)).toEqual(previews.sort((a, b) => a - b));
    expect(edits.length).toBeGreaterThan(0);
    const longest = Math.max(...edits.map((call) => String(call.params.text).length));
    expect(longest).toBeGreaterThan(4_000);
    expect(longest).toBeLessThanOrEqual(4_096);
    expect(streaming.inChat(Group).some((call) => call.method === "sendMessageDraft")).toBe(false);
    expect(streaming.fake.editLimits?.refused).toBe(0);
    expect(streaming.fake.editLimits?.most(String(Group), 60_000)).toBeLessThanOrEqual(20);
    expect(streaming.fake.editLimits?.most(String(Group), 1000)).toBeLessThanOrEqual(1);
  }, 120_000);

  it("deletes a preview message once more when its delete failed, leaving the final alone", async () => {
    const gateway = await streaming.install("tg-stream-delete", { stream: "edit" });
    await gateway.start();
    // The first delete of a preview message fails with a 502.
    streaming.fake.serverErrorNext("deleteMessage", 502);
    streaming.model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 100 } }));
    streaming.fake.sendPrivateText({ userId: StreamUser, text: "go" });
    const parts = finalParts(LongAnswer);
    await waitUntil(
      () => JSON.stringify(streaming.shown(StreamUser)) === JSON.stringify(parts),
      "the final messages alone",
      30_000,
    );
    const faulted = streaming.fake.calls.filter(
      (call) => call.method === "deleteMessage" && call.status === 502,
    );
    expect(faulted).toHaveLength(1);
    expect(String(faulted[0]!.params.chat_id)).toBe(String(StreamUser));
  }, 120_000);

  it("never loses the final to 429s on the preview's edits", async () => {
    const gateway = await streaming.install("tg-stream-429", { stream: "edit" });
    await gateway.start();
    streaming.fake.rateLimitNext("editMessageText", 2, 50);
    // 5 s of stream: the preview, held for the turn's first second, still has edits to make.
    streaming.model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 100 } }));
    streaming.fake.sendPrivateText({ userId: StreamUser, text: "go" });
    const parts = finalParts(LongAnswer);
    await waitUntil(
      () => JSON.stringify(streaming.shown(StreamUser)) === JSON.stringify(parts),
      "the final messages alone",
      60_000,
    );
    expect(
      streaming.fake.calls.some((call) => call.method === "editMessageText" && call.status === 429),
    ).toBe(true);
    expect(streaming.shown(StreamUser)).toEqual(parts);
  }, 120_000);
});
