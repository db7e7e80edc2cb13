import { ReplyFileName, replyParts, splitText } from "@mediagate/gateway";
import { describe, expect, it } from "vitest";
import { reply } from "../fakes/openai/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { LongAnswer, StreamHumanId, useDiscordStreaming } from "./harness/streaming.js";

/**
 * Streamed replies (docs/streaming.md) on Discord through the real CLI, discord.js and
 * FakeDiscord, with the openai agent streaming from the fake model into a DM: one message
 * edited and rolled over past 2,000 characters, the final as new messages (its text split as
 * `delivery.maxTextChunks` allows, the rest as reply.txt), every preview message deleted,
 * Discord's five edits per five seconds kept, a 429 never losing the final. A SIGKILL
 * mid-stream is in discord-streaming-kills.long.test.ts.
 */

const streaming = useDiscordStreaming();

const DiscordLength = 2000;
const DefaultMaxTextChunks = 4;

/** Slow enough for the preview to roll over past 8,000 characters before the model is done. */
const Streamed = { chunkChars: 200, everyMs: 200 } as const;

/** The final reply as the DM must show it: its text messages, then reply.txt if cut. */
function finalOf(text: string, maxChunks: number): string[] {
  return replyParts(text, { maxLength: DiscordLength, maxChunks }).map((part) =>
    part.kind === "text" ? part.text : `file:${part.filename}`,
  );
}

/** The preview's messages: created, then deleted (the final's stay). */
function previewIds(dm: string): string[] {
  const kept = new Set(streaming.fake.messagesIn(dm).map((message) => message.id));
  return streaming
    .creates(dm)
    .map((call) => call.messageId ?? "")
    .filter((id) => !kept.has(id));
}

describe("streamed replies on Discord", () => {
  it("rolls an edited message over past 2,000 characters, then shows the six final messages alone, in order", async () => {
    const gateway = await streaming.install("dc-stream-six", { delivery: { maxTextChunks: 8 } });
    await gateway.start();
    const dm = streaming.fake.world.dmChannel(StreamHumanId);
    streaming.model.enqueue(reply.text(LongAnswer, { stream: Streamed }));
    streaming.fake.sendDirectMessage({ content: "tell me everything", authorId: StreamHumanId });
    const parts = splitText(LongAnswer, { maxLength: DiscordLength });
    expect(parts).toHaveLength(6);
    await waitUntil(
      () => JSON.stringify(streaming.shown(dm)) === JSON.stringify(parts),
      "the six final messages alone",
      90_000,
    );

    const previews = previewIds(dm);
    expect(previews.length).toBeGreaterThan(1);
    // Every preview message deleted once, none of the final's.
    // (Only messages: the status reactions on the user's message are deleted at their own path.)
    const deleted = streaming
      .ofMessages(dm, "DELETE")
      .filter((call) => !call.path.includes("/reactions/"))
      .map((call) => call.path.split("/").at(-1));
    expect(deleted.sort()).toEqual([...previews].sort());
    // Each final part created once, after the preview's last edit; the first replies to the user.
    const finals = streaming.creates(dm).filter((call) => !previews.includes(call.messageId ?? ""));
    expect(finals.map((call) => (call.payload as { content: string }).content)).toEqual(parts);
    const lastEdit = Math.max(
      ...streaming.ofMessages(dm, "PATCH").map((call) => streaming.fake.calls.indexOf(call)),
    );
    expect(finals.every((call) => streaming.fake.calls.indexOf(call) > lastEdit)).toBe(true);
    expect(streaming.fake.messagesIn(dm)[0]?.replyTo).toBeDefined();
    expect(
      streaming.ofMessages(dm, "PATCH").filter((call) => call.status === 200).length,
    ).toBeGreaterThan(0);
    // Discord's pace: never more than five edits in five seconds, none refused.
    expect(streaming.limits.refused).toBe(0);
    expect(streaming.limits.most(dm)).toBeLessThanOrEqual(5);
  }, 150_000);

  it("past delivery.maxTextChunks: the preview takes no more messages than the final, which ends with reply.txt", async () => {
    const gateway = await streaming.install("dc-stream-cut");
    await gateway.start();
    const dm = streaming.fake.world.dmChannel(StreamHumanId);
    streaming.model.enqueue(reply.text(LongAnswer, { stream: Streamed }));
    streaming.fake.sendDirectMessage({ content: "tell me everything", authorId: StreamHumanId });
    const expected = finalOf(LongAnswer, DefaultMaxTextChunks);
    expect(expected).toHaveLength(DefaultMaxTextChunks + 1);
    expect(expected.at(-1)).toBe(`file:${ReplyFileName}`);
    await waitUntil(
      () => JSON.stringify(streaming.shown(dm)) === JSON.stringify(expected),
      "the four messages and reply.txt alone",
      90_000,
    );
    const file = streaming.fake.messagesIn(dm).at(-1)?.files[0];
    expect(file?.bytes.toString("utf8")).toBe(LongAnswer);
    // The preview reached the cut (its last message edited to end as the final's does) but
    // never posted a fifth message.
    const previews = previewIds(dm);
    expect(previews).toHaveLength(DefaultMaxTextChunks);
    const lastPreviewEdit = streaming
      .ofMessages(dm, "PATCH")
      .filter((call) => call.path.endsWith(`/${previews.at(-1)}`) && call.status === 200)
      .at(-1);
    expect((lastPreviewEdit?.payload as { content?: string } | undefined)?.content).toContain(
      ReplyFileName,
    );
    expect(streaming.limits.refused).toBe(0);
    expect(streaming.limits.most(dm)).toBeLessThanOrEqual(5);
  }, 150_000);

  it("never loses the final to 429s on the preview's edits", async () => {
    const gateway = await streaming.install("dc-stream-429");
    await gateway.start();
    const dm = streaming.fake.world.dmChannel(StreamHumanId);
    streaming.fake.injectFailure({
      kind: "rate_limit",
      method: "PATCH",
      path: /\/messages\/\d+$/,
      times: 2,
      retryAfterSeconds: 1,
    });
    // 5 s of stream: the preview, held for the turn's first second, still has edits to make.
    streaming.model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 100 } }));
    streaming.fake.sendDirectMessage({ content: "go", authorId: StreamHumanId });
    const expected = finalOf(LongAnswer, DefaultMaxTextChunks);
    await waitUntil(
      () => JSON.stringify(streaming.shown(dm)) === JSON.stringify(expected),
      "the final messages alone",
      90_000,
    );
    expect(streaming.ofMessages(dm, "PATCH").some((call) => call.status === 429)).toBe(true);
    expect(streaming.shown(dm)).toEqual(expected);
  }, 150_000);
});
