import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { Bot, GrammyError, HttpError, InputFile } from "grammy";
import type { Message } from "grammy/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test-support/wait.js";
import { FakeTelegram } from "./server.js";

let fake: FakeTelegram;
let apiRoot: string;
const bots: Bot[] = [];

function newBot(token = fake.token): Bot {
  const bot = new Bot(token, { client: { apiRoot } });
  bots.push(bot);
  return bot;
}

beforeEach(async () => {
  fake = new FakeTelegram();
  ({ apiRoot } = await fake.start());
});

afterEach(async () => {
  await Promise.all(bots.splice(0).map((bot) => (bot.isRunning() ? bot.stop() : undefined)));
  await fake.stop();
});

/** Starts long polling; resolves once the bot is initialised, with the polling loop. */
async function startPolling(bot: Bot): Promise<{ running: Promise<void> }> {
  let running!: Promise<void>;
  await new Promise<void>((resolve, reject) => {
    running = bot.start({ onStart: () => resolve() });
    running.catch(reject);
  });
  return { running };
}

describe("FakeTelegram long polling with the real grammY", () => {
  it("keeps connections open for reuse: grammY's keep-alive agent sends sequential calls over one", async () => {
    const bot = newBot();
    for (let i = 0; i < 5; i++) await bot.api.sendMessage(7, `call ${i}`);
    expect(fake.callsTo("sendMessage")).toHaveLength(5);
    expect(fake.connections).toBe(1);
  });

  it("delivers a queued private message to bot.start() and stops cleanly", async () => {
    const bot = newBot();
    const seen: Message[] = [];
    bot.on("message:text", (ctx) => {
      seen.push(ctx.message);
    });
    fake.sendPrivateText({ userId: 7, text: "hello" });
    const { running } = await startPolling(bot);
    await waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toMatchObject({
      text: "hello",
      chat: { id: 7, type: "private" },
      from: { id: 7 },
    });
    await bot.stop();
    await running;
    expect(
      fake.calls
        .map((call) => call.method)
        .slice(0, 2)
        .sort(),
    ).toEqual(["deleteWebhook", "getMe"]);
    // bot.stop() confirms the handled update with a final offset, so nothing stays queued.
    expect(fake.pendingUpdates).toBe(0);
  });

  it("holds a long poll until an update is queued", async () => {
    const bot = newBot();
    let settled = false;
    const poll = bot.api.getUpdates({ timeout: 30 }).finally(() => {
      settled = true;
    });
    await waitFor(() => expect(fake.polling).toBe(true));
    expect(settled).toBe(false);
    const update = fake.sendGroupText({ chatId: -100, userId: 5, text: "ping" });
    const updates = await poll;
    expect(updates.map((u) => u.update_id)).toEqual([update.update_id]);
  });

  it("marks commands and @mentions with entities and carries a reply to the bot's message, as grammY reads them", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(-100, "from the bot");
    const text = `/status@${fake.bot.username} hi @ada_l and @${fake.bot.username}, not a@mail`;
    fake.sendGroupText({ chatId: -100, text, replyTo: sent });
    const [update] = await bot.api.getUpdates({ timeout: 0 });
    const message = update?.message;
    expect(
      message?.entities?.map((e) => [e.type, text.slice(e.offset, e.offset + e.length)]),
    ).toEqual([
      ["bot_command", `/status@${fake.bot.username}`],
      ["mention", "@ada_l"],
      ["mention", `@${fake.bot.username}`],
    ]);
    expect(message?.reply_to_message?.from?.id).toBe(fake.bot.id);
    expect(message?.reply_to_message?.message_id).toBe(sent.message_id);
  });

  it("answers at once when timeout is 0 or absent, and after the timeout with nothing", async () => {
    const bot = newBot();
    expect(await bot.api.getUpdates({ timeout: 0 })).toEqual([]);
    expect(await bot.api.getUpdates()).toEqual([]);
    expect(await bot.api.getUpdates({ timeout: 1 })).toEqual([]);
  });

  it("drops updates below the offset", async () => {
    const bot = newBot();
    fake.sendPrivateText({ text: "one" });
    const second = fake.sendPrivateText({ text: "two" });
    const updates = await bot.api.getUpdates({ offset: second.update_id });
    expect(updates.map((u) => u.message?.text)).toEqual(["two"]);
    expect(fake.pendingUpdates).toBe(1);
  });

  it("ends a held poll with 409 when another poll arrives", async () => {
    const bot = newBot();
    const first = bot.api.getUpdates({ timeout: 30 });
    await waitFor(() => expect(fake.polling).toBe(true));
    expect(fake.getUpdatesConsumers).toEqual({ conflicts: 0, max: 1 });
    const second = bot.api.getUpdates({ timeout: 0 });
    await expect(first).rejects.toMatchObject({ error_code: 409 });
    expect(await second).toEqual([]);
    expect(fake.getUpdatesConsumers).toEqual({ conflicts: 1, max: 2 });
  });

  it("takes a poll whose client hung up for abandoned, not for a second consumer", async () => {
    // A graceful stop aborts its held poll and confirms with a short one at once: the server may
    // read that second call in the same turn as the first one's hang-up, before its response
    // closes. Raw sockets put both on the wire together, twenty times.
    const url = new URL(`${apiRoot}/bot${fake.token}/getUpdates`);
    const request = (params: object): string => {
      const body = JSON.stringify(params);
      return (
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      );
    };
    const open = async (): Promise<Socket> => {
      const socket = connect(Number(url.port), url.hostname);
      await once(socket, "connect");
      return socket;
    };
    for (let round = 0; round < 20; round++) {
      const [holder, next] = [await open(), await open()];
      holder.write(request({ timeout: 30 }));
      await waitFor(() => expect(fake.polling).toBe(true));
      const answered = once(next, "data");
      holder.end();
      next.write(request({ timeout: 0 }));
      expect(String((await answered)[0])).toContain('"ok":true');
      holder.destroy();
      next.destroy();
    }
    expect(fake.getUpdatesConsumers).toEqual({ conflicts: 0, max: 1 });
  });

  it("marks forum topic messages with message_thread_id", async () => {
    const bot = newBot();
    fake.sendTopicText({
      chatId: -1001,
      threadId: 77,
      userId: 9,
      text: "/status@mediagate_test_bot",
    });
    const [update] = await bot.api.getUpdates();
    expect(update?.message).toMatchObject({
      message_thread_id: 77,
      is_topic_message: true,
      chat: { id: -1001, type: "supergroup", is_forum: true },
      entities: [{ type: "bot_command", offset: 0, length: 26 }],
    });
  });
});

