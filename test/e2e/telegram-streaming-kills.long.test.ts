import { describe, expect, it } from "vitest";
import { reply } from "../fakes/openai/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { LongAnswer, StreamUser, useTelegramStreaming } from "./harness/streaming.js";

/**
 * A streamed reply (docs/streaming.md) through the real CLI, grammY and FakeTelegram, the
 * gateway SIGKILLed mid-stream and started again: the SIGKILL half of telegram-streaming.test.ts,
 * in the long suite with the other SIGKILL-and-restart files (test/long/README.md).
 */

const streaming = useTelegramStreaming();

describe("streamed replies on Telegram, through a SIGKILL", () => {
  it("after a SIGKILL mid-stream: no duplicate, the stale preview deleted, the user told", async () => {
    const gateway = await streaming.install("tg-stream-kill", { stream: "edit" });
    await gateway.start();
    streaming.model.enqueue(
      reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 100, hangAfterChars: 6000 } }),
      reply.text("the answer, in full"),
    );
    streaming.fake.sendPrivateText({ userId: StreamUser, text: "long one" });
    // Two preview messages (a rollover past 4,096), and the second edited: it was recorded.
    await waitUntil(
      () =>
        streaming.inChat(StreamUser).filter((call) => call.method === "sendMessage").length >= 2,
      "the preview's rollover",
      60_000,
    );
    const [first, second] = streaming
      .inChat(StreamUser)
      .filter((call) => call.method === "sendMessage")
      .map((call) => (call.result as { message_id: number }).message_id);
    await waitUntil(
      () =>
        streaming
          .inChat(StreamUser)
          .some((call) => call.method === "editMessageText" && call.params.message_id === second),
      "the rollover to be edited",
      60_000,
    );
    await gateway.kill();

    const restart = streaming.fake.calls.length;
    await gateway.start();
    const expected = ["⏹ cut off by a restart; running it again", "the answer, in full"];
    await waitUntil(
      () => JSON.stringify(streaming.shown(StreamUser)) === JSON.stringify(expected),
      "the notice and the final alone",
      60_000,
    ).catch((error: unknown) => {
      // What the chat shows instead, and what the restarted gateway said about the turn.
      console.log(JSON.stringify(streaming.shown(StreamUser)).slice(0, 2000));
      console.log(
        gateway
          .output()
          .split("\n")
          .filter((line) => /"level":(40|50)|turn finished|interrupted|rerun/.test(line))
          .slice(-20)
          .join("\n"),
      );
      throw error;
    });
    await waitUntil(
      () => streaming.inChat(StreamUser, restart).some((call) => call.method === "deleteMessage"),
      "the stale rollover deleted",
    );
    expect(streaming.fake.botMessage(StreamUser, second ?? 0)).toBeUndefined();
    expect(streaming.fake.botMessage(StreamUser, first ?? 0)?.text).toBe(
      "⏹ cut off by a restart; running it again",
    );
    const everything = streaming.shown(StreamUser);
    expect(everything.filter((text) => text === "the answer, in full")).toHaveLength(1);
    expect(everything).toEqual(expected);
  }, 180_000);
});
