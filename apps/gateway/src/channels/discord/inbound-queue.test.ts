import { describe, expect, it } from "vitest";
import { waitFor } from "../../../../../test-support/wait.js";
import { createLogger } from "../../log.js";
import type { InboundMessage } from "../types.js";
import { compareSnowflakes, InboundQueues } from "./inbound-queue.js";
import { stepNonce } from "./message-create.js";

const log = createLogger({ level: "silent" });

function message(id: string, chatId = "100"): InboundMessage {
  return {
    profile: "p",
    platform: "discord",
    chatId,
    chatType: "group",
    userId: "1",
    messageId: id,
    receiptId: id,
    text: `m${id}`,
  };
}

/** A handler that resolves each call only when the test says so. */
function gatedHandler() {
  const calls: { id: string; resolve: () => void; reject: (error: Error) => void }[] = [];
  const handler = (m: InboundMessage) =>
    new Promise<void>((resolve, reject) => calls.push({ id: m.messageId, resolve, reject }));
  return { calls, handler };
}

const instantSleep = async () => {};

describe("InboundQueues", () => {
  it("hands one chat's messages over one at a time in id order, other chats in parallel", async () => {
    const queues = new InboundQueues(log, instantSleep);
    const { calls, handler } = gatedHandler();
    const first = queues.push("a", message("1000"), handler);
    void queues.push("a", message("1002"), handler);
    void queues.push("a", message("1001"), handler);
    void queues.push("b", message("999", "b"), handler);
    await waitFor(() => expect(calls.map((call) => call.id)).toEqual(["1000", "999"]));
    calls[0]!.resolve();
    await expect(first).resolves.toBe(true);
    await waitFor(() => expect(calls.map((call) => call.id)).toEqual(["1000", "999", "1001"]));
    calls[2]!.resolve();
    await waitFor(() => expect(calls.at(-1)?.id).toBe("1002"));
  });

  it("queues a message waiting or in flight only once", async () => {
    const queues = new InboundQueues(log, instantSleep);
    const { calls, handler } = gatedHandler();
    void queues.push("a", message("1"), handler);
    void queues.push("a", message("2"), handler);
    const again = queues.push("a", message("2"), handler);
    void queues.push("a", message("1"), handler);
    await waitFor(() => expect(calls).toHaveLength(1));
    calls[0]!.resolve();
    await waitFor(() => expect(calls).toHaveLength(2));
    calls[1]!.resolve();
    await expect(again).resolves.toBe(true);
    expect(calls.map((call) => call.id)).toEqual(["1", "2"]);
  });

  it("holds a chat so older messages pushed meanwhile go first", async () => {
    const queues = new InboundQueues(log, instantSleep);
    const seen: string[] = [];
    const handler = async (m: InboundMessage) => {
      seen.push(m.messageId);
    };
    const release = queues.hold("a");
    const live = queues.push("a", message("30"), handler);
    await Promise.resolve();
    expect(seen).toEqual([]);
    void queues.push("a", message("10"), handler);
    void queues.push("a", message("20"), handler);
    release();
    await live;
    expect(seen).toEqual(["10", "20", "30"]);
  });

  it("holds every chat, new ones too, until a chat's own hold is all that is left", async () => {
    const queues = new InboundQueues(log, instantSleep);
    const seen: string[] = [];
    const handler = async (m: InboundMessage) => {
      seen.push(m.messageId);
    };
    const releaseAll = queues.holdAll();
    void queues.push("a", message("30"), handler);
    const other = queues.push("b", message("40", "b"), handler);
    await Promise.resolve();
    const releaseA = queues.hold("a");
    releaseAll();
    await other;
    expect(seen).toEqual(["40"]);
    void queues.push("a", message("10"), handler);
    releaseA();
    await waitFor(() => expect(seen).toEqual(["40", "10", "30"]));
  });

  it("drops what waits when stopped, and stops retrying", async () => {
    const queues = new InboundQueues(log, (_ms, signal) => {
      return new Promise((_resolve, reject) =>
        signal?.addEventListener("abort", () => reject(signal.reason)),
      );
    });
    const failing = () => Promise.reject(new Error("disk full"));
    const retried = queues.push("a", message("1"), failing);
    const waiting = queues.push("a", message("2"), failing);
    await Promise.resolve();
    expect(queues.stop()).toBe(2);
    await expect(retried).resolves.toBe(false);
    await expect(waiting).resolves.toBe(false);
    await expect(queues.push("a", message("3"), failing)).resolves.toBe(false);
  });
});

describe("compareSnowflakes", () => {
  it("orders by numeric value, not by text", () => {
    const ids = ["1000000000000000001", "999999999999999999", "1000000000000000000"];
    expect([...ids].sort(compareSnowflakes)).toEqual([
      "999999999999999999",
      "1000000000000000000",
      "1000000000000000001",
    ]);
  });
});

describe("stepNonce", () => {
  it("is the same for the same reply and step, different otherwise, and at most 25 characters", () => {
    const nonce = stepNonce("reply-1", "text:0");
    expect(stepNonce("reply-1", "text:0")).toBe(nonce);
    expect(stepNonce("reply-1", "text:1")).not.toBe(nonce);
    expect(stepNonce("reply-2", "text:0")).not.toBe(nonce);
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{25}$/);
  });
});