describe("FakeTelegram uploads with the real grammY", () => {
  it("records sendDocument bytes, filename with spaces and the field byte-for-byte", async () => {
    const bytes = randomBytes(200_000);
    const bot = newBot();
    const sent = await bot.api.sendDocument(42, new InputFile(bytes, "quarterly report v2.pdf"), {
      caption: "here",
      message_thread_id: 3,
    });
    expect(sent.document?.file_name).toBe("quarterly report v2.pdf");
    const call = await fake.waitFor((c) => c.method === "sendDocument");
    expect(call.multipart).toBe(true);
    expect(call.params).toMatchObject({ chat_id: "42", caption: "here", message_thread_id: "3" });
    expect(call.files).toHaveLength(1);
    expect(call.files[0]?.field).toBe("document");
    expect(call.files[0]?.filename).toBe("quarterly report v2.pdf");
    expect(call.files[0]?.bytes.equals(bytes)).toBe(true);
  });

  it.each([
    ["sendPhoto", "photo"],
    ["sendAnimation", "animation"],
    ["sendVideo", "video"],
    ["sendAudio", "audio"],
    ["sendVoice", "voice"],
  ] as const)("records %s uploads under %s", async (method, field) => {
    const bytes = randomBytes(1000);
    const bot = newBot();
    await bot.api[method](1, new InputFile(bytes, `f.${field}`));
    const [call] = fake.callsTo(method);
    expect(call?.ok).toBe(true);
    expect(call?.files.map((f) => [f.field, f.filename, f.bytes.equals(bytes)])).toEqual([
      [field, `f.${field}`, true],
    ]);
  });

  it("resolves attach:// references of an album", async () => {
    const files = [randomBytes(10), randomBytes(20), randomBytes(30)];
    const bot = newBot();
    const messages = await bot.api.sendMediaGroup(
      -5,
      files.map((data, i) => ({
        type: "photo" as const,
        media: new InputFile(data, `p${i}.jpg`),
        ...(i === 0 ? { caption: "album" } : {}),
      })),
    );
    expect(messages).toHaveLength(3);
    expect(
      new Set(messages.map((m) => (m as { media_group_id?: string }).media_group_id)).size,
    ).toBe(1);
    const [call] = fake.callsTo("sendMediaGroup");
    expect(call?.files.map((f) => f.field)).toEqual(["media[0]", "media[1]", "media[2]"]);
    expect(call?.files.map((f, i) => f.bytes.equals(files[i] as Buffer))).toEqual([
      true,
      true,
      true,
    ]);
    expect(call?.params.media).toMatchObject([{ type: "photo", caption: "album" }, {}, {}]);
  });

  it("refuses albums over 10 items and captions over 1024 units like Telegram", async () => {
    const bot = newBot();
    const eleven = Array.from({ length: 11 }, (_, i) => ({
      type: "photo" as const,
      media: new InputFile(Buffer.from([i]), `${i}.jpg`),
    }));
    await expect(bot.api.sendMediaGroup(1, eleven)).rejects.toMatchObject({ error_code: 400 });
    await expect(
      bot.api.sendPhoto(1, new InputFile(Buffer.from([1]), "a.jpg"), { caption: "x".repeat(1025) }),
    ).rejects.toMatchObject({ description: "Bad Request: message caption is too long" });
    await expect(bot.api.sendMessage(1, "y".repeat(4097))).rejects.toMatchObject({
      description: "Bad Request: message is too long",
    });
  });
});

