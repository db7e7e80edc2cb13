import { describe, expect, it } from "vitest";
import { reply } from "../fakes/openai/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { LongAnswer, StreamHumanId, useDiscordStreaming } from "./harness/streaming.js";

/**
 * A streamed reply (docs/streaming.md) on Discord through the real CLI, discord.js and
 * FakeDiscord, the gateway SIGKILLed mid-stream and started again: the SIGKILL half of
 * discord-streaming.test.ts, in the long suite with the other SIGKILL-and-restart files
 * (test/long/README.md).
 */

const streaming = useDiscordStreaming();

describe("streamed replies on Discord, through a SIGKILL", () => {
  it("after a SIGKILL mid-stream: no duplicate, the stale preview deleted, the user told", async () => {
    const gateway = await streaming.install("dc-stream-kill");
    await gateway.start();
    const dm = streaming.fake.world.dmChannel(StreamHumanId);
    streaming.model.enqueue(
      reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 100, hangAfterChars: 6000 } }),
      reply.text("the answer, in full"),
    );
    streaming.fake.sendDirectMessage({ content: "long one", authorId: StreamHumanId });
    // Two preview messages (a rollover past 2,000), and the second edited: it was recorded.
    await waitUntil(() => streaming.creates(dm).length >= 2, "the preview's rollover", 60_000);
    const [first, second] = streaming.creates(dm).map((call) => call.messageId ?? "");
    await waitUntil(
      () =>
        streaming
          .ofMessages(dm, "PATCH")
          .some((call) => call.path.endsWith(`/${second}`) && call.status === 200),
      "the rollover to be edited",
      60_000,
    );
    await gateway.kill();

    await gateway.start();
    const expected = ["⏹ cut off by a restart; running it again", "the answer, in full"];
    await waitUntil(
      () => JSON.stringify(streaming.shown(dm)) === JSON.stringify(expected),
      "the notice and the final alone",
      60_000,
    );
    expect(streaming.fake.messagesIn(dm).map((message) => message.id)[0]).toBe(first);
    expect(streaming.ofMessages(dm, "DELETE").map((call) => call.path.split("/").at(-1))).toContain(
      second,
    );
    expect(
      streaming
        .creates(dm)
        .filter((call) => (call.payload as { content?: string }).content === expected[1]),
    ).toHaveLength(1);
  }, 180_000);
});
