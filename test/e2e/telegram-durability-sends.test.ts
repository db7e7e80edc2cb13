import { randomBytes } from "node:crypto";
import {
  type ChatTarget,
  type DeliveryProgress,
  type DeliveryReport,
  type StepResult,
  TelegramChannel,
  type TelegramChannelOptions,
  TelegramDeliveryError,
} from "@mediagate/gateway";
import type { ReadyMedia } from "@mediagate/media";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { botMethod, FaultProxy, floodWait } from "../fakes/fault-proxy/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { captureLogs, planOf, readyItem, scratchDir } from "../fakes/telegram/media-fixtures.js";

/**
 * Sending durably (docs/durability.md): the real TelegramChannel and grammY against
 * FakeTelegram behind the fault proxy, which loses answers after the fake handled a send.
 */

let fake: FakeTelegram;
let proxy: FaultProxy;
let logs: ReturnType<typeof captureLogs>;
let scratch: Awaited<ReturnType<typeof scratchDir>>;
const disposers: (() => Promise<void>)[] = [];
const target: ChatTarget = { platform: "telegram", chatId: "77" };

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  proxy = new FaultProxy(apiRoot);
  await proxy.start();
  logs = captureLogs();
  scratch = await scratchDir();
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await proxy.stop();
  await fake.stop();
  await scratch.cleanup();
});

function newChannel(extra: Partial<TelegramChannelOptions> = {}): TelegramChannel {
  return new TelegramChannel({
    token: fake.token,
    apiRoot: proxy.url,
    profile: "work",
    logger: logs.logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
    ...extra,
  });
}

/**
 * An outbox stand-in: remembers each finished step (`steps`) and the steps begun and not
 * finished (`begun`: recorded `sending`, not cleared); `hook` runs after a step finished.
 */
function recorder(done: ReadonlyMap<string, StepResult> = new Map()) {
  const steps: [string, StepResult][] = [];
  const begun = new Set<string>();
  let hook: (key: string) => void = () => {};
  const progress: DeliveryProgress = {
    replyId: "reply-1",
    done,
    step: async (key, result) => {
      if (result === "sending") {
        begun.add(key);
        return;
      }
      begun.delete(key);
      steps.push([key, result]);
      hook(key);
    },
    clear: async (key) => {
      begun.delete(key);
    },
  };
  return {
    progress,
    steps,
    begun,
    all: () => new Map([...done, ...steps]),
    after: (fn: (key: string) => void) => {
      hook = fn;
    },
  };
}

async function deliver(
  channel: TelegramChannel,
  text: string,
  items: readonly ReadyMedia[],
  options: Parameters<TelegramChannel["deliver"]>[1] = {},
): Promise<DeliveryReport> {
  const plan = planOf(text, items);
  disposers.push(() => plan.dispose());
  return channel.deliver(
    { sessionKey: "agent:work:telegram:dm:77", profile: "work", target, text, plan },
    options,
  );
}

const doc = (name: string, bytes = randomBytes(5000)) =>
  readyItem(scratch.dir, "document", name, bytes);

/** Sends the fake handled (posted to the chat), by method. */
const posted = (method: string) => fake.callsTo(method).filter((call) => call.ok);

