import type { InboundMessage } from "@mediagate/gateway";
import { TelegramChannel, TelegramDeliveryError, TelegramStartError } from "@mediagate/gateway";
import { Api } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { captureLogs } from "../fakes/telegram/media-fixtures.js";

let fake: FakeTelegram;
let apiRoot: string;
let channel: TelegramChannel | undefined;
let logs: ReturnType<typeof captureLogs>;

beforeEach(async () => {
  fake = new FakeTelegram();
  ({ apiRoot } = await fake.start());
  logs = captureLogs();
});

afterEach(async () => {
  await channel?.stop();
  channel = undefined;
  await fake.stop();
});

function newChannel(
  extra: {
    dropPendingUpdates?: boolean;
    token?: string;
    groups?: { requireMention?: boolean; allowedChats?: readonly number[] };
  } = {},
): TelegramChannel {
  channel = new TelegramChannel({
    token: extra.token ?? fake.token,
    apiRoot,
    profile: "work",
    logger: logs.logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
    pollBackoffMinMs: 5,
    ...(extra.dropPendingUpdates === undefined
      ? {}
      : { dropPendingUpdates: extra.dropPendingUpdates }),
    ...(extra.groups === undefined ? {} : { groups: extra.groups }),
  });
  return channel;
}

describe("TelegramChannel receiving (grammY long polling against the fake)", () => {
  it("maps dm, group, forum topic and channel messages to InboundMessage", async () => {
    const received: InboundMessage[] = [];
    await newChannel({ groups: { requireMention: false } }).start({
      onMessage: async (message) => void received.push(message),
      onFatal: () => {},
    });
    fake.sendPrivateText({ userId: 11, firstName: "Ann", username: "ann", text: "hello" });
    fake.sendGroupText({ chatId: -200, userId: 12, text: "in group", title: "Team" });
    fake.sendGroupText({ chatId: -300, userId: 12, text: "a reply", replyThreadId: 5 });
    fake.sendTopicText({ chatId: -100400, threadId: 77, userId: 13, text: "in topic" });
    fake.sendChannelPost({ chatId: -100500, text: "news", title: "News" });
    await waitFor(() => expect(received).toHaveLength(5));
    expect(received).toEqual([
      expect.objectContaining({
        platform: "telegram",
        profile: "work",
        chatType: "dm",
        chatId: "11",
        userId: "11",
        userName: "ann",
        text: "hello",
        threadId: undefined,
      }),
      expect.objectContaining({
        chatType: "group",
        chatId: "-200",
        chatName: "Team",
        userId: "12",
      }),
      expect.objectContaining({ chatType: "group", chatId: "-300", threadId: undefined }),
      expect.objectContaining({
        chatType: "group",
        chatId: "-100400",
        threadId: "77",
        userId: "13",
      }),
      expect.objectContaining({ chatType: "channel", chatId: "-100500", userId: "-100500" }),
    ]);
    for (const message of received) expect(message.messageId).toMatch(/^\d+$/);
  });

  it("passes commands through with this bot's @name stripped and drops other bots' commands", async () => {
    const received: string[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    const bot = fake.bot.username;
    fake.sendGroupText({ chatId: -7, text: `/stop@${bot}` });
    fake.sendGroupText({ chatId: -7, text: "/stop@someone_else_bot" });
    fake.sendGroupText({ chatId: -7, text: `/reset@${bot} confirm` });
    fake.sendPrivateText({ text: "/status" });
    await waitFor(() => expect(received).toHaveLength(3));
    expect(received).toEqual(["/stop", "/reset confirm", "/status"]);
  });

  it("hands on only group messages addressed to it, and confirms the rest without fetching their files", async () => {
    const received: string[] = [];
    await newChannel({ groups: { allowedChats: [-7, -8] } }).start({
      onMessage: async (message) => void received.push(`${message.chatId} ${message.text}`),
      onFatal: () => {},
    });
    const bot = fake.bot.username;
    const mine = await new Api(fake.token, { apiRoot }).sendMessage(-7, "the bot's answer");
    fake.sendGroupText({ chatId: -7, text: "plain chatter" });
    fake.sendMedia({ kind: "document", chatId: -7, bytes: Buffer.from("unaddressed file") });
    fake.sendGroupText({ chatId: -7, text: `@${bot} echo mentioned` });
    fake.sendGroupText({ chatId: -7, text: "echo replied", replyTo: mine });
    fake.sendGroupText({ chatId: -99, text: `@${bot} echo outside allowedChats` });
    fake.sendMedia({ kind: "document", chatId: -99, caption: `@${bot} wc -c` });
    fake.sendGroupText({ chatId: -8, chatType: "group", text: "/uptime" });
    fake.sendGroupText({ chatId: -8, chatType: "group", text: "/status" });
    fake.sendPrivateText({ userId: 11, text: "a dm needs no mention" });
    await waitFor(() => expect(received).toHaveLength(4));
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(received).toEqual([
      "-7 echo mentioned",
      "-7 echo replied",
      "-8 /status",
      "11 a dm needs no mention",
    ]);
    expect(fake.callsTo("getFile")).toEqual([]);
    expect(fake.downloads).toEqual([]);
  });

  it("keeps updates queued while it was down, and confirms handled ones on stop", async () => {
    fake.sendPrivateText({ text: "sent while the gateway was down" });
    const received: string[] = [];
    const tg = newChannel();
    await tg.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    await waitFor(() => expect(received).toEqual(["sent while the gateway was down"]));
    await tg.stop();
    expect(fake.pendingUpdates).toBe(0);
  });

  it("drops updates queued while down when dropPendingUpdates is set", async () => {
    fake.sendPrivateText({ text: "stale" });
    const received: string[] = [];
    await newChannel({ dropPendingUpdates: true }).start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    fake.sendPrivateText({ text: "fresh" });
    await waitFor(() => expect(received).toEqual(["fresh"]));
  });

  it("offers a message again when its handler rejects, and the ones after it run after it", async () => {
    const received: string[] = [];
    /** What the handler ran, as the gateway does: each only after the one ahead of it. */
    const ran: string[] = [];
    let failures = 1;
    await newChannel().start({
      onMessage: async (message, options) => {
        received.push(message.text);
        if (message.text === "bad" && failures-- > 0) throw new Error("journal write failed");
        if (options?.after !== undefined && !(await options.after)) return;
        ran.push(message.text);
      },
      onFatal: () => {},
    });
    fake.sendPrivateText({ text: "bad" });
    fake.sendPrivateText({ text: "good" });
    await waitFor(() => expect(ran).toEqual(["bad", "good"]));
    // "good" is handed on once: at once beside "bad" when one answer brings both, or after it.
    expect(received.filter((text) => text === "bad")).toHaveLength(2);
    expect(received.filter((text) => text === "good")).toHaveLength(1);
    expect(logs.text()).toContain("journal write failed");
  });

  it("rejects start with a token-free TelegramStartError when the token is refused", async () => {
    const wrong = "555555:WRONG-secret-token-value";
    const error = await newChannel({ token: wrong })
      .start({ onMessage: async () => {}, onFatal: () => {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TelegramStartError);
    expect(String((error as Error).message)).toContain("401");
    expect(JSON.stringify(error)).not.toContain("WRONG-secret");
    expect((error as Error).message).not.toContain("WRONG-secret");
  });

  it("rejects start with a token-free TelegramStartError when the API is unreachable", async () => {
    const down = new FakeTelegram();
    const { apiRoot: deadRoot } = await down.start();
    await down.stop();
    channel = new TelegramChannel({
      token: fake.token,
      apiRoot: deadRoot,
      profile: "work",
      logger: logs.logger,
      retry: { maxAttempts: 2, minDelayMs: 5 },
    });
    const error = await channel
      .start({ onMessage: async () => {}, onFatal: () => {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TelegramStartError);
    expect((error as Error).message).toContain("getMe");
    expect((error as Error).message).not.toContain(fake.token);
    expect(logs.text()).not.toContain(fake.token);
  });
});

describe("TelegramChannel text and activity", () => {
  it("splits long text at 4096 UTF-16 units and replies into the same topic", async () => {
    const paragraph = `${"word ".repeat(150).trim()}\n`;
    const text = paragraph.repeat(20); // ~15 000 units
    await newChannel().sendText(
      { platform: "telegram", chatId: "-100400", threadId: "77", replyToMessageId: "5" },
      text,
    );
    const sends = fake.callsTo("sendMessage");
    expect(sends.length).toBe(4);
    for (const call of sends) {
      expect(call.ok).toBe(true);
      expect(String(call.params.text).length).toBeLessThanOrEqual(4096);
      expect(call.params).toMatchObject({ chat_id: -100400, message_thread_id: 77 });
    }
    expect(sends[0]?.params.reply_parameters).toEqual({
      message_id: 5,
      allow_sending_without_reply: true,
    });
    expect(sends.slice(1).map((c) => c.params.reply_parameters)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const squash = (s: string) => s.replace(/\s+/g, "");
    expect(squash(sends.map((c) => String(c.params.text)).join(""))).toBe(squash(text));
  });

  it("rejects sendText with a TelegramDeliveryError on a final 400, without retrying", async () => {
    fake.failNext("sendMessage", {
      kind: "error",
      status: 400,
      description: "Bad Request: chat not found",
    });
    const error = await newChannel()
      .sendText({ platform: "telegram", chatId: "1" }, "hi")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TelegramDeliveryError);
    expect(error).toMatchObject({ method: "sendMessage", status: 400 });
    expect(fake.callsTo("sendMessage")).toHaveLength(1);
  });

  it("takes a status edit that only adds whitespace as done, as Telegram shows it so already", async () => {
    const tg = newChannel();
    const target = { platform: "telegram", chatId: "5" } as const;
    const signal = () => AbortSignal.timeout(5000);
    const id = await tg.status.post(target, "Let me check.", signal());
    // A streamed reply grown by a newline: Telegram strips it and answers "not modified".
    await expect(tg.status.edit(target, id, "Let me check.\n", signal())).resolves.toBeUndefined();
    expect(fake.callsTo("editMessageText").map((call) => call.description)).toEqual([
      expect.stringMatching(/^Bad Request: message is not modified/),
    ]);
    await tg.status.edit(target, id, "Let me check.\nDone.", signal());
    expect(fake.botMessage(5, Number(id))?.text).toBe("Let me check.\nDone.");
    // Any other refusal still fails the call.
    await expect(tg.status.edit(target, "999", "x", signal())).rejects.toMatchObject({
      name: "StatusCallError",
      status: 400,
    });
  });

  it("shows typing in the chat and topic, and never throws when that fails", async () => {
    const tg = newChannel();
    await tg.showActivity({ platform: "telegram", chatId: "-100400", threadId: "77" });
    expect(fake.callsTo("sendChatAction")[0]?.params).toEqual({
      chat_id: -100400,
      action: "typing",
      message_thread_id: 77,
    });
    fake.failNext("sendChatAction", { kind: "disconnect" });
    await expect(tg.showActivity({ platform: "telegram", chatId: "1" })).resolves.toBeUndefined();
    fake.failNext("sendChatAction", { kind: "rate_limit", retryAfterSeconds: 3 });
    await expect(tg.showActivity({ platform: "telegram", chatId: "1" })).resolves.toBeUndefined();
    expect(fake.callsTo("sendChatAction")).toHaveLength(3);
  });
});
