import {
  type ChannelHealth,
  type InboundMessage,
  TelegramChannel,
  type TelegramChannelOptions,
} from "@mediagate/gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { botMethod, FaultProxy, telegramError } from "../fakes/fault-proxy/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { captureLogs } from "../fakes/telegram/media-fixtures.js";
import type { CliInstall } from "./harness/cli-install.js";

/**
 * Receiving durably (docs/durability.md): the real TelegramChannel and grammY against
 * FakeTelegram, behind the fault proxy where a test needs getUpdates to fail.
 */

let fake: FakeTelegram;
let proxy: FaultProxy;
let logs: ReturnType<typeof captureLogs>;
const channels: TelegramChannel[] = [];
const installs: CliInstall[] = [];

/** The waits the channel asked for; each resolves at once (no wall-clock backoff). */
let delays: number[];
/** The channel's health at each wait. */
let healthAtWait: ChannelHealth[];

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  proxy = new FaultProxy(apiRoot);
  await proxy.start();
  logs = captureLogs();
  delays = [];
  healthAtWait = [];
});

afterEach(async () => {
  await Promise.all(channels.splice(0).map((channel) => channel.stop()));
  await Promise.all(installs.splice(0).map((install) => install.dispose()));
  await proxy.stop();
  await fake.stop();
});

function newChannel(extra: Partial<TelegramChannelOptions> = {}): TelegramChannel {
  const channel: TelegramChannel = new TelegramChannel({
    token: fake.token,
    apiRoot: proxy.url,
    profile: "work",
    logger: logs.logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
    sleep: async (ms) => {
      delays.push(ms);
      healthAtWait.push(channel.health());
      await new Promise((resolve) => setImmediate(resolve));
    },
    ...extra,
  });
  channels.push(channel);
  return channel;
}

const logLines = (): Record<string, unknown>[] =>
  logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>);

const getUpdates = botMethod("getUpdates");
const conflict = telegramError(
  409,
  "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
);

describe("TelegramChannel confirms an update only after it was recorded", () => {
  it("does not confirm an update whose handler rejected: the next process receives it", async () => {
    const first = newChannel();
    let attempts = 0;
    await first.start({
      onMessage: async () => {
        attempts++;
        throw new Error("journal: disk full");
      },
      onFatal: () => {},
    });
    fake.sendPrivateText({ userId: 5, text: "do not lose me" });
    await waitFor(() => expect(attempts).toBeGreaterThanOrEqual(1));
    await first.stop();

    const received: InboundMessage[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message),
      onFatal: () => {},
    });
    await waitFor(() => expect(received.map((m) => m.text)).toEqual(["do not lose me"]));
    await channels[1]?.stop();
    expect(fake.pendingUpdates).toBe(0);
  });

  it("offers a rejected update again after a backoff, keeps later ones waiting, logs it once", async () => {
    const seen: string[] = [];
    /** What the handler ran, as the gateway does: each only after the one ahead of it. */
    const ran: string[] = [];
    let failures = 3;
    // Both in one getUpdates answer: sent before the channel polls.
    const first = fake.sendPrivateText({ text: "first" });
    fake.sendPrivateText({ text: "second" });
    const channel = newChannel();
    await channel.start({
      onMessage: async (message, options) => {
        seen.push(message.text);
        if (message.text === "first" && failures-- > 0) throw new Error("journal: disk full");
        if (options?.after !== undefined && !(await options.after)) return;
        ran.push(message.text);
      },
      onFatal: () => {},
    });
    await waitFor(() => expect(ran).toEqual(["first", "second"]));
    // The second was handed on at once, beside the first's first try, and waited for it.
    expect(seen.slice(0, 2)).toEqual(["first", "second"]);
    expect(seen.filter((text) => text === "first")).toHaveLength(4);
    expect(seen.filter((text) => text === "second")).toHaveLength(1);
    expect(delays).toEqual([1000, 2000, 4000]);
    expect(healthAtWait[0]).toMatchObject({
      state: "retrying",
      detail: expect.stringContaining("not recorded: Error: journal: disk full"),
    });
    const errors = logLines().filter((l) => l.updateId === first.update_id && l.level === 50);
    expect(errors).toHaveLength(1);
    expect(channel.health().state).toBe("up");
    await channel.stop();
    expect(fake.pendingUpdates).toBe(0);
  });

  it("stopped while an update is not recorded, confirms neither it nor the ones after it", async () => {
    fake.sendPrivateText({ text: "first" });
    fake.sendPrivateText({ text: "second" });
    const ran: string[] = [];
    let secondRecorded = false;
    // Its backoff ends only when the channel stops.
    const first = newChannel({
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true }),
        ),
    });
    await first.start({
      onMessage: async (message, options) => {
        if (message.text === "first") throw new Error("journal: disk full");
        secondRecorded = true;
        if (options?.after !== undefined && !(await options.after)) return;
        ran.push(message.text);
      },
      onFatal: () => {},
    });
    await waitFor(() => expect(secondRecorded).toBe(true));
    await first.stop();
    expect(ran).toEqual([]);

    const received: string[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    await waitFor(() => expect(received).toEqual(["first", "second"]));
    await channels[1]?.stop();
    expect(fake.pendingUpdates).toBe(0);
  });
});