const logLines = (): Record<string, unknown>[] =>
  logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe("ambiguous failures: the request reached Telegram, the answer was lost", () => {
  it("at-most-once: a reset after the text was posted leaves one message, step unconfirmed", async () => {
    proxy.add(botMethod("sendMessage"), { kind: "reset", stage: "after" });
    const record = recorder();
    const report = await deliver(newChannel(), "hello once", [], { progress: record.progress });
    expect(posted("sendMessage").map((c) => c.params.text)).toEqual(["hello once"]);
    expect(record.steps).toEqual([["text:0", "unconfirmed"]]);
    expect(report).toEqual({ outcomes: [] });
  });

  it("at-most-once: a 502 after the document was posted leaves one document, caption not resent", async () => {
    proxy.add(botMethod("sendDocument"), {
      kind: "respond",
      stage: "after",
      status: 502,
      body: "<html>502 Bad Gateway</html>",
    });
    const record = recorder();
    const report = await deliver(
      newChannel(),
      "see file",
      [await doc("a.bin"), await doc("b.bin")],
      {
        progress: record.progress,
      },
    );
    expect(report.outcomes).toEqual([
      { status: "unconfirmed", path: "/workspace/a.bin" },
      { status: "delivered", path: "/workspace/b.bin", kind: "document" },
    ]);
    expect(posted("sendDocument").map((c) => [c.files[0]?.filename, c.params.caption])).toEqual([
      ["a.bin", "see file"],
      ["b.bin", undefined],
    ]);
    expect(posted("sendMessage")).toEqual([]);
    expect(record.steps).toEqual([
      ["media:/workspace/a.bin", "unconfirmed"],
      ["text:0", "unconfirmed"],
      ["media:/workspace/b.bin", "sent"],
    ]);
    const warned = logLines().find(
      (l) => l.msg === "telegram call may have gone through; not sending it again",
    );
    expect(warned).toMatchObject({ method: "sendDocument", ambiguousSends: "at-most-once" });
  });

  it("at-least-once: the same reset and 502 are resent, so they arrive twice", async () => {
    proxy.add(botMethod("sendMessage"), { kind: "reset", stage: "after" });
    proxy.add(botMethod("sendDocument"), {
      kind: "respond",
      stage: "after",
      status: 502,
      body: { ok: false, error_code: 502, description: "Bad Gateway" },
    });
    const record = recorder();
    const channel = newChannel({ ambiguousSends: "at-least-once" });
    const report = await deliver(channel, "x".repeat(2000), [await doc("a.bin")], {
      progress: record.progress,
    });
    expect(report.outcomes.map((o) => o.status)).toEqual(["delivered"]);
    expect(posted("sendMessage")).toHaveLength(2);
    expect(posted("sendDocument")).toHaveLength(2);
    expect(record.steps).toEqual([
      ["text:0", "sent"],
      ["media:/workspace/a.bin", "sent"],
    ]);
  });

  it("retries an upload cut off before its body was sent, under at-most-once too", async () => {
    const bytes = randomBytes(16 * 1024 * 1024);
    proxy.add(botMethod("sendDocument"), { kind: "reset", stage: "before" });
    const report = await deliver(newChannel(), "", [await doc("big.bin", bytes)]);
    expect(report.outcomes.map((o) => o.status)).toEqual(["delivered"]);
    expect(posted("sendDocument")).toHaveLength(1);
    expect(posted("sendDocument")[0]?.files[0]?.bytes.equals(bytes)).toBe(true);
    expect(proxy.requests.filter((r) => r.path.endsWith("/sendDocument"))).toHaveLength(2);
  });
});

describe("every request is bounded by its size", () => {
  it("gives up on a send that never answers after base + bytes / throughput, and goes on", async () => {
    proxy.add(botMethod("sendDocument"), { kind: "hang", stage: "after" });
    const channel = newChannel({ requestTimeoutBaseMs: 200, minUploadBytesPerSecond: 1_000_000 });
    const report = await deliver(channel, "", [
      await doc("stuck.bin", randomBytes(300_000)),
      await doc("next.bin"),
    ]);
    expect(report.outcomes.map((o) => o.status)).toEqual(["unconfirmed", "delivered"]);
    // 200 ms + 300 000 bytes at 1 MB/s.
    const bounded = logLines().find(
      (l) => l.method === "sendDocument" && l.timeoutMs !== undefined,
    );
    expect(bounded).toMatchObject({ timeoutMs: 500, description: "no answer within 500 ms" });
    expect(posted("sendDocument").map((c) => c.files[0]?.filename)).toEqual([
      "stuck.bin",
      "next.bin",
    ]);
  });
});