describe("FakeTelegram parses parse_mode HTML like Telegram", () => {
  it("keeps a message's text and entities as parsed, what the user sees", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(
      5,
      '<b>bold</b> &lt;b&gt; <pre><code class="language-py">x = 1</code></pre> <a href="https://e.org/?a=1&amp;b">l</a>',
      { parse_mode: "HTML" },
    );
    const expected = {
      text: "bold <b> x = 1 l",
      entities: [
        { type: "bold", offset: 0, length: 4 },
        { type: "pre", offset: 9, length: 5, language: "py" },
        { type: "text_link", offset: 15, length: 1, url: "https://e.org/?a=1&b" },
      ],
    };
    expect(sent).toMatchObject(expected);
    expect(fake.botMessagesIn(5)).toMatchObject([expected]);
  });

  it("refuses unclosed and unsupported tags with Telegram's 400, and sends nothing", async () => {
    const bot = newBot();
    const refused = async (call: Promise<unknown>) =>
      ((await call.catch((e: unknown) => e)) as GrammyError).description;
    expect(await refused(bot.api.sendMessage(5, "<b>open", { parse_mode: "HTML" }))).toBe(
      `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`,
    );
    expect(await refused(bot.api.sendMessage(5, "<h1>x</h1>", { parse_mode: "HTML" }))).toMatch(
      /^Bad Request: can't parse entities: Unsupported start tag "h1"/,
    );
    expect(
      await refused(
        bot.api.sendPhoto(5, new InputFile(Buffer.from([1]), "a.jpg"), {
          caption: "<i>x",
          parse_mode: "HTML",
        }),
      ),
    ).toMatch(/^Bad Request: can't parse entities/);
    expect(fake.botMessagesIn(5)).toEqual([]);
    const plain = await bot.api.sendMessage(5, "<b>open");
    expect(plain.text).toBe("<b>open");
  });

  it("edits with parse_mode HTML replace the text and its entities", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(5, "<b>one</b>", { parse_mode: "HTML" });
    await bot.api.editMessageText(5, sent.message_id, "<i>two</i>", { parse_mode: "HTML" });
    expect(fake.botMessage(5, sent.message_id)).toMatchObject({
      text: "two",
      entities: [{ type: "italic", offset: 0, length: 3 }],
    });
    await expect(
      bot.api.editMessageText(5, sent.message_id, "<u>three", { parse_mode: "HTML" }),
    ).rejects.toMatchObject({ error_code: 400 });
  });

  it("counts a message's length after its markup is parsed", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(5, `<b>${"&amp;".repeat(4096)}</b>`, {
      parse_mode: "HTML",
    });
    expect(sent.text).toHaveLength(4096);
  });
});