describe("TelegramChannel hands an album on by its items", () => {
  it("leaves out the items the journal holds; the rest stays unconfirmed until it is recorded", async () => {
    const { updates } = fake.sendAlbum(
      [
        { kind: "photo", bytes: Buffer.from("one"), userId: 5 },
        { kind: "photo", bytes: Buffer.from("two"), userId: 5 },
        { kind: "photo", bytes: Buffer.from("three"), userId: 5 },
      ],
      "the caption it ran with",
    );
    const ids = updates.map((u) => String(u.update_id));
    // The first two items were recorded (by a process that crashed before confirming them).
    const journal = new Set(ids.slice(0, 2));
    const asked: string[][] = [];
    const received: InboundMessage[] = [];
    const pendingAtCall: number[] = [];
    let failures = 1;
    await newChannel().start({
      onMessage: async (message) => {
        received.push(message);
        pendingAtCall.push(fake.pendingUpdates);
        if (failures-- > 0) throw new Error("journal: disk full");
        for (const id of message.receiptIds ?? [message.receiptId]) journal.add(id);
      },
      onFatal: () => {},
      recorded: async (receiptIds) => {
        asked.push([...receiptIds]);
        return new Set(receiptIds.filter((id) => journal.has(id)));
      },
    });
    await waitFor(() => expect(received).toHaveLength(2));
    // Refused once: nothing confirmed; offered again, the same item alone again.
    expect(received.map((m) => [m.receiptId, m.receiptIds, m.text])).toEqual([
      [ids[2], undefined, ""],
      [ids[2], undefined, ""],
    ]);
    expect(received[1]?.messageId).toBe(String(updates[2]?.message?.message_id));
    expect(received[1]?.attachments).toHaveLength(1);
    expect(asked).toEqual([ids, ids]);
    expect(pendingAtCall).toEqual([3, 3]);
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(received).toHaveLength(2);
  });

  it("records an album between the messages around it in one answer, in the updates' order", async () => {
    fake.sendPrivateText({ userId: 5, text: "before" });
    fake.sendAlbum(
      [
        { kind: "photo", bytes: Buffer.from("one"), userId: 5 },
        { kind: "photo", bytes: Buffer.from("two"), userId: 5 },
      ],
      "the album",
    );
    fake.sendPrivateText({ userId: 5, text: "after" });
    /** The messages as the handler was asked to record them: the journal's order. */
    const recorded: string[] = [];
    await newChannel().start({
      onMessage: async (message) => void recorded.push(message.text),
      onFatal: () => {},
      // The journal holds none of the album's items.
      recorded: async () => new Set(),
    });
    await waitFor(() => expect(recorded).toEqual(["before", "the album", "after"]));
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
  });

  it("confirms an album every item of which the journal holds, handing nothing on", async () => {
    const { updates } = fake.sendAlbum([
      { kind: "photo", bytes: Buffer.from("one"), userId: 5 },
      { kind: "photo", bytes: Buffer.from("two"), userId: 5 },
    ]);
    const journal = new Set(updates.map((u) => String(u.update_id)));
    const received: InboundMessage[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message),
      onFatal: () => {},
      recorded: async (receiptIds) => new Set(receiptIds.filter((id) => journal.has(id))),
    });
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    fake.sendPrivateText({ userId: 5, text: "after the album" });
    await waitFor(() => expect(received.map((m) => m.text)).toEqual(["after the album"]));
  });
});

describe("TelegramChannel flushes what it recorded before it confirms it", () => {
  it("flushes once per answer, before the getUpdates that confirms it", async () => {
    for (const text of ["a", "b", "c"]) fake.sendPrivateText({ text });
    const received: string[] = [];
    const pendingAtFlush: number[] = [];
    const channel = newChannel();
    await channel.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
      flush: async () => void pendingAtFlush.push(fake.pendingUpdates),
    });
    await waitFor(() => expect(received).toEqual(["a", "b", "c"]));
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    // One flush for the three updates of the first answer, while all three were unconfirmed.
    expect(pendingAtFlush).toEqual([3]);
  });

  it("confirms nothing while the flush fails, says so, and confirms once it succeeds", async () => {
    const received: string[] = [];
    const pendingAtFlush: number[] = [];
    let failures = 2;
    const channel = newChannel();
    await channel.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
      flush: async () => {
        pendingAtFlush.push(fake.pendingUpdates);
        if (failures-- > 0) throw new Error("fdatasync: EIO");
      },
    });
    fake.sendPrivateText({ text: "keep me" });
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    // Two failed flushes and the one that worked, each with the update still unconfirmed;
    // recorded once (no getUpdates went out in between to hand it over again).
    expect(pendingAtFlush).toEqual([1, 1, 1]);
    expect(received).toEqual(["keep me"]);
    expect(delays).toEqual([1000, 2000]);
    expect(healthAtWait[0]).toMatchObject({
      state: "retrying",
      detail: "recorded updates not synced to disk: fdatasync: EIO",
    });
    const unsynced = logLines().filter((l) => String(l.msg).includes("could not sync"));
    expect(unsynced).toHaveLength(2);
    await waitFor(() => expect(channel.health().state).toBe("up"));
  });
});

