import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type ChatCursor,
  type ChatTarget,
  createLogger,
  type DeliveryProgress,
  DiscordChannel,
  type DiscordChannelOptions,
  type InboundMessage,
  type StepResult,
} from "@mediagate/gateway";
import { type MediaPlan, planMedia } from "@mediagate/media";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { FakeDiscord, type FakeDiscordOptions } from "../fakes/discord/index.js";

const Token = "discord-durable-token-Pq7w2Rt9";
const HumanId = "300000000000000001";

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A controllable sleep: each wait stays pending until the test lets it go. */
function manualSleep() {
  const waits: { ms: number; wake: () => void }[] = [];
  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const wait = { ms, wake: resolve };
      waits.push(wait);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  return { sleep, waits };
}

async function startFake(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = await FakeDiscord.start({ token: Token, ...options });
  cleanups.push(() => fake.close());
  return fake;
}

interface Instance {
  readonly channel: DiscordChannel;
  readonly logs: string[];
  readonly fatal: Error[];
  readonly stop: () => Promise<void>;
}

/** A DiscordChannel (one "process") against the fake, started with `onMessage`. */
async function startChannel(
  fake: FakeDiscord,
  onMessage: (message: InboundMessage) => Promise<void>,
  options: Partial<DiscordChannelOptions> = {},
): Promise<Instance> {
  const logs: string[] = [];
  const fatal: Error[] = [];
  const channel = new DiscordChannel({
    token: Token,
    apiRoot: fake.apiRoot,
    profile: "durable",
    logger: createLogger({ level: "debug", destination: { write: (line) => logs.push(line) } }),
    retry: { minDelayMs: 10, maxDelayMs: 50 },
    ...options,
  });
  await channel.start({ onMessage, onFatal: (error) => fatal.push(error) });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await channel.stop();
  };
  cleanups.push(stop);
  return { channel, logs, fatal, stop };
}

/** The message texts an onMessage collected, and the handler itself. */
function collector() {
  const received: InboundMessage[] = [];
  const onMessage = async (message: InboundMessage) => {
    received.push(message);
  };
  return { received, onMessage, texts: () => received.map((message) => message.text) };
}