describe("FakeTelegram edits and deletes the bot's messages with the real grammY", () => {
  it("edits a sent text, refuses the same text, a media message and unknown ids, like the Bot API", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(5, "working 1s");
    const edited = await bot.api.editMessageText(5, sent.message_id, "working 2s");
    expect(edited).toMatchObject({ message_id: sent.message_id, text: "working 2s" });
    expect(edited).toHaveProperty("edit_date");
    expect(fake.botMessage(5, sent.message_id)).toMatchObject({ text: "working 2s" });
    const refused = async (call: Promise<unknown>) =>
      ((await call.catch((e: unknown) => e)) as GrammyError).description;
    expect(await refused(bot.api.editMessageText(5, sent.message_id, "working 2s"))).toMatch(
      /^Bad Request: message is not modified/,
    );
    // Telegram strips a text's leading and trailing whitespace: only they changed, nothing did.
    expect(await refused(bot.api.editMessageText(5, sent.message_id, "working 2s\n\n "))).toMatch(
      /^Bad Request: message is not modified/,
    );
    expect(await refused(bot.api.editMessageText(5, 999, "x"))).toBe(
      "Bad Request: message to edit not found",
    );
    expect(await refused(bot.api.editMessageText(6, sent.message_id, "x"))).toBe(
      "Bad Request: message to edit not found",
    );
    const document = await bot.api.sendDocument(5, new InputFile(Buffer.from("d"), "d.txt"));
    expect(await refused(bot.api.editMessageText(5, document.message_id, "x"))).toBe(
      "Bad Request: there is no text in the message to edit",
    );
  });

  it("deletes a sent message once; editing or deleting it again is refused", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(5, "status");
    await expect(bot.api.deleteMessage(5, sent.message_id)).resolves.toBe(true);
    expect(fake.botMessage(5, sent.message_id)).toBeUndefined();
    await expect(bot.api.deleteMessage(5, sent.message_id)).rejects.toMatchObject({
      error_code: 400,
      description: "Bad Request: message to delete not found",
    });
    await expect(bot.api.editMessageText(5, sent.message_id, "x")).rejects.toMatchObject({
      description: "Bad Request: message to edit not found",
    });
  });

  it("fails the next edit with an injected fault and applies none of it", async () => {
    const bot = newBot();
    const sent = await bot.api.sendMessage(5, "a");
    fake.rateLimitNext("editMessageText", 3);
    await expect(bot.api.editMessageText(5, sent.message_id, "b")).rejects.toMatchObject({
      error_code: 429,
      parameters: { retry_after: 3 },
    });
    expect(fake.botMessage(5, sent.message_id)).toMatchObject({ text: "a" });
  });
});

