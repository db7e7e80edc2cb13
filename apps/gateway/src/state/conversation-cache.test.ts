import { beforeEach, describe, expect, it } from "vitest";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import type {
  Conversation,
  ConversationRead,
  KnownConversation,
  StoredMessage,
} from "./conversation.js";
import { ConversationCache } from "./conversation-cache.js";
import type { StateStore } from "./state-store.js";
import type { ChatMessage } from "./types.js";

const turn = (n: number): ChatMessage[] => [
  { role: "user", content: `question ${n}` },
  { role: "assistant", content: `answer ${n}` },
];

/** A small deterministic generator (mulberry32), so a failing sequence can be run again. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe.each(StateBackends)("a conversation read again on %s", (kind) => {
  const backend = useStateBackend(kind, "conversation_cache");
  let store: StateStore;

  beforeEach(async () => {
    store = await backend.open();
  });

  it("reads only the messages added since the store last read it", async () => {
    await store.appendHistory("s", [...turn(1), ...turn(2)]);
    expect((await store.loadConversation("s")).messages).toHaveLength(4);
    // A stored message never changes, so a store that read it does not read it again: this
    // change, which nothing in the gateway makes, shows which rows the second load read.
    const table = kind === "sqlite" ? "messages" : "state_messages";
    await backend.raw(`UPDATE ${table} SET body = '{"role":"user","content":"changed"}'`);
    await store.appendHistory("s", turn(3));
    const again = await store.loadConversation("s");
    expect(again.messages.map((stored) => stored.message.content)).toEqual([
      "question 1",
      "answer 1",
      "question 2",
      "answer 2",
      "question 3",
      "answer 3",
    ]);
    const truth = await backend.open({ conversationCacheChars: 0 });
    expect((await truth.loadConversation("s")).messages.map((m) => m.message.content)).toEqual([
      ...Array(4).fill("changed"),
      "question 3",
      "answer 3",
    ]);
  });

  it("hands out messages nobody can change", async () => {
    await store.appendHistory("s", turn(1));
    const first = await store.loadConversation("s");
    const message = first.messages[0]!.message;
    expect(() => {
      (message as { content: string }).content = "edited";
    }).toThrow(TypeError);
    expect(() => (first.messages as StoredMessage[]).push(first.messages[0]!)).toThrow(TypeError);
    expect((await store.loadConversation("s")).messages[0]!.message.content).toBe("question 1");
  });

  it("hands out a tool call nobody can change either", async () => {
    const call = {
      id: "call_1",
      type: "function" as const,
      function: { name: "shell", arguments: "{}" },
    };
    await store.appendHistory("s", [{ role: "assistant", content: null, tool_calls: [call] }]);
    const message = (await store.loadConversation("s")).messages[0]!.message;
    const calls = message.role === "assistant" ? message.tool_calls : undefined;
    expect(calls).toHaveLength(1);
    expect(() => {
      (calls![0]!.function as { arguments: string }).arguments = '{"command":"rm"}';
    }).toThrow(TypeError);
    expect(() => calls!.push(call)).toThrow(TypeError);
  });

  it("sees what another process changed: a cleared history, a new summary, new messages", async () => {
    const other = await backend.open();
    await store.appendHistory("s", [...turn(1), ...turn(2), ...turn(3)]);
    const ids = (await store.loadConversation("s")).messages.map((stored) => stored.id);

    expect(
      await other.saveSummary("s", { content: "1", throughId: ids[1]!, baseThroughId: undefined }),
    ).toBe(true);
    const summarized = await store.loadConversation("s");
    expect(summarized.summary).toEqual({ content: "1", throughId: ids[1] });
    expect(summarized.messages.map((stored) => stored.id)).toEqual(ids.slice(2));

    await other.clearHistory("s");
    expect(await store.loadConversation("s")).toEqual({ messages: [] });

    await other.appendHistory("s", turn(4));
    expect((await store.loadConversation("s")).messages.map((stored) => stored.message)).toEqual(
      turn(4),
    );
  });

  it("never reads back anything but the stored conversation, through any order of changes", async () => {
    const other = await backend.open();
    const truth = await backend.open({ conversationCacheChars: 0 });
    const next = random(kind === "sqlite" ? 31 : 32);
    const sessions = ["a", "b", "c"];
    let n = 0;
    for (let step = 0; step < 300; step++) {
      const session = sessions[Math.floor(next() * sessions.length)]!;
      const writer = next() < 0.5 ? store : other;
      const roll = next();
      if (roll < 0.55) {
        await writer.appendHistory(session, turn(n++));
      } else if (roll < 0.65) {
        await writer.clearHistory(session);
      } else if (roll < 0.85) {
        const conversation = await writer.loadConversation(session);
        const through = conversation.messages[Math.floor(next() * conversation.messages.length)];
        if (through !== undefined) {
          await writer.saveSummary(session, {
            content: `summary ${step}`,
            throughId: through.id,
            baseThroughId: conversation.summary?.throughId,
          });
        }
      }
      const reader = next() < 0.5 ? store : other;
      const read = await reader.loadConversation(session);
      expect(plain(read), `step ${step}, session ${session}`).toEqual(
        plain(await truth.loadConversation(session)),
      );
    }
  });
});

/** A conversation as plain data (`toEqual` would not tell a frozen array from another). */
function plain(conversation: Conversation): unknown {
  return JSON.parse(JSON.stringify(conversation));
}