function logged(logs: readonly string[], text: string): Record<string, unknown>[] {
  return logs
    .filter((line) => line.includes(text))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("Discord: catching up after a restart", () => {
  it("hands over what was sent while the channel was stopped, oldest first, and nothing before the cursor", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const thread = fake.guild.threads[0]!.id;
    const first = collector();
    const before = await startChannel(fake, first.onMessage);
    const seenGuild = fake.sendGuildMessage(general, { content: "seen before", mentionBot: true });
    const seenDm = fake.sendDirectMessage({ content: "dm seen before" });
    const seenThread = fake.sendThreadMessage(thread, {
      content: "thread before",
      mentionBot: true,
    });
    await waitFor(() => expect(first.received).toHaveLength(3));
    await before.channel.sendText({ platform: "discord", chatId: general }, "an answer");
    await before.stop();

    fake.sendGuildMessage(general, { content: "missed one", mentionBot: true });
    fake.sendGuildMessage(general, { content: "chatter without a mention" });
    fake.sendGuildMessage(general, {
      content: "from a bot",
      mentionBot: true,
      authorIsBot: true,
      authorId: "300000000000000042",
    });
    fake.sendGuildMessage(general, { content: "missed two", mentionBot: true });
    fake.sendDirectMessage({ content: "missed dm" });
    fake.sendThreadMessage(thread, { content: "missed in thread", mentionBot: true });

    const second = collector();
    const after = await startChannel(fake, second.onMessage);
    expect(second.received).toEqual([]); // not delivered live: the gateway session was new
    const cursors: ChatCursor[] = [
      { channelId: general, lastMessageId: seenGuild.id },
      { channelId: seenDm.channelId, lastMessageId: seenDm.id },
      { channelId: thread, lastMessageId: seenThread.id },
      { channelId: "999999999999999999", lastMessageId: seenGuild.id },
    ];
    await after.channel.catchUp(cursors, second.onMessage);

    expect(second.received.map((m) => [m.chatType, m.chatId, m.threadId, m.text])).toEqual([
      ["group", general, undefined, "missed one"],
      ["group", general, undefined, "missed two"],
      ["dm", seenDm.channelId, undefined, "missed dm"],
      ["group", general, thread, "missed in thread"],
    ]);
    expect(second.received[0]).toMatchObject({ userId: HumanId, profile: "durable" });
    expect(second.received.every((m) => m.receiptId === m.messageId)).toBe(true);
    const pages = fake.calls.filter(
      (call) => call.method === "GET" && call.route === "/channels/:id/messages",
    );
    expect(pages.map((call) => call.status)).toEqual([200, 200, 200]);
    expect(logged(after.logs, "no longer exists")).toHaveLength(1);
    expect(after.logs.join("\n")).not.toContain(Token);
  });

  it("pages through more than 100 missed messages and stops at catchUpMaxMessages, saying so", async () => {
    const fake = await startFake();
    const room = fake.guild.channels[1]!.id;
    const first = collector();
    const before = await startChannel(fake, first.onMessage, { respondIn: { channelIds: [room] } });
    const cursor = fake.sendGuildMessage(room, { content: "cursor" });
    await waitFor(() => expect(first.texts()).toEqual(["cursor"]));
    await before.stop();
    for (let index = 0; index < 160; index++) {
      fake.sendGuildMessage(room, { content: `missed ${index}` });
    }

    const second = collector();
    const after = await startChannel(fake, second.onMessage, {
      respondIn: { channelIds: [room] },
      catchUpMaxMessages: 150,
    });
    await after.channel.catchUp([{ channelId: room, lastMessageId: cursor.id }], second.onMessage);

    expect(second.texts()).toEqual(Array.from({ length: 150 }, (_, index) => `missed ${index}`));
    const [truncated] = logged(after.logs, "stopped at catchUpMaxMessages");
    expect(truncated).toMatchObject({ channelId: room, fetched: 150, maxMessages: 150 });
  });

  it("keeps live messages that arrive during the catch-up, behind the missed ones", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const first = collector();
    const before = await startChannel(fake, first.onMessage);
    const cursor = fake.sendGuildMessage(general, { content: "cursor", mentionBot: true });
    await waitFor(() => expect(first.received).toHaveLength(1));
    await before.stop();
    fake.sendGuildMessage(general, { content: "missed one", mentionBot: true });
    fake.sendGuildMessage(general, { content: "missed two", mentionBot: true });

    const second = collector();
    const after = await startChannel(fake, second.onMessage);
    const gate = fake.gateRequests("GET", /^\/channels\/\d+\/messages$/);
    const catching = after.channel.catchUp(
      [{ channelId: general, lastMessageId: cursor.id }],
      second.onMessage,
    );
    await gate.reached;
    fake.sendGuildMessage(general, { content: "live during catch-up", mentionBot: true });
    await waitFor(() => expect(logged(after.logs, '"msg":"message in"')).toHaveLength(1));
    expect(second.received).toEqual([]);
    gate.open();
    await catching;

    // The live message is also in the fetched page: handed over once, after the missed ones.
    expect(second.texts()).toEqual(["missed one", "missed two", "live during catch-up"]);
  });

  it("skips a chat the bot can no longer read and still catches up the others", async () => {
    const fake = await startFake();
    const [general, room] = fake.guild.channels;
    const first = collector();
    const before = await startChannel(fake, first.onMessage);
    const a = fake.sendGuildMessage(general!.id, { content: "a", mentionBot: true });
    const b = fake.sendGuildMessage(room!.id, { content: "b", mentionBot: true });
    await waitFor(() => expect(first.received).toHaveLength(2));
    await before.stop();
    fake.sendGuildMessage(general!.id, { content: "unreadable now", mentionBot: true });
    fake.sendGuildMessage(room!.id, { content: "readable", mentionBot: true });
    fake.denyAccess(general!.id);

    const second = collector();
    const after = await startChannel(fake, second.onMessage);
    await after.channel.catchUp(
      [
        { channelId: general!.id, lastMessageId: a.id },
        { channelId: room!.id, lastMessageId: b.id },
      ],
      second.onMessage,
    );
    expect(second.texts()).toEqual(["readable"]);
    expect(logged(after.logs, "cannot read")).toHaveLength(1);
  });
});