describe("FakeTelegram fault injection", () => {
  it("answers 429 with retry_after for the next N calls, then serves normally", async () => {
    const bot = newBot();
    fake.rateLimitNext("sendMessage", 7, 2);
    for (let i = 0; i < 2; i++) {
      const error = await bot.api.sendMessage(1, "hi").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GrammyError);
      expect(error).toMatchObject({ error_code: 429, parameters: { retry_after: 7 } });
    }
    await expect(bot.api.sendMessage(1, "hi")).resolves.toMatchObject({ text: "hi" });
    expect(fake.callsTo("sendMessage").map((c) => c.fault ?? "ok")).toEqual([
      "rate_limit",
      "rate_limit",
      "ok",
    ]);
  });

  it("answers 5xx as JSON (GrammyError) or as an HTML page (HttpError)", async () => {
    const bot = newBot();
    fake.serverErrorNext("sendMessage", 502);
    fake.failNext("sendMessage", { kind: "server_error", status: 503, html: true });
    await expect(bot.api.sendMessage(1, "a")).rejects.toMatchObject({ error_code: 502 });
    await expect(bot.api.sendMessage(1, "a")).rejects.toBeInstanceOf(HttpError);
  });

  it("answers every call aimed at a blocked chat exactly as Telegram does, until it is unblocked", async () => {
    const bot = newBot();
    fake.blockChat(42);
    const raw = await fetch(`${apiRoot}/bot${fake.token}/sendMessage`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chat_id: 42, text: "hi" }),
    });
    expect(raw.status).toBe(403);
    expect(await raw.json()).toEqual({
      ok: false,
      error_code: 403,
      description: "Forbidden: bot was blocked by the user",
    });
    const refused = bot.api.sendDocument(42, new InputFile(Buffer.from("x"), "a.txt"));
    await expect(refused).rejects.toBeInstanceOf(GrammyError);
    await expect(refused).rejects.toMatchObject({
      error_code: 403,
      description: "Forbidden: bot was blocked by the user",
    });
    await expect(bot.api.sendMessage(7, "another chat")).resolves.toMatchObject({
      text: "another chat",
    });
    fake.blockChat(-100, { status: 400, description: "Bad Request: chat not found" });
    await expect(bot.api.sendMessage(-100, "hi")).rejects.toMatchObject({ error_code: 400 });
    fake.unblockChat(42);
    await expect(bot.api.sendMessage(42, "back")).resolves.toMatchObject({ text: "back" });
    expect(fake.callsTo("sendMessage").map((c) => [c.params.chat_id, c.ok])).toEqual([
      [42, false],
      [7, true],
      [-100, false],
      [42, true],
    ]);
  });

  it("drops the connection for a disconnect fault", async () => {
    const bot = newBot();
    fake.failNext("sendChatAction", { kind: "disconnect" });
    await expect(bot.api.sendChatAction(1, "typing")).rejects.toBeInstanceOf(HttpError);
    expect(fake.callsTo("sendChatAction")[0]).toMatchObject({ status: 0, fault: "disconnect" });
  });

  it("rejects matching photos with PHOTO_INVALID_DIMENSIONS but takes them as documents", async () => {
    const bot = newBot();
    fake.rejectPhotos((file) => file.filename === "wide.png");
    await expect(
      bot.api.sendPhoto(1, new InputFile(Buffer.from("x"), "wide.png")),
    ).rejects.toMatchObject({
      error_code: 400,
      description: "Bad Request: PHOTO_INVALID_DIMENSIONS",
    });
    await expect(
      bot.api.sendPhoto(1, new InputFile(Buffer.from("x"), "ok.png")),
    ).resolves.toBeDefined();
    await expect(
      bot.api.sendDocument(1, new InputFile(Buffer.from("x"), "wide.png")),
    ).resolves.toBeDefined();
  });

  it("answers 401 for a wrong token", async () => {
    const bot = newBot("999:wrong");
    await expect(bot.api.getMe()).rejects.toMatchObject({ error_code: 401 });
  });

  it("waitFor resolves on a later call and rejects when none comes", async () => {
    const bot = newBot();
    const waiting = fake.waitFor((c) => c.method === "sendChatAction");
    await bot.api.sendChatAction(3, "typing");
    await expect(waiting).resolves.toMatchObject({ params: { chat_id: 3, action: "typing" } });
    await expect(fake.waitFor((c) => c.method === "never", 50)).rejects.toThrow(/no matching call/);
  });

  it("tells onCall listeners of each call as it is recorded, until they stop listening", async () => {
    const bot = newBot();
    const heard: string[] = [];
    const stop = fake.onCall((call) => heard.push(`${call.seq}:${call.method}`));
    await bot.api.sendMessage(3, "one");
    await bot.api.sendChatAction(3, "typing");
    stop();
    await bot.api.sendMessage(3, "two");
    expect(heard).toEqual(["1:sendMessage", "2:sendChatAction"]);
    expect(fake.calls).toHaveLength(3);
  });

  it("forgets recorded calls on forgetCalls and numbers later ones on from where it was", async () => {
    const bot = newBot();
    await bot.api.sendMessage(3, "one");
    await bot.api.sendMessage(3, "two");
    fake.forgetCalls();
    expect(fake.calls).toEqual([]);
    await bot.api.sendMessage(3, "three");
    expect(fake.calls.map((call) => [call.seq, call.params.text])).toEqual([[3, "three"]]);
  });

  it("reads uploads no faster than the throttle and records one its sender gave up on", async () => {
    const bot = newBot();
    fake.throttleUploads(256 * 1024);
    const aborting = new AbortController();
    const sending = bot.api.sendDocument(
      5,
      new InputFile(randomBytes(4 * 1024 * 1024), "slow.bin"),
      undefined,
      // grammY types signals with the abort-controller polyfill; a native one works at runtime.
      aborting.signal as Parameters<typeof bot.api.sendDocument>[3],
    );
    sending.catch(() => {});
    await waitFor(() =>
      expect(fake.uploadsInProgress).toEqual([
        { method: "sendDocument", receivedBytes: expect.any(Number) },
      ]),
    );
    aborting.abort();
    await expect(sending).rejects.toThrow();
    fake.throttleUploads(undefined);
    await waitFor(() => expect(fake.cutOffUploads).toHaveLength(1));
    expect(fake.cutOffUploads[0]?.receivedBytes).toBeLessThan(4 * 1024 * 1024);
    expect(fake.uploadsInProgress).toEqual([]);
    expect(fake.callsTo("sendDocument")).toEqual([]);

    await bot.api.sendDocument(5, new InputFile(randomBytes(4 * 1024 * 1024), "fast.bin"));
    expect(fake.callsTo("sendDocument")).toHaveLength(1);
  });
});