describe("delivery progress", () => {
  it("stops before the next step when aborted; a second deliver skips what the first recorded", async () => {
    const channel = newChannel();
    const items = [await doc("a.bin"), await doc("b.bin"), await doc("c.bin")];
    const stop = new AbortController();
    const first = recorder();
    first.after((key) => {
      if (key === "text:0") stop.abort();
    });
    const report = await deliver(channel, "three files", items, {
      signal: stop.signal,
      progress: first.progress,
    });
    expect(report.outcomes).toEqual([
      { status: "delivered", path: "/workspace/a.bin", kind: "document" },
      { status: "pending", path: "/workspace/b.bin" },
      { status: "pending", path: "/workspace/c.bin" },
    ]);
    expect(first.steps).toEqual([
      ["media:/workspace/a.bin", "sent"],
      ["text:0", "sent"],
    ]);

    const second = recorder(first.all());
    const resumed = await deliver(channel, "three files", items, { progress: second.progress });
    expect(resumed.outcomes.map((o) => o.status)).toEqual(["delivered", "delivered", "delivered"]);
    expect(second.steps).toEqual([
      ["media:/workspace/b.bin", "sent"],
      ["media:/workspace/c.bin", "sent"],
    ]);
    expect(posted("sendDocument").map((c) => [c.files[0]?.filename, c.params.caption])).toEqual([
      ["a.bin", "three files"],
      ["b.bin", undefined],
      ["c.bin", undefined],
    ]);
    expect(posted("sendMessage")).toEqual([]);
  });

  it("a long retry_after stops the reply and reports it, with the undone steps left undone", async () => {
    const channel = newChannel();
    const text = `${"word ".repeat(1000)}\n${"more ".repeat(400)}`; // 2 chunks, sent first
    const items = [await doc("a.bin"), await doc("b.bin"), await doc("c.bin")];
    const record = recorder();
    record.after((key) => {
      if (key === "media:/workspace/a.bin") proxy.add(botMethod("sendDocument"), floodWait(3600));
    });
    const report = await deliver(channel, text, items, { progress: record.progress });
    expect(report.retryAfterSeconds).toBeGreaterThan(3590);
    expect(report.retryAfterSeconds).toBeLessThanOrEqual(3600);
    expect(report.textPending).toBeUndefined();
    expect(report.outcomes.map((o) => o.status)).toEqual([
      "delivered",
      "rate_limited",
      "rate_limited",
    ]);
    expect(record.steps).toEqual([
      ["text:0", "sent"],
      ["text:1", "sent"],
      ["media:/workspace/a.bin", "sent"],
    ]);
    // b was refused by flood control; c was not even tried.
    expect(proxy.requests.filter((r) => r.path.endsWith("/sendDocument"))).toHaveLength(2);
  });

  it("a long retry_after on the text marks it pending and sends nothing else", async () => {
    proxy.add(botMethod("sendMessage"), floodWait(600));
    const record = recorder();
    const report = await deliver(newChannel(), "x".repeat(1500), [await doc("a.bin")], {
      progress: record.progress,
    });
    expect(report).toMatchObject({ textPending: true, retryAfterSeconds: expect.any(Number) });
    expect(report.outcomes.map((o) => o.status)).toEqual(["rate_limited"]);
    expect(record.steps).toEqual([]);
    // Known not sent: no "sending" trace is left for a resume to take as ambiguous.
    expect([...record.begun]).toEqual([]);
    expect(fake.callsTo("sendDocument")).toEqual([]);
  });
});

describe("a step cut off between its request and the record of its answer", () => {
  it("is recorded as begun before its request goes out, then with its result", async () => {
    const seen: [string, StepResult][] = [];
    const record = recorder();
    await deliver(newChannel(), "hello", [], {
      progress: {
        ...record.progress,
        step: async (key, result) => {
          seen.push([key, result]);
          await record.progress.step(key, result);
        },
      },
    });
    expect(seen).toEqual([
      ["text:0", "sending"],
      ["text:0", "sent"],
    ]);
  });

  it("at-most-once: is not sent again by the next process, and counts as unconfirmed", async () => {
    const record = recorder(new Map<string, StepResult>([["text:0", "sending"]]));
    const report = await deliver(newChannel(), "cut off", [], { progress: record.progress });
    expect(posted("sendMessage")).toEqual([]);
    expect(record.steps).toEqual([["text:0", "unconfirmed"]]);
    expect(report.textPending).toBeUndefined();
  });

  it("at-least-once: is sent again by the next process", async () => {
    const record = recorder(new Map<string, StepResult>([["text:0", "sending"]]));
    await deliver(newChannel({ ambiguousSends: "at-least-once" }), "cut off", [], {
      progress: record.progress,
    });
    expect(posted("sendMessage").map((c) => c.params.text)).toEqual(["cut off"]);
    expect(record.steps).toEqual([["text:0", "sent"]]);
  });
});

describe("signals", () => {
  it("sendText and showActivity give up on an aborted signal without calling Telegram", async () => {
    const channel = newChannel();
    const error = await channel
      .sendText(target, "never", AbortSignal.abort())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TelegramDeliveryError);
    expect(error).toMatchObject({ aborted: true });
    await expect(channel.showActivity(target, AbortSignal.abort())).resolves.toBeUndefined();
    expect(proxy.requests).toEqual([]);
  });
});