describe("ConversationCache", () => {
  const stored = (id: number, content = `m${id}`): StoredMessage => ({
    id,
    message: { role: "user", content },
  });
  const whole = (messages: StoredMessage[]): ConversationRead => ({
    kind: "whole",
    conversation: { messages },
    chars: messages.length * 10,
  });

  it("names what it holds, and keeps the newest conversations within its bound", async () => {
    const cache = new ConversationCache(3 * 106);
    const scope = cache.scope();
    const asked: (KnownConversation | undefined)[] = [];
    const read = (messages: StoredMessage[]) => async (known: KnownConversation | undefined) => {
      asked.push(known);
      return whole(messages);
    };
    await scope.load("a", read([stored(1)]));
    await scope.load("b", read([stored(2)]));
    await scope.load("a", async (known) => {
      asked.push(known);
      return { kind: "after", messages: [stored(3)], chars: 10 };
    });
    expect(asked).toEqual([undefined, undefined, { throughId: 0, lastId: 1, count: 1 }]);
    expect(cache.size).toEqual({ conversations: 2, chars: 3 * 106 });
    // One message more than the bound holds: "b", read least recently, goes.
    await scope.load("c", read([stored(4)]));
    expect(cache.size).toEqual({ conversations: 2, chars: 3 * 106 });
    asked.length = 0;
    await scope.load("b", read([stored(2)]));
    await scope.load("a", read([stored(1), stored(3)]));
    expect(asked).toEqual([undefined, undefined]);
  });

  it("keeps no conversation larger than its bound, and none with a bound of 0", async () => {
    for (const bound of [0, 200]) {
      const cache = new ConversationCache(bound);
      const scope = cache.scope();
      await scope.load("a", async () => whole([stored(1), stored(2)]));
      expect(cache.size).toEqual({ conversations: 0, chars: 0 });
      let known: KnownConversation | undefined = { throughId: -1, lastId: -1, count: -1 };
      await scope.load("a", async (asked) => {
        known = asked;
        return whole([stored(1), stored(2)]);
      });
      expect(known).toBeUndefined();
    }
  });

  it("keeps the first of two loads that answer at once, and gives each its own answer", async () => {
    const scope = new ConversationCache(10_000).scope();
    await scope.load("a", async () => whole([stored(1)]));
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = scope.load("a", async () => {
      await held;
      return { kind: "after", messages: [stored(2)], chars: 10 };
    });
    const fast = await scope.load("a", async () => whole([stored(1), stored(5)]));
    release();
    expect((await slow).messages.map((m) => m.id)).toEqual([1, 2]);
    expect(fast.messages.map((m) => m.id)).toEqual([1, 5]);
    let known: KnownConversation | undefined;
    await scope.load("a", async (asked) => {
      known = asked;
      return { kind: "after", messages: [], chars: 0 };
    });
    expect(known).toEqual({ throughId: 0, lastId: 5, count: 2 });
  });

  it("keeps each store's conversations apart, and lets a closed store's go", async () => {
    const cache = new ConversationCache(10_000);
    const [one, two] = [cache.scope(), cache.scope()];
    await one.load("a", async () => whole([stored(1)]));
    let known: KnownConversation | undefined = { throughId: -1, lastId: -1, count: -1 };
    await two.load("a", async (asked) => {
      known = asked;
      return whole([stored(7)]);
    });
    expect(known).toBeUndefined();
    expect(cache.size.conversations).toBe(2);
    one.close();
    expect(cache.size).toEqual({ conversations: 1, chars: 106 });
    // A load that answers after its store closed keeps nothing.
    await one.load("b", async () => whole([stored(2)]));
    expect(cache.size.conversations).toBe(1);
  });
});
