import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type ChannelStartOptions,
  type ChatTarget,
  createLogger,
  DiscordChannel,
  type DiscordChannelOptions,
  type InboundMessage,
} from "@mediagate/gateway";
import { type MediaPlan, planMedia, type UploadLimits } from "@mediagate/media";
import { afterEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { waitUntil } from "../../test-support/wait.js";
import { defaultGuild, FakeDiscord, type FakeDiscordOptions } from "../fakes/discord/index.js";

const MiB = 1024 * 1024;
const Token = "discord-e2e-token-Zq8s1Xk2";

interface Harness {
  readonly fake: FakeDiscord;
  readonly channel: DiscordChannel;
  readonly inbound: InboundMessage[];
  readonly logs: string[];
  /** The waits the retry policy asked for (ms); none is waited on the clock. */
  readonly retryWaits: number[];
  /** Waits until `count` inbound messages have arrived. */
  received(count: number): Promise<InboundMessage[]>;
  /** Writes files into the slot's workspace and plans a reply tagging them. */
  plan(text: string, files: Record<string, Buffer>, limits?: UploadLimits): Promise<MediaPlan>;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startHarness(
  fakeOptions: FakeDiscordOptions = {},
  adapterOptions:
    | Partial<DiscordChannelOptions>
    | ((fake: FakeDiscord) => Partial<DiscordChannelOptions>) = {},
  onChoice?: ChannelStartOptions["onChoice"],
): Promise<Harness> {
  const fake = await FakeDiscord.start({ token: Token, ...fakeOptions });
  const extra = typeof adapterOptions === "function" ? adapterOptions(fake) : adapterOptions;
  cleanups.push(() => fake.close());
  const root = await mkdtemp(path.join(tmpdir(), "mediagate-discord-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const slotDir = path.join(root, "slot");
  await mkdir(path.join(slotDir, "workspace", "out"), { recursive: true });
  const logs: string[] = [];
  const logger = createLogger({
    level: "debug",
    destination: { write: (line) => logs.push(line) },
  });
  const retryWaits: number[] = [];
  const channel = new DiscordChannel({
    token: Token,
    apiRoot: fake.apiRoot,
    profile: "e2e",
    logger,
    retry: {
      minDelayMs: 20,
      maxDelayMs: 100,
      sleep: async (ms) => {
        retryWaits.push(ms);
      },
    },
    ...extra,
  });
  const inbound: InboundMessage[] = [];
  const waiters: (() => void)[] = [];
  await channel.start({
    onMessage: async (message) => {
      inbound.push(message);
      for (const wake of waiters.splice(0)) wake();
    },
    onFatal: () => {},
    ...(onChoice === undefined ? {} : { onChoice }),
  });
  cleanups.push(() => channel.stop());
  return {
    fake,
    channel,
    inbound,
    logs,
    retryWaits,
    async received(count) {
      while (inbound.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return inbound;
    },
    async plan(text, files, limits = channel.limits) {
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
        limits,
      );
      cleanups.push(() => plan.dispose());
      return plan;
    },
  };
}

function reply(target: ChatTarget, plan: MediaPlan) {
  return { sessionKey: "agent:e2e:discord:test", profile: "e2e", target, text: plan.text, plan };
}

function targets(fake: FakeDiscord) {
  const general = fake.guild.channels[0]!.id;
  const thread = fake.guild.threads[0]!.id;
  const dmChannel = fake.world.dmChannel("300000000000000099");
  return {
    guild: { platform: "discord", chatId: general } as const,
    thread: { platform: "discord", chatId: general, threadId: thread } as const,
    dm: { platform: "discord", chatId: dmChannel } as const,
  };
}

describe("Discord adapter: inbound", () => {
  it("maps guild, thread and DM messages and answers guild channels only when mentioned or configured", async () => {
    const botRoom = defaultGuild();
    const h = await startHarness(
      { guilds: [botRoom] },
      { respondIn: { channelIds: [botRoom.channels[1]!.id] } },
    );
    const { fake } = h;
    const [general, configured] = fake.guild.channels;
    const [thread] = fake.guild.threads;
    const bot = fake.botUser.id;

    fake.sendGuildMessage(general!.id, { content: "chatter, no mention" });
    fake.sendGuildMessage(general!.id, { content: "/status", mentionBot: true, authorName: "ann" });
    fake.sendGuildMessage(configured!.id, { content: "no mention needed here" });
    fake.sendThreadMessage(thread!.id, { content: "thread chatter" });
    fake.sendThreadMessage(thread!.id, { content: "help me", mentionBot: true });
    fake.sendGuildMessage(general!.id, { content: "beep", mentionBot: true, authorIsBot: true });
    fake.sendDirectMessage({ content: "/reset", authorId: "300000000000000077" });

    const got = await h.received(4);
    expect(
      got.map((message) => [message.chatType, message.chatId, message.threadId, message.text]),
    ).toEqual([
      ["group", general!.id, undefined, "/status"],
      ["group", configured!.id, undefined, "no mention needed here"],
      ["group", general!.id, thread!.id, "help me"],
      ["dm", fake.world.dmChannel("300000000000000077"), undefined, "/reset"],
    ]);
    expect(got[0]).toMatchObject({ platform: "discord", profile: "e2e", userName: "ann" });
    expect(got[3]?.userId).toBe("300000000000000077");
    expect(got.every((message) => !message.text.includes(`<@${bot}>`))).toBe(true);
  });

  it("answers a mention of the bot's own role, which Discord offers for @ and the bot's name", async () => {
    const h = await startHarness();
    const { fake } = h;
    const [general] = fake.guild.channels;
    const [thread] = fake.guild.threads;
    fake.sendGuildMessage(general!.id, { content: "what is in /workspace?", mentionBotRole: true });
    fake.sendThreadMessage(thread!.id, { content: "and here?", mentionBotRole: true });
    const got = await h.received(2);
    expect(got.map((message) => [message.chatId, message.threadId, message.text])).toEqual([
      [general!.id, undefined, "what is in /workspace?"],
      [general!.id, thread!.id, "and here?"],
    ]);
  });

  it("keeps answering in a thread it replied in, and ignores its own echoed messages", async () => {
    const h = await startHarness();
    const { fake, channel } = h;
    const { thread } = targets(fake);
    fake.sendThreadMessage(thread.threadId, { content: "start", mentionBot: true });
    await h.received(1);
    await channel.sendText(thread, "on it");
    fake.sendThreadMessage(thread.threadId, { content: "and a follow-up" });
    const got = await h.received(2);
    expect(got.map((message) => message.text)).toEqual(["start", "and a follow-up"]);
    expect(got[1]?.threadId).toBe(thread.threadId);
    expect(fake.messagesIn(thread.threadId).map((message) => message.content)).toEqual(["on it"]);
  });

  it("keys a thread created after start under its parent channel", async () => {
    const h = await startHarness();
    const parent = h.fake.guild.channels[1]!.id;
    const created = h.fake.createThread(parent, "late-thread");
    h.fake.sendThreadMessage(created.id, { content: "new thread", mentionBot: true });
    const [message] = await h.received(1);
    expect(message).toMatchObject({ chatType: "group", chatId: parent, threadId: created.id });
    expect(message?.chatName).toBe("late-thread");
  });

  it("fails start with a typed error on a wrong token, and logs no token", async () => {
    const fake = await FakeDiscord.start({ token: Token });
    cleanups.push(() => fake.close());
    const logs: string[] = [];
    const channel = new DiscordChannel({
      token: "wrong-token-Hq9x",
      apiRoot: fake.apiRoot,
      profile: "e2e",
      logger: createLogger({ level: "debug", destination: { write: (line) => logs.push(line) } }),
    });
    const failure = channel.start({ onMessage: async () => {}, onFatal: () => {} });
    await expect(failure).rejects.toMatchObject({ name: "DiscordRequestError", status: 401 });
    await expect(failure).rejects.not.toThrow(/wrong-token/);
    expect(logs.join("\n")).toContain("discord login failed");
    expect(logs.join("\n")).not.toContain("wrong-token-Hq9x");
  });

  it("fails start saying to enable the Message Content intent when Discord closes with 4014", async () => {
    const fake = await FakeDiscord.start({ token: Token, messageContentEnabled: false });
    cleanups.push(() => fake.close());
    const channel = new DiscordChannel({
      token: Token,
      apiRoot: fake.apiRoot,
      profile: "e2e",
      logger: createLogger({ level: "silent" }),
      commands: { register: false },
    });
    const failure = channel.start({ onMessage: async () => {}, onFatal: () => {} });
    await expect(failure).rejects.toMatchObject({
      name: "DiscordRequestError",
      code: "MG_DISCORD_GATEWAY_CLOSED",
      discordCode: 4014,
    });
    await expect(failure).rejects.toThrow(/enable the Message Content intent/);
    expect(channel.health()).toMatchObject({
      state: "failed",
      detail: expect.stringMatching(/enable the Message Content intent/),
    });
  });

  it("resumes after the websocket drops and still receives the next message", async () => {
    const h = await startHarness();
    const { fake } = h;
    const resumed = once(fake.gateway, "resume");
    fake.dropSocket();
    await resumed;
    fake.sendDirectMessage({ content: "still there?" });
    const [message] = await h.received(1);
    expect(message?.text).toBe("still there?");
    expect(fake.gateway.identifyCount).toBe(1);
    expect(fake.gateway.resumeCount).toBe(1);
  });

  it("connects through gatewayUrl when /gateway/bot advertises another address", async () => {
    const h = await startHarness({ advertisedGatewayUrl: "ws://127.0.0.1:9/not-here" }, (fake) => ({
      gatewayUrl: fake.gatewayUrl,
    }));
    const gatewayBot = h.fake.calls.find((call) => call.path === "/gateway/bot");
    expect(gatewayBot?.status).toBe(200);
    h.fake.sendDirectMessage({ content: "via override" });
    const [message] = await h.received(1);
    expect(message?.text).toBe("via override");
    expect(h.fake.gateway.identifyCount).toBe(1);
  });
});

describe("Discord adapter: delivery", () => {
  it("delivers a file byte-for-byte as an attachment in a guild channel, a thread and a DM", async () => {
    const h = await startHarness();
    const all = targets(h.fake);
    for (const [name, target] of Object.entries(all)) {
      const bytes = randomBytes(300_000);
      const plan = await h.plan(`here is ${name}`, { [`${name}.bin`]: bytes });
      const report = await h.channel.deliver(
        reply({ ...target, replyToMessageId: "123456789012345678" }, plan),
      );
      expect(report.outcomes).toEqual([
        { status: "delivered", path: `/workspace/out/${name}.bin`, kind: "document" },
      ]);
      const channelId = "threadId" in target ? target.threadId : target.chatId;
      const [text, attachment] = h.fake.messagesIn(channelId);
      expect(text?.content).toBe(`here is ${name}`);
      expect(text?.replyTo).toBe("123456789012345678");
      expect(attachment?.files.map((file) => file.filename)).toEqual([`${name}.bin`]);
      expect(attachment?.files[0]?.bytes.equals(bytes)).toBe(true);
    }
    const creates = h.fake.messageCreates();
    expect(creates.every((call) => call.enforceNonce && typeof call.nonce === "string")).toBe(true);
    expect(creates[0]?.payload).toMatchObject({ allowed_mentions: { parse: [] } });
  });

  it("lets no mention in a pressed question's new text ping: not @everyone, a role or a user", async () => {
    // The decided text carries the presser's display name and the agent's command line.
    const text =
      "✅ Allowed once by @everyone:\n$ echo @here <@&400000000000000001> <@300000000000000005>";
    const h = await startHarness({}, {}, async () => ({ kind: "decided", text }));
    const { guild } = targets(h.fake);
    const asked = await h.channel.choices.post(
      guild,
      "🔐 Approval needed: the agent wants to\n$ echo @everyone",
      [[{ label: "Allow once", data: "ap:0123:once" }]],
      new AbortController().signal,
    );
    const shown = () => h.fake.messagesIn(guild.chatId).find((message) => message.id === asked);
    const noMention = { mention_everyone: false, mention_roles: [], mentions: [] };
    expect(shown()?.json).toMatchObject(noMention);

    const press = h.fake.pressButton({
      channelId: guild.chatId,
      messageId: asked,
      button: "Allow once",
    });
    await waitUntil(() => press.callback !== undefined, "the press answered");
    expect(press.callback?.type).toBe(7);
    expect(shown()?.content).toContain("@everyone");
    expect(shown()?.json).toMatchObject(noMention);
  });

  it("closes a pressed question by editing it when the press is answered after Discord's 3 s", async () => {
    const clock = manualClock();
    const text = "✅ Allowed once by ada:\n$ make";
    const h = await startHarness({ interactionClock: clock.now }, {}, async () => {
      clock.advance(3_001); // the decision took longer than the interaction lives
      return { kind: "decided", text };
    });
    const { guild } = targets(h.fake);
    const asked = await h.channel.choices.post(
      guild,
      "🔐 Approval needed: the agent wants to\n$ make",
      [[{ label: "Allow once", data: "ap:0123:once" }]],
      new AbortController().signal,
    );
    const shown = () => h.fake.messagesIn(guild.chatId).find((message) => message.id === asked);
    const press = h.fake.pressButton({
      channelId: guild.chatId,
      messageId: asked,
      button: "Allow once",
    });
    // The edit, not the log line before it: under load the PATCH was still on its way.
    await waitUntil(() => shown()?.content === text, "the late press closed by an edit");
    expect(h.logs.some((line) => line.includes("not answered through its interaction"))).toBe(true);
    expect(press.callback).toBeUndefined(); // Discord refused the late answer
    expect(shown()?.json.components).toEqual([]);
    expect(shown()?.json).toMatchObject({ mention_everyone: false, mentions: [] });
  });

  it("posts a slash command's answer in the chat once its interaction token expired (15 minutes)", async () => {
    const clock = manualClock();
    const h = await startHarness({ interactionClock: clock.now });
    await h.channel.registering;
    const { guild } = targets(h.fake);
    const command = h.fake.sendSlashCommand({ name: "status", channelId: guild.chatId });
    const [slash] = await h.received(1);
    expect(command.callback).toMatchObject({ type: 5 }); // deferred, "thinking…"
    clock.advance(15 * 60_000 + 1); // the command took longer than its token lives
    const target = { ...guild, replyToMessageId: slash!.messageId };
    expect(h.channel.answersInPlace(target)).toBe(true);
    await h.channel.sendText(target, "🟢 status, late");
    expect(h.fake.messagesIn(guild.chatId).map((message) => message.content)).toEqual([
      "🟢 status, late",
    ]);
    expect(h.channel.answersInPlace(target)).toBe(false);
    await h.channel.settled(slash!); // nothing more to say: no "not allowed" edit attempted
    expect(command.original?.content ?? "").toBe("");
  });

  it("sends twelve files as two messages of ten and two, in order", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    const files = Object.fromEntries(
      Array.from({ length: 12 }, (_, index) => [
        `f${String(index).padStart(2, "0")}.txt`,
        randomBytes(64),
      ]),
    );
    const plan = await h.plan("", files);
    const report = await h.channel.deliver(reply(guild, plan));
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual(Array(12).fill("delivered"));
    const messages = h.fake.messagesIn(guild.chatId);
    expect(messages.map((message) => message.files.length)).toEqual([10, 2]);
    const sent = messages.flatMap((message) => message.files);
    expect(sent.map((file) => file.filename)).toEqual(Object.keys(files));
    expect(sent.every((file) => file.bytes.equals(files[file.filename]!))).toBe(true);
  });

  it("splits text over 2000 characters with code fences balanced and no surrogate pair cut", async () => {
    const h = await startHarness();
    const { dm } = targets(h.fake);
    const code = Array.from(
      { length: 120 },
      (_, index) => `const line${index} = ${index}; // 😀`,
    ).join("\n");
    const text = `${"intro ".repeat(200)}\n\`\`\`ts\n${code}\n\`\`\`\n${"😀".repeat(1500)}`;
    await h.channel.sendText(dm, text);
    const contents = h.fake.messagesIn(dm.chatId).map((message) => message.content);
    expect(contents.length).toBeGreaterThan(2);
    for (const content of contents) {
      expect(content.length).toBeLessThanOrEqual(2000);
      expect((content.match(/^```/gm) ?? []).length % 2).toBe(0);
      expect(
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(content),
      ).toBe(false);
    }
    const joined = contents.join("\n");
    for (let index = 0; index < 120; index++)
      expect(joined).toContain(`const line${index} = ${index};`);
    expect(joined.split("😀").length - 1).toBe(1500 + 120);
  });

  it("retries a create answered 5xx after it was processed with the same nonce and posts once", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    const bytes = randomBytes(4096);
    const plan = await h.plan("", { "once.bin": bytes });
    h.fake.injectFailure({ kind: "server_error_after_processing", status: 500 });
    const report = await h.channel.deliver(reply(guild, plan));
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual(["delivered"]);
    const creates = h.fake.messageCreates(guild.chatId);
    expect(creates.map((call) => [call.status, call.deduplicated])).toEqual([
      [500, false],
      [200, true],
    ]);
    expect(creates[1]?.nonce).toBe(creates[0]?.nonce);
    const messages = h.fake.messagesIn(guild.chatId);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.files[0]?.bytes.equals(bytes)).toBe(true);
  });

  it("retries a create whose connection dropped after it was processed, and posts once", async () => {
    const h = await startHarness();
    const { thread } = targets(h.fake);
    h.fake.injectFailure({ kind: "connection_drop_after_processing" });
    await h.channel.sendText(thread, "exactly one copy");
    const creates = h.fake.messageCreates(thread.threadId);
    expect(creates.map((call) => [call.status, call.deduplicated])).toEqual([
      [0, false],
      [200, true],
    ]);
    expect(h.fake.messagesIn(thread.threadId).map((message) => message.content)).toEqual([
      "exactly one copy",
    ]);
  });

  it("posts a status (a streamed preview) answered 5xx after it was processed once more with the same nonce: one message, its id known", async () => {
    const h = await startHarness();
    const { dm } = targets(h.fake);
    for (const kind of [
      "server_error_after_processing",
      "connection_drop_after_processing",
    ] as const) {
      h.fake.injectFailure({ kind, status: 502 });
      const text = `the text so far (${kind})`;
      const id = await h.channel.status.post(dm, text, AbortSignal.timeout(5000), {
        verbatim: true,
      });
      // The preview deletes the message by this id at the end: none is left behind.
      expect(
        h.fake
          .messagesIn(dm.chatId)
          .filter((m) => m.content === text)
          .map((m) => m.id),
      ).toEqual([id]);
      await h.channel.status.remove(dm, id, AbortSignal.timeout(5000));
    }
    const creates = h.fake.messageCreates(dm.chatId);
    expect(creates.map((call) => [call.status, call.deduplicated])).toEqual([
      [502, false],
      [200, true],
      [0, false],
      [200, true],
    ]);
    expect(h.fake.messagesIn(dm.chatId)).toEqual([]);
  });

  it("resends a refused message file by file, so one bad file spares the others", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    const plan = await h.plan("", {
      "a.bin": randomBytes(8),
      "b.bin": randomBytes(8),
      "c.bin": randomBytes(8),
    });
    h.fake.injectFailure({ kind: "client_error", times: 2 });
    const report = await h.channel.deliver(reply(guild, plan));
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual([
      "upload_failed",
      "delivered",
      "delivered",
    ]);
    expect(
      h.fake.messageCreates(guild.chatId).map((call) => [call.status, call.files.length]),
    ).toEqual([
      [400, 3],
      [400, 1],
      [200, 1],
      [200, 1],
    ]);
    expect(
      h.fake
        .messagesIn(guild.chatId)
        .flatMap((message) => message.files.map((file) => file.filename)),
    ).toEqual(["b.bin", "c.bin"]);
  });

  it("still delivers the files when Discord refuses the reply text", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    const bytes = randomBytes(256);
    const plan = await h.plan("text Discord will refuse", { "kept.bin": bytes });
    h.fake.injectFailure({ kind: "client_error" });
    const report = await h.channel.deliver(reply(guild, plan));
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual(["delivered"]);
    const messages = h.fake.messagesIn(guild.chatId);
    expect(messages.map((message) => [message.content, message.files.length])).toEqual([["", 1]]);
    expect(messages[0]?.files[0]?.bytes.equals(bytes)).toBe(true);
    expect(h.logs.some((line) => line.includes("reply text not delivered"))).toBe(true);
  });

  it("honours a 429's retry-after and posts once", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    h.fake.injectFailure({ kind: "rate_limit", retryAfterSeconds: 0.4, times: 2 });
    await h.channel.sendText(guild, "after the rate limit");
    const creates = h.fake.messageCreates(guild.chatId);
    expect(creates.map((call) => call.status)).toEqual([429, 429, 200]);
    expect(new Set(creates.map((call) => call.nonce)).size).toBe(1);
    expect(h.fake.messagesIn(guild.chatId).map((message) => message.content)).toEqual([
      "after the rate limit",
    ]);
    const retries = h.logs.filter((line) => line.includes("retrying with the same nonce"));
    expect(retries).toHaveLength(2);
    for (const line of retries)
      expect(JSON.parse(line).retryAfterSeconds).toBeGreaterThanOrEqual(0.4);
    expect(h.retryWaits).toHaveLength(2);
    for (const waitMs of h.retryWaits) expect(waitMs).toBeGreaterThanOrEqual(400);
  });

  it("reports rate_limited without waiting when Discord asks for more than 60 s", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    const plan = await h.plan("", { "a.bin": randomBytes(10), "b.bin": randomBytes(10) });
    h.fake.injectFailure({ kind: "rate_limit", retryAfterSeconds: 120 });
    const report = await h.channel.deliver(reply(guild, plan));
    expect(report.outcomes.map((outcome) => outcome.status)).toEqual([
      "rate_limited",
      "rate_limited",
    ]);
    const first = report.outcomes[0];
    expect(first?.status === "rate_limited" && first.retryAfterSeconds).toBeGreaterThanOrEqual(120);
    expect(h.fake.messageCreates(guild.chatId)).toHaveLength(1);
    expect(h.fake.messagesIn(guild.chatId)).toHaveLength(0);
  });

  it("applies the guild's larger upload limit and refuses the same file in a DM with a size notice", async () => {
    const h = await startHarness({ guilds: [defaultGuild(2)] });
    const { guild, dm } = targets(h.fake);
    expect(h.channel.limitsFor(guild).maxBytes("document")).toBe(50 * MiB);
    expect(h.channel.limitsFor(dm).maxBytes("document")).toBe(10 * MiB);
    const bytes = randomBytes(11 * MiB);

    const inGuild = await h.plan("", { "big.bin": bytes }, h.channel.limitsFor(guild));
    expect((await h.channel.deliver(reply(guild, inGuild))).outcomes[0]?.status).toBe("delivered");
    expect(h.fake.messagesIn(guild.chatId)[0]?.files[0]?.bytes.equals(bytes)).toBe(true);

    const planForDm = await h.plan("", { "big.bin": bytes }, h.channel.limitsFor(dm));
    expect(planForDm.outcomes[0]).toMatchObject({ status: "too_large", limit: 10 * MiB });

    // Planned with the adapter-wide limit (the guild's 50 MiB), refused at delivery to the DM.
    const planned = await h.plan("", { "big.bin": bytes });
    const report = await h.channel.deliver(reply(dm, planned));
    expect(report.outcomes[0]?.status).toBe("upload_failed");
    const messages = h.fake.messagesIn(dm.chatId);
    expect(messages.flatMap((message) => message.files)).toEqual([]);
    expect(messages.map((message) => message.content)).toEqual([
      expect.stringMatching(/big\.bin.*11\.5 MB.*10\.5 MB/),
    ]);
  });

  it("shows typing with a bare 204 and never throws for it", async () => {
    const h = await startHarness();
    const { thread } = targets(h.fake);
    await h.channel.showActivity(thread);
    await h.channel.showActivity({ platform: "discord", chatId: "999999999999999999" });
    const typing = h.fake.calls.filter((call) => call.path.endsWith("/typing"));
    expect(typing.map((call) => [call.path, call.status])).toEqual([
      [`/channels/${thread.threadId}/typing`, 204],
      ["/channels/999999999999999999/typing", 404],
    ]);
  });

  it("never writes the token to its logs, even when requests fail", async () => {
    const h = await startHarness();
    const { guild } = targets(h.fake);
    h.fake.injectFailure({ kind: "server_error", status: 502 });
    h.fake.injectFailure({ kind: "rate_limit", retryAfterSeconds: 0.1 });
    await h.channel.sendText(guild, "hello");
    await expect(
      h.channel.sendText({ platform: "discord", chatId: "999999999999999999" }, "nobody"),
    ).rejects.toMatchObject({ name: "DiscordRequestError", status: 404, discordCode: 10003 });
    h.fake.dropSocket();
    await once(h.fake.gateway, "resume");
    expect(h.logs.length).toBeGreaterThan(3);
    expect(h.logs.join("\n")).not.toContain(Token);
  });
});