describe("TelegramChannel polling health", () => {
  it("reports starting, then up with the last good poll, then stopped", async () => {
    const channel = newChannel();
    expect(channel.health()).toMatchObject({ platform: "telegram", state: "starting" });
    await channel.start({ onMessage: async () => {}, onFatal: () => {} });
    expect(channel.health()).toMatchObject({ state: "up", lastOkMs: expect.any(Number) });
    await channel.stop();
    expect(channel.health().state).toBe("stopped");
  });

  it("backs off on 409 Conflict, says another process polls, and recovers without a restart", async () => {
    proxy.add(getUpdates, conflict, 3);
    const received: string[] = [];
    const channel = newChannel();
    await channel.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {
        throw new Error("a 409 must not be fatal");
      },
    });
    fake.sendPrivateText({ text: "after the conflict" });
    await waitFor(() => expect(received).toEqual(["after the conflict"]));
    expect(delays).toEqual([1000, 2000, 4000]);
    expect(healthAtWait.map((h) => h.state)).toEqual(["retrying", "retrying", "retrying"]);
    expect(healthAtWait[0]?.detail).toContain("409 Conflict");
    const loud = logLines().filter(
      (l) => l.level === 50 && String(l.msg).includes("another process is polling this bot token"),
    );
    expect(loud).toHaveLength(3);
    expect(channel.health().state).toBe("up");
  });

  it("backs off exponentially up to its cap on network errors", async () => {
    proxy.add(getUpdates, { kind: "reset", stage: "before" }, 5);
    proxy.add(getUpdates, { kind: "respond", status: 502, body: "<html>502</html>" }, 2);
    const channel = newChannel({ pollBackoffMinMs: 100, pollBackoffMaxMs: 1000 });
    await channel.start({ onMessage: async () => {}, onFatal: () => {} });
    await waitFor(() => expect(delays).toHaveLength(7));
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(healthAtWait.at(-1)).toMatchObject({ state: "retrying", detail: expect.any(String) });
    // The first poll after a failure is a short one: the channel is up again at once, without
    // waiting for an update to end a long poll.
    await waitFor(() => expect(channel.health().state).toBe("up"));
    const polls = proxy.requests.filter((r) => r.path.endsWith("/getUpdates"));
    expect(polls.length).toBeGreaterThanOrEqual(8);
    expect(logs.text()).not.toContain(fake.token);
  });

  it("fails and calls onFatal once when getUpdates answers 401, and stops polling", async () => {
    proxy.add(getUpdates, telegramError(401, "Unauthorized"), Number.POSITIVE_INFINITY);
    const fatal: Error[] = [];
    const channel = newChannel();
    await channel.start({ onMessage: async () => {}, onFatal: (error) => void fatal.push(error) });
    await waitFor(() => expect(fatal).toHaveLength(1));
    expect(fatal[0]).toMatchObject({ name: "TelegramPollingError", status: 401 });
    expect(fatal[0]?.message).not.toContain(fake.token);
    expect(channel.health()).toMatchObject({
      state: "failed",
      detail: expect.stringContaining("401"),
    });
    expect(proxy.requests.filter((r) => r.path.endsWith("/getUpdates"))).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("abandons a getUpdates that hangs past its timeout and margin, and polls again", async () => {
    proxy.add(getUpdates, { kind: "hang", stage: "before" });
    const received: string[] = [];
    const channel = newChannel({ pollTimeoutSeconds: 1, pollTimeoutMarginMs: 200 });
    await channel.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    fake.sendPrivateText({ text: "sent while the poll hung" });
    await waitFor(() => expect(received).toEqual(["sent while the poll hung"]));
    expect(healthAtWait[0]).toMatchObject({
      state: "retrying",
      detail: "getUpdates did not answer within 1200 ms",
    });
  }, 20_000);

  it("stop abandons the long poll in flight and confirms handled updates", async () => {
    const received: string[] = [];
    const channel = newChannel();
    await channel.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    fake.sendPrivateText({ text: "one" });
    await waitFor(() => expect(received).toEqual(["one"]));
    await waitFor(() => expect(fake.polling).toBe(true));
    await channel.stop();
    expect(fake.pendingUpdates).toBe(0);
    expect(fake.polling).toBe(false);
    const confirm = fake.callsTo("getUpdates").at(-1);
    expect(confirm?.params).toMatchObject({ limit: 1 });
    expect(confirm?.params.timeout ?? 0).toBe(0);
  });
});