describe("Discord: a message handler that rejects", () => {
  it("offers the message again after a backoff, keeps the chat's order, and logs one error", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const { sleep, waits } = manualSleep();
    const accepted: string[] = [];
    let attempts = 0;
    let journalWritable = false;
    const onMessage = async (message: InboundMessage) => {
      if (message.text === "first") attempts += 1;
      if (!journalWritable && message.chatType === "group") throw new Error("SQLITE_FULL");
      accepted.push(message.text);
    };
    const h = await startChannel(fake, onMessage, {
      sleep,
      inboundRetry: { minDelayMs: 100, maxDelayMs: 250 },
    });
    fake.sendGuildMessage(general, { content: "first", mentionBot: true });
    fake.sendGuildMessage(general, { content: "second", mentionBot: true });
    fake.sendDirectMessage({ content: "other chat" });
    await waitFor(() => expect(waits).toHaveLength(1));
    await waitFor(() => expect(accepted).toEqual(["other chat"]));
    for (let index = 1; index < 4; index++) {
      waits[index - 1]!.wake();
      await waitFor(() => expect(waits).toHaveLength(index + 1));
    }
    expect(accepted).toEqual(["other chat"]); // "second" waits behind "first"
    journalWritable = true;
    waits[3]!.wake();
    await waitFor(() => expect(accepted).toEqual(["other chat", "first", "second"]));

    expect(attempts).toBe(5);
    expect(waits.map((wait) => wait.ms)).toEqual([100, 200, 250, 250]);
    const errors = logged(h.logs, "could not be recorded");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 50, chatId: general });
  });

  it("gives up at stop, and the next start's catch-up finds the message", async () => {
    const fake = await startFake();
    const dm = fake.world.dmChannel(HumanId);
    const { sleep, waits } = manualSleep();
    const first = collector();
    const before = await startChannel(fake, first.onMessage);
    const cursor = fake.sendDirectMessage({ content: "recorded" });
    await waitFor(() => expect(first.texts()).toEqual(["recorded"]));
    await before.stop();

    const failing = await startChannel(fake, () => Promise.reject(new Error("disk full")), {
      sleep,
    });
    fake.sendDirectMessage({ content: "never recorded" });
    await waitFor(() => expect(waits).toHaveLength(1));
    await failing.stop();
    expect(logged(failing.logs, "not recorded at stop")[0]).toMatchObject({ messages: 1 });

    const third = collector();
    const after = await startChannel(fake, third.onMessage);
    await after.channel.catchUp([{ channelId: dm, lastMessageId: cursor.id }], third.onMessage);
    expect(third.texts()).toEqual(["never recorded"]);
  });
});

/** Records the steps of one reply the way the outbox would. */
function progressFor(replyId: string, done: Map<string, StepResult> = new Map()) {
  const steps: [string, StepResult][] = [];
  const progress: DeliveryProgress = {
    replyId,
    done,
    async step(key, result) {
      steps.push([key, result]);
    },
    async clear() {},
  };
  return { progress, steps };
}

