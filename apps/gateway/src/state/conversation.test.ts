import { beforeEach, describe, expect, it } from "vitest";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import type { StateStore } from "./state-store.js";
import type { ChatMessage } from "./types.js";

const turn = (n: number): ChatMessage[] => [
  { role: "user", content: `question ${n}` },
  { role: "assistant", content: `answer ${n}` },
];

describe.each(StateBackends)("StateStore summaries on %s", (kind) => {
  const backend = useStateBackend(kind, "summary");
  let store: StateStore;

  beforeEach(async () => {
    store = await backend.open();
  });

  async function idsOf(sessionId: string): Promise<number[]> {
    return (await store.loadConversation(sessionId)).messages.map((stored) => stored.id);
  }

  it("hides the summarized messages behind the summary, and keeps them stored", async () => {
    await store.appendHistory("s", [...turn(1), ...turn(2), ...turn(3)]);
    const ids = await idsOf("s");
    expect(
      await store.saveSummary("s", {
        content: "1 and 2",
        throughId: ids[3]!,
        baseThroughId: undefined,
      }),
    ).toBe(true);
    const conversation = await store.loadConversation("s");
    expect(conversation.summary).toEqual({ content: "1 and 2", throughId: ids[3] });
    expect(conversation.messages.map((stored) => stored.message)).toEqual(turn(3));
    expect(await store.loadHistory("s")).toHaveLength(6);
  });

  it("stores a NUL in a summary as U+FFFD and gives a message's back exactly, on both stores", async () => {
    const message: ChatMessage = { role: "assistant", content: "bytes \u0000 from a command" };
    await store.appendHistory("s", [...turn(1), message]);
    const ids = await idsOf("s");
    expect(
      await store.saveSummary("s", {
        content: "a model wrote \u0000 here",
        throughId: ids[0]!,
        baseThroughId: undefined,
      }),
    ).toBe(true);
    const conversation = await store.loadConversation("s");
    expect(conversation.summary?.content).toBe("a model wrote \uFFFD here");
    expect(conversation.messages.at(-1)?.message).toEqual(message);
  });

  it("refuses a summary made from a summary another compaction replaced", async () => {
    await store.appendHistory("s", [...turn(1), ...turn(2), ...turn(3)]);
    const ids = await idsOf("s");
    const first = { content: "1", throughId: ids[1]!, baseThroughId: undefined };
    expect(await store.saveSummary("s", first)).toBe(true);
    expect(await store.saveSummary("s", { ...first, content: "1 again" })).toBe(false);
    expect(
      await store.saveSummary("s", { content: "1, 2", throughId: ids[3]!, baseThroughId: ids[1] }),
    ).toBe(true);
    expect((await store.loadConversation("s")).summary?.content).toBe("1, 2");
  });

  it("refuses a summary through a message of another session or one not stored", async () => {
    await store.appendHistory("a", turn(1));
    await store.appendHistory("b", turn(1));
    const foreign = (await idsOf("b"))[1]!;
    expect(
      await store.saveSummary("a", { content: "x", throughId: foreign, baseThroughId: undefined }),
    ).toBe(false);
    expect(
      await store.saveSummary("a", { content: "x", throughId: 999, baseThroughId: undefined }),
    ).toBe(false);
    expect((await store.loadConversation("a")).summary).toBeUndefined();
  });

  it("drops the summary with the history on a rotation and on clear", async () => {
    const id = await store.currentSessionId("key");
    await store.appendHistory(id, turn(1));
    const through = (await idsOf(id))[1]!;
    await store.saveSummary(id, { content: "x", throughId: through, baseThroughId: undefined });
    const next = await store.rotateSessionId("key");
    expect(await store.loadConversation(id)).toEqual({ messages: [] });
    expect(await store.loadConversation(next)).toEqual({ messages: [] });

    await store.appendHistory(next, turn(2));
    const again = (await idsOf(next))[1]!;
    await store.saveSummary(next, { content: "y", throughId: again, baseThroughId: undefined });
    await store.clearHistory(next);
    expect(await store.loadConversation(next)).toEqual({ messages: [] });
  });
});