describe("FakeTelegram command menus with the real grammY", () => {
  it("keeps each scope's menu: set, read back, deleted, and records the calls", async () => {
    const bot = newBot();
    fake.sendPrivateText({ userId: 1001, text: "hi" });
    fake.sendPrivateText({ userId: 1002, text: "hi" });
    await bot.api.setMyCommands([{ command: "help", description: "what this bot is" }]);
    await bot.api.setMyCommands(
      [
        { command: "help", description: "what this bot is" },
        { command: "stop", description: "stop it" },
      ],
      { scope: { type: "chat", chat_id: 1001 } },
    );
    expect(await bot.api.getMyCommands()).toEqual([
      { command: "help", description: "what this bot is" },
    ]);
    expect(
      (await bot.api.getMyCommands({ scope: { type: "chat", chat_id: 1001 } })).map(
        (c) => c.command,
      ),
    ).toEqual(["help", "stop"]);
    expect(await bot.api.getMyCommands({ scope: { type: "chat", chat_id: 1002 } })).toEqual([]);
    expect([...fake.menus.all().keys()]).toEqual(["default", "chat:1001"]);
    expect(fake.callsTo("setMyCommands").map((call) => call.params.scope)).toEqual([
      undefined,
      { type: "chat", chat_id: 1001 },
    ]);
    await bot.api.deleteMyCommands({ scope: { type: "chat", chat_id: 1001 } });
    expect(fake.menus.get({ type: "chat", chat_id: 1001 })).toBeUndefined();
    expect(fake.menus.get()).toHaveLength(1);
  });

  it.each([
    [[{ command: "Help", description: "x" }], "Bad Request: BOT_COMMAND_INVALID"],
    [[{ command: "help", description: "" }], "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"],
    [[{ command: "h".repeat(33), description: "x" }], "Bad Request: BOT_COMMAND_INVALID"],
  ])("refuses %j as Telegram does", async (commands, description) => {
    const bot = newBot();
    const error = await bot.api.setMyCommands(commands).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect((error as GrammyError).description).toBe(description);
    expect(fake.menus.get()).toBeUndefined();
  });

  it("refuses a chat menu for a chat the bot never met, until that user writes", async () => {
    const bot = newBot();
    const commands = [{ command: "help", description: "x" }];
    const scope = { type: "chat" as const, chat_id: 4242 };
    const error = await bot.api.setMyCommands(commands, { scope }).catch((e: unknown) => e);
    expect((error as GrammyError).description).toBe("Bad Request: chat not found");
    fake.sendPrivateText({ userId: 4242, text: "/start" });
    await bot.api.setMyCommands(commands, { scope });
    expect(fake.menus.get(scope)).toEqual(commands);
  });

  it("refuses a chat scope without a chat id", async () => {
    const bot = newBot();
    const error = await bot.api
      .setMyCommands([{ command: "help", description: "x" }], {
        scope: { type: "chat" } as never,
      })
      .catch((e: unknown) => e);
    expect((error as GrammyError).description).toBe("Bad Request: chat_id is empty");
  });
});