async function planner() {
  const root = await mkdtemp(path.join(tmpdir(), "mediagate-discord-durable-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const slotDir = path.join(root, "slot");
  await mkdir(path.join(slotDir, "workspace", "out"), { recursive: true });
  return async (text: string, files: Record<string, Buffer>): Promise<MediaPlan> => {
    const tags: string[] = [];
    for (const [name, bytes] of Object.entries(files)) {
      await writeFile(path.join(slotDir, "workspace", "out", name), bytes);
      tags.push(`MEDIA:/workspace/out/${name}`);
    }
    const plan = await planMedia(
      [text, ...tags].join("\n"),
      {
        backend: "docker",
        slotDirs: [slotDir],
        volumes: [],
        allowDirs: [],
        protectedHomes: [],
        tmpDir: root,
      },
      { maxBytes: () => 10 * 1024 * 1024 },
    );
    cleanups.push(() => plan.dispose());
    return plan;
  };
}

function replyOf(target: ChatTarget, plan: MediaPlan) {
  return {
    sessionKey: "agent:durable:discord:test",
    profile: "durable",
    target,
    text: plan.text,
    plan,
  };
}

const noMessages = async () => {};

describe("Discord: sending a reply once", () => {
  it("a restarted process delivering the same reply with nothing done posts nothing twice", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const target = {
      platform: "discord",
      chatId: general,
      replyToMessageId: "123456789012345678",
    } as const;
    const plan = await planner();
    const text = `${"long reply ".repeat(250)}`;
    const files = { "a.bin": randomBytes(2048), "b.bin": randomBytes(2048) };

    const first = await startChannel(fake, noMessages);
    const run1 = progressFor("reply-7f3a");
    const report1 = await first.channel.deliver(replyOf(target, await plan(text, files)), {
      progress: run1.progress,
    });
    expect(report1.outcomes.map((outcome) => outcome.status)).toEqual(["delivered", "delivered"]);
    expect(run1.steps).toEqual([
      ["text:0", "sent"],
      ["text:1", "sent"],
      ["media:/workspace/out/a.bin", "sent"],
      ["media:/workspace/out/b.bin", "sent"],
    ]);
    await first.stop();
    const posted = fake.messagesIn(general).map((message) => message.id);
    expect(posted).toHaveLength(3);

    // The steps were sent but the records were lost: the next process starts from scratch.
    const second = await startChannel(fake, noMessages);
    const run2 = progressFor("reply-7f3a");
    const report2 = await second.channel.deliver(replyOf(target, await plan(text, files)), {
      progress: run2.progress,
    });
    expect(report2.outcomes.map((outcome) => outcome.status)).toEqual(["delivered", "delivered"]);
    expect(fake.messagesIn(general).map((message) => message.id)).toEqual(posted);
    const creates = fake.messageCreates(general);
    expect(creates.map((call) => call.deduplicated)).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
    ]);
    expect(creates.slice(3).map((call) => call.nonce)).toEqual(
      creates.slice(0, 3).map((call) => call.nonce),
    );
    expect(creates.every((call) => call.enforceNonce && String(call.nonce).length <= 25)).toBe(
      true,
    );
  });

  it("skips the steps progress lists as done and records the others", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const target = {
      platform: "discord",
      chatId: general,
      replyToMessageId: "123456789012345678",
    } as const;
    const plan = await planner();
    const h = await startChannel(fake, noMessages);
    const done = new Map<string, StepResult>([
      ["text:0", "sent"],
      ["media:/workspace/out/a.bin", "sent"],
    ]);
    const run = progressFor("reply-skip", done);
    const b = randomBytes(512);
    const report = await h.channel.deliver(
      replyOf(
        target,
        await plan(`${"x".repeat(1990)}\n${"tail ".repeat(4)}of the text`, {
          "a.bin": randomBytes(8),
          "b.bin": b,
        }),
      ),
      { progress: run.progress },
    );
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual(["delivered", "delivered"]);
    expect(run.steps).toEqual([
      ["text:1", "sent"],
      ["media:/workspace/out/b.bin", "sent"],
    ]);
    const messages = fake.messagesIn(general);
    expect(
      messages.map((message) => [message.content, message.files.map((file) => file.filename)]),
    ).toEqual([
      [expect.stringMatching(/^(tail )+of the text$/), []],
      ["", ["b.bin"]],
    ]);
    expect(messages.every((message) => message.replyTo === undefined)).toBe(true);
    expect(messages[1]?.files[0]?.bytes.equals(b)).toBe(true);
  });

  it("stops at a rate limit longer than the cap, leaving the undone steps for later", async () => {
    const fake = await startFake();
    const general = fake.guild.channels[0]!.id;
    const target = { platform: "discord", chatId: general } as const;
    const plan = await planner();
    const h = await startChannel(fake, noMessages);
    const files = { "a.bin": randomBytes(64), "b.bin": randomBytes(64) };
    fake.injectFailure({ kind: "rate_limit", retryAfterSeconds: 120 });
    const run = progressFor("reply-429");
    const report = await h.channel.deliver(replyOf(target, await plan("text first", files)), {
      progress: run.progress,
    });
    expect(report.retryAfterSeconds).toBeGreaterThanOrEqual(120);
    expect(report.textPending).toBe(true);
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual([
      "rate_limited",
      "rate_limited",
    ]);
    expect(run.steps).toEqual([]);
    expect(fake.messageCreates(general)).toHaveLength(1);

    const resumed = progressFor("reply-429", new Map(run.steps));
    const again = await h.channel.deliver(replyOf(target, await plan("text first", files)), {
      progress: resumed.progress,
    });
    expect(again.retryAfterSeconds).toBeUndefined();
    expect(again.textPending).toBeUndefined();
    expect(resumed.steps.map(([key]) => key)).toEqual([
      "text:0",
      "media:/workspace/out/a.bin",
      "media:/workspace/out/b.bin",
    ]);
    expect(fake.messagesIn(general)).toHaveLength(2);
  });

  it("stops before the next step once the signal aborts; the files stay pending", async () => {
    const fake = await startFake();
    const dm = fake.world.dmChannel(HumanId);
    const target = { platform: "discord", chatId: dm } as const;
    const plan = await planner();
    const h = await startChannel(fake, noMessages);
    const controller = new AbortController();
    const steps: string[] = [];
    const progress: DeliveryProgress = {
      replyId: "reply-abort",
      done: new Map(),
      async step(key) {
        steps.push(key);
        controller.abort(new Error("shutting down"));
      },
      async clear() {},
    };
    const report = await h.channel.deliver(
      replyOf(target, await plan(`${"y".repeat(2500)}`, { "a.bin": randomBytes(16) })),
      { progress, signal: controller.signal },
    );
    expect(steps).toEqual(["text:0"]);
    expect(report.textPending).toBe(true);
    expect(report.outcomes).toEqual([{ status: "pending", path: "/workspace/out/a.bin" }]);
    expect(fake.messageCreates(dm)).toHaveLength(1);

    await expect(h.channel.sendText(target, "late", controller.signal)).rejects.toThrow(
      "shutting down",
    );
    await h.channel.showActivity(target, controller.signal);
    expect(fake.messageCreates(dm)).toHaveLength(1);
    expect(fake.calls.filter((call) => call.path.endsWith("/typing"))).toHaveLength(0);
  });
});

describe("Discord: channel health", () => {
  it("is up with heartbeats, retrying while the websocket is down, and up again after the resume", async () => {
    const fake = await startFake({ heartbeatIntervalMs: 100 });
    const h = await startChannel(fake, noMessages);
    expect(h.channel.health()).toMatchObject({
      platform: "discord",
      profile: "durable",
      state: "up",
    });
    const heartbeatAt = await new Promise<number>((resolve) =>
      fake.gateway.once("op", function onOp(this: unknown, payload: { op: number }) {
        if (payload.op === 1) resolve(Date.now());
        else fake.gateway.once("op", onOp);
      }),
    );
    await waitFor(() => expect(h.channel.health().lastOkMs).toBeGreaterThanOrEqual(heartbeatAt));

    fake.dropSocket({ holdReconnect: true });
    await waitFor(() => expect(h.channel.health().state).toBe("retrying"));
    const down = h.channel.health();
    expect(down.detail).toMatch(/reconnecting/);
    fake.releaseGateway();
    await waitFor(() => expect(h.channel.health().state).toBe("up"));
    const up = h.channel.health();
    expect(up.sinceMs).toBeGreaterThanOrEqual(down.sinceMs);
    expect(up.detail).toBeUndefined();
    expect(fake.gateway.resumeCount).toBe(1);
    expect(h.fatal).toEqual([]);
    await h.stop();
    expect(h.channel.health().state).toBe("stopped");
  });

  it("fails and calls onFatal once when the token is revoked after start", async () => {
    const fake = await startFake();
    const h = await startChannel(fake, noMessages);
    fake.revokeToken();
    await waitFor(() => expect(h.fatal).toHaveLength(1));
    expect(h.fatal[0]).toMatchObject({
      name: "DiscordRequestError",
      code: "MG_DISCORD_GATEWAY_CLOSED",
      discordCode: 4004,
    });
    expect(h.channel.health()).toMatchObject({
      state: "failed",
      detail: expect.stringMatching(/token/),
    });
    await expect(
      h.channel.sendText({ platform: "discord", chatId: fake.guild.channels[0]!.id }, "hello?"),
    ).rejects.toMatchObject({ status: 401 });
    expect(h.fatal).toHaveLength(1);
    expect(h.logs.join("\n")).not.toContain(Token);
  });
});
