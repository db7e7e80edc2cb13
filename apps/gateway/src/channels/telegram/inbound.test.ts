import type { Message } from "grammy/types";
import { describe, expect, it } from "vitest";
import { attachmentOf, chatTypeOf, stripBotMention, toInboundMessage } from "./inbound.js";

/** Every group message answered: the mapping itself, before the group rules below. */
const context = {
  profile: "work",
  botUsername: "gate_bot",
  botId: 777,
  groups: { requireMention: false },
  updateIds: [1],
};
const user = { id: 42, is_bot: false, first_name: "Ada", last_name: "L", username: "ada" };

function message(fields: Record<string, unknown>): Message {
  return { message_id: 9, date: 0, text: "hi", from: user, ...fields } as unknown as Message;
}

describe("toInboundMessage", () => {
  it("maps a private chat to a dm with string ids and the raw numeric user id", () => {
    const inbound = toInboundMessage(
      message({
        chat: { id: 42, type: "private", first_name: "Ada", last_name: "L" },
        date: 1_700_000_000,
      }),
      context,
    );
    expect(inbound).toEqual({
      profile: "work",
      platform: "telegram",
      chatId: "42",
      chatType: "dm",
      chatName: "Ada L",
      threadId: undefined,
      userId: "42",
      userName: "ada",
      messageId: "9",
      text: "hi",
      // Telegram's date, in whole seconds.
      sentAtMs: 1_700_000_000_000,
      receiptId: "1",
    });
  });

  it("maps groups and supergroups to group, without a thread for plain replies", () => {
    const group = toInboundMessage(
      message({ chat: { id: -5, type: "group", title: "G" } }),
      context,
    );
    expect(group).toMatchObject({ chatType: "group", chatName: "G", chatId: "-5" });
    const reply = toInboundMessage(
      message({ chat: { id: -1005, type: "supergroup", title: "S" }, message_thread_id: 77 }),
      context,
    );
    expect(reply).toMatchObject({ chatType: "group", threadId: undefined });
  });

  it("uses message_thread_id as threadId for forum topic messages", () => {
    const inbound = toInboundMessage(
      message({
        chat: { id: -1009, type: "supergroup", title: "F", is_forum: true },
        message_thread_id: 77,
        is_topic_message: true,
      }),
      context,
    );
    expect(inbound).toMatchObject({ chatType: "group", threadId: "77", chatId: "-1009" });
  });

  it("maps a channel post to channel with the channel as sender", () => {
    const chat = { id: -100777, type: "channel", title: "News" };
    const inbound = toInboundMessage(
      message({ chat, sender_chat: chat, from: undefined }),
      context,
    );
    expect(inbound).toMatchObject({ chatType: "channel", userId: "-100777", userName: "News" });
  });

  it("strips this bot's @name from a command and drops commands for other bots", () => {
    const chat = { id: -5, type: "group", title: "G" };
    expect(toInboundMessage(message({ chat, text: "/stop@gate_bot" }), context)?.text).toBe(
      "/stop",
    );
    expect(
      toInboundMessage(message({ chat, text: "/reset@Gate_Bot confirm" }), context)?.text,
    ).toBe("/reset confirm");
    expect(toInboundMessage(message({ chat, text: "/stop@other_bot" }), context)).toBeUndefined();
    expect(toInboundMessage(message({ chat, text: "/status" }), context)?.text).toBe("/status");
  });

  it("ignores bots and messages without text", () => {
    const chat = { id: 1, type: "private", first_name: "B" };
    expect(
      toInboundMessage(message({ chat, from: { ...user, is_bot: true } }), context),
    ).toBeUndefined();
    expect(toInboundMessage(message({ chat, text: undefined }), context)).toBeUndefined();
  });
});

const dm = { id: 42, type: "private", first_name: "Ada" };
const file = (id: string, extra: Record<string, unknown> = {}) => ({
  file_id: id,
  file_unique_id: `u${id}`,
  file_size: 100,
  ...extra,
});

describe("group messages under requireMention (docs/sessions.md, Groups)", () => {
  const quiet = { ...context, groups: { requireMention: true } };
  const group = { id: -1001, type: "supergroup", title: "Team" };
  const bot = { id: 777, is_bot: true, first_name: "Gate", username: "gate_bot" };
  const other = { id: 888, is_bot: true, first_name: "Other", username: "other_bot" };
  const mention = (text: string, handle: string) => ({
    type: "mention",
    offset: text.indexOf(handle),
    length: handle.length,
  });
  const cases: [string, Record<string, unknown>, string | undefined][] = [
    ["plain text", { text: "ls -la" }, undefined],
    [
      "a mention first",
      { text: "@gate_bot ls -la", entities: [mention("@gate_bot ls -la", "@gate_bot")] },
      "ls -la",
    ],
    [
      "a mention inside, any case",
      {
        text: "please @Gate_Bot run ls",
        entities: [mention("please @Gate_Bot run ls", "@Gate_Bot")],
      },
      "please run ls",
    ],
    [
      "another user's mention",
      { text: "@ada ls", entities: [mention("@ada ls", "@ada")] },
      undefined,
    ],
    [
      "a text mention of the bot",
      {
        text: "Gate uptime",
        entities: [{ type: "text_mention", offset: 0, length: 4, user: bot }],
      },
      "uptime",
    ],
    [
      "a reply to the bot",
      {
        text: "and now?",
        reply_to_message: { message_id: 3, date: 0, chat: group, from: bot, text: "x" },
      },
      "and now?",
    ],
    [
      "a reply to another bot",
      {
        text: "and now?",
        reply_to_message: { message_id: 3, date: 0, chat: group, from: other, text: "x" },
      },
      undefined,
    ],
    [
      "a topic message whose topic the bot opened",
      {
        text: "in topic",
        is_topic_message: true,
        message_thread_id: 3,
        reply_to_message: {
          message_id: 3,
          date: 0,
          chat: group,
          from: bot,
          forum_topic_created: { name: "t", icon_color: 1 },
        },
      },
      undefined,
    ],
    ["/cmd@ourbot", { text: "/uptime@gate_bot" }, "/uptime"],
    ["/cmd@otherbot", { text: "/status@other_bot" }, undefined],
    ["a bare gateway command", { text: "/status" }, "/status"],
    ["a bare /start", { text: "/start" }, "/start"],
    ["another bare command", { text: "/uptime" }, undefined],
    // A shell profile forwards /model and /usage to its shell: not the gateway's, like /uptime.
    ["a bare /model in a shell profile", { text: "/model" }, undefined],
    ["a bare /usage in a shell profile", { text: "/usage" }, undefined],
    ["a bare /approve (an ordinary message without pairing)", { text: "/approve X" }, undefined],
    ["/approve@ourbot", { text: "/approve@gate_bot ABCD-EFGH" }, "/approve ABCD-EFGH"],
    [
      "a bare mention",
      { text: "@gate_bot", entities: [mention("@gate_bot", "@gate_bot")] },
      "/help",
    ],
    [
      "a caption mention on a file",
      {
        text: undefined,
        caption: "@gate_bot wc -l",
        caption_entities: [mention("@gate_bot wc -l", "@gate_bot")],
        document: { file_id: "d", file_unique_id: "u" },
      },
      "wc -l",
    ],
    [
      "a file without a caption",
      { text: undefined, document: { file_id: "d", file_unique_id: "u" } },
      undefined,
    ],
  ];
  it.each(cases)("%s → %j", (_name, fields, expected) => {
    expect(toInboundMessage(message({ chat: group, ...fields }), quiet)?.text).toBe(expected);
  });

  it("takes a bare /model and /usage as the gateway's in an openai profile only", () => {
    const openai = { ...quiet, groups: { requireMention: true, agent: "openai" as const } };
    for (const text of ["/model", "/usage", "/model gpt-4o"]) {
      expect(toInboundMessage(message({ chat: group, text }), openai)?.text, text).toBe(text);
      expect(toInboundMessage(message({ chat: group, text }), quiet), text).toBeUndefined();
    }
    // Its other own commands are the gateway's whatever the agent.
    expect(toInboundMessage(message({ chat: group, text: "/status" }), quiet)?.text).toBe(
      "/status",
    );
  });

  it("answers a private chat without a mention", () => {
    const dm = { id: 42, type: "private", first_name: "Ada" };
    expect(toInboundMessage(message({ chat: dm, text: "ls" }), quiet)?.text).toBe("ls");
  });

  it("ignores groups outside allowedChats, even when addressed; answers the listed ones", () => {
    const only = { ...context, groups: { requireMention: true, allowedChats: new Set(["-2002"]) } };
    const text = "@gate_bot ls";
    const entities = [mention(text, "@gate_bot")];
    expect(toInboundMessage(message({ chat: group, text, entities }), only)).toBeUndefined();
    const listed = { ...group, id: -2002 };
    expect(toInboundMessage(message({ chat: listed, text, entities }), only)?.text).toBe("ls");
    const open = {
      ...context,
      groups: { requireMention: false, allowedChats: new Set(["-2002"]) },
    };
    expect(toInboundMessage(message({ chat: listed, text: "ls" }), open)?.text).toBe("ls");
    expect(toInboundMessage(message({ chat: group, text: "ls" }), open)).toBeUndefined();
  });
});

describe("attachments of media messages", () => {
  it("takes a photo's largest size, whatever the order of the sizes", () => {
    const photo = [
      { ...file("mid"), width: 320, height: 240 },
      { ...file("big", { file_size: 9000 }), width: 1280, height: 960 },
      { ...file("small"), width: 90, height: 67 },
    ];
    expect(attachmentOf(message({ chat: dm, text: undefined, photo }))).toEqual({
      name: "photo.jpg",
      sentAs: "photo",
      size: 9000,
      mime: "image/jpeg",
      ref: "big",
    });
  });

  it.each([
    [
      "document",
      { document: file("d", { file_name: "data.csv", mime_type: "text/csv" }) },
      "data.csv",
      "text/csv",
    ],
    ["document", { document: file("d") }, "document", undefined],
    [
      "audio",
      { audio: file("a", { duration: 1, mime_type: "audio/mp4" }) },
      "audio.m4a",
      "audio/mp4",
    ],
    [
      "audio",
      { audio: file("a", { duration: 1, file_name: "song.flac" }) },
      "song.flac",
      undefined,
    ],
    [
      "voice",
      { voice: file("v", { duration: 1, mime_type: "audio/ogg" }) },
      "voice.ogg",
      "audio/ogg",
    ],
    ["video", { video: file("v", { width: 1, height: 1, duration: 1 }) }, "video.mp4", undefined],
    [
      "video_note",
      { video_note: file("n", { length: 1, duration: 1 }) },
      "video_note.mp4",
      undefined,
    ],
    // Telegram sets `document` beside `animation` for old clients: one file, an animation.
    [
      "animation",
      {
        animation: file("g", { width: 1, height: 1, duration: 1, file_name: "cat.mp4" }),
        document: file("g", { file_name: "cat.mp4" }),
      },
      "cat.mp4",
      undefined,
    ],
  ] as const)("%s %# is named %s", (sentAs, fields, name, mime) => {
    const inbound = toInboundMessage(message({ chat: dm, text: undefined, ...fields }), context);
    expect(inbound?.attachments).toEqual([
      { name, sentAs, size: 100, mime, ref: expect.any(String) },
    ]);
  });

  it("handles a file sent without a caption, with empty text", () => {
    const inbound = toInboundMessage(
      message({ chat: dm, text: undefined, voice: file("v", { duration: 2 }) }),
      context,
    );
    expect(inbound).toMatchObject({ text: "", attachments: [{ sentAs: "voice", ref: "v" }] });
  });

  it("takes the caption as the text, addressed commands handled as for text", () => {
    const chat = { id: -5, type: "group", title: "G" };
    const doc = { document: file("d", { file_name: "a.txt" }) };
    const caption = (text: string) =>
      toInboundMessage(message({ chat, text: undefined, caption: text, ...doc }), context);
    expect(caption("wc -l a.txt")?.text).toBe("wc -l a.txt");
    expect(caption("/run@gate_bot now")?.text).toBe("/run now");
    expect(caption("/run@other_bot now")).toBeUndefined();
  });

  it("merges an album into one message: all files in order, the caption wherever it is, the first update's receipt", () => {
    const part = (id: number, fields: Record<string, unknown>) =>
      message({ chat: dm, text: undefined, message_id: id, media_group_id: "g1", ...fields });
    const inbound = toInboundMessage(
      [
        part(10, { photo: [{ ...file("p1"), width: 10, height: 10 }] }),
        part(11, {
          photo: [{ ...file("p2"), width: 10, height: 10 }],
          caption: "ls $MEDIAGATE_ATTACHMENTS",
        }),
        part(12, { video: file("v3", { width: 1, height: 1, duration: 1 }) }),
      ],
      { ...context, updateIds: [500, 501, 502] },
    );
    expect(inbound).toMatchObject({
      messageId: "10",
      receiptId: "500",
      receiptIds: ["500", "501", "502"],
      text: "ls $MEDIAGATE_ATTACHMENTS",
    });
    expect(inbound?.attachments?.map((a) => [a.ref, a.sentAs])).toEqual([
      ["p1", "photo"],
      ["p2", "photo"],
      ["v3", "video"],
    ]);
  });

  describe("an album offered again with items recorded before", () => {
    const photo = (id: string) => ({ photo: [{ ...file(id), width: 10, height: 10 }] });
    const part = (id: number, fields: Record<string, unknown>, chat: object = dm) =>
      message({ chat, text: undefined, message_id: id, media_group_id: "g1", ...fields });
    const album = (chat?: object, caption: Record<string, unknown> = { caption: "ls" }) => [
      part(10, { ...photo("p1"), ...caption }, chat),
      part(11, photo("p2"), chat),
      part(12, photo("p3"), chat),
      part(13, photo("p4"), chat),
    ];
    const updateIds = [500, 501, 502, 503];

    it("maps only the others: their files, id and receipts, without the caption it ran with", () => {
      const inbound = toInboundMessage(album(), {
        ...context,
        updateIds,
        recorded: new Set([500, 501]),
      });
      expect(inbound).toMatchObject({
        messageId: "12",
        receiptId: "502",
        receiptIds: ["502", "503"],
        text: "",
      });
      expect(inbound?.attachments?.map((a) => a.ref)).toEqual(["p3", "p4"]);
    });

    it("keeps the caption when its item is among the new ones", () => {
      const captionLast = [part(10, photo("p1")), part(11, { ...photo("p2"), caption: "wc" })];
      const inbound = toInboundMessage(captionLast, {
        ...context,
        updateIds: [500, 501],
        recorded: new Set([500]),
      });
      expect(inbound).toMatchObject({ receiptId: "501", text: "wc" });
      expect(inbound?.receiptIds).toBeUndefined();
    });

    it("is for the bot in a group when the recorded items addressed it", () => {
      const group = { id: -1001, type: "supergroup", title: "Team" };
      const caption = "@gate_bot ls";
      const addressed = {
        caption,
        caption_entities: [{ type: "mention", offset: 0, length: "@gate_bot".length }],
      };
      const quiet = { ...context, groups: { requireMention: true }, updateIds };
      const inbound = toInboundMessage(album(group, addressed), {
        ...quiet,
        recorded: new Set([500]),
      });
      expect(inbound).toMatchObject({ receiptId: "501", text: "" });
      expect(inbound?.attachments?.map((a) => a.ref)).toEqual(["p2", "p3", "p4"]);
      // Not addressed: not for the bot, whichever items are new.
      expect(
        toInboundMessage(album(group), { ...quiet, recorded: new Set([500]) }),
      ).toBeUndefined();
    });

    it("gives nothing when every item was recorded", () => {
      expect(
        toInboundMessage(album(), { ...context, updateIds, recorded: new Set(updateIds) }),
      ).toBeUndefined();
    });
  });

  describe("an album's item that arrived alone (webhook mode)", () => {
    const group = { id: -1001, type: "supergroup", title: "Team" };
    const photo = (id: string) => ({ photo: [{ ...file(id), width: 10, height: 10 }] });
    const item = (id: number, fields: Record<string, unknown> = {}) =>
      message({ chat: group, text: undefined, message_id: id, media_group_id: "g1", ...fields });
    const quiet = { ...context, groups: { requireMention: true }, album: "-1001:42::g1" };
    const mention = {
      caption: "@gate_bot ls",
      caption_entities: [{ type: "mention", offset: 0, length: "@gate_bot".length }],
    };

    it("gives an item without the mention, marked not addressed, and the captioned one addressed", () => {
      const plain = toInboundMessage(item(11, photo("p2")), { ...quiet, updateIds: [501] });
      expect(plain).toMatchObject({
        receiptId: "501",
        text: "",
        album: { key: "-1001:42::g1", addressed: false },
      });
      expect(plain?.attachments?.map((a) => a.ref)).toEqual(["p2"]);
      const captioned = toInboundMessage(item(10, { ...photo("p1"), ...mention }), {
        ...quiet,
        updateIds: [500],
      });
      expect(captioned).toMatchObject({ text: "ls", album: { addressed: true } });
    });

    it("still drops an item of a chat outside allowedChats, and a bot's", () => {
      const rules = { requireMention: true, allowedChats: new Set(["-77"]) };
      expect(
        toInboundMessage(item(10, { ...photo("p1"), ...mention }), {
          ...quiet,
          groups: rules,
          updateIds: [500],
        }),
      ).toBeUndefined();
      const bot = { ...user, is_bot: true };
      expect(
        toInboundMessage(item(10, { ...photo("p1"), from: bot }), { ...quiet, updateIds: [500] }),
      ).toBeUndefined();
    });

    it("is addressed in a private chat, and gives no album when it came with its album", () => {
      const inDm = toInboundMessage(
        message({ chat: dm, text: undefined, media_group_id: "g1", ...photo("p1") }),
        { ...context, updateIds: [500], album: "42:42::g1" },
      );
      expect(inDm?.album).toEqual({ key: "42:42::g1", addressed: true });
      const polled = toInboundMessage(
        message({ chat: dm, text: undefined, media_group_id: "g1", ...photo("p1") }),
        { ...context, updateIds: [500] },
      );
      expect(polled).not.toHaveProperty("album");
      // Without `album` a group item not for the bot is nothing, as before.
      expect(
        toInboundMessage(item(11, photo("p2")), { ...quiet, album: undefined, updateIds: [501] }),
      ).toBeUndefined();
    });
  });

  it("drops a message with neither text nor a file it knows (a sticker)", () => {
    expect(
      toInboundMessage(message({ chat: dm, text: undefined, sticker: file("s") }), context),
    ).toBeUndefined();
  });
});

describe("stripBotMention", () => {
  it.each([
    ["/stop@gate_bot", "/stop"],
    ["/stop@gate_bot   now", "/stop   now"],
    ["/stop", "/stop"],
    ["mail me at a@gate_bot", "mail me at a@gate_bot"],
    ["/stop@gate_botx", undefined],
  ])("%s → %s", (text, expected) => {
    expect(stripBotMention(text, "gate_bot")).toBe(expected);
  });
});

describe("chatTypeOf", () => {
  it.each([
    ["private", "dm"],
    ["group", "group"],
    ["supergroup", "group"],
    ["channel", "channel"],
  ] as const)("%s → %s", (type, expected) => {
    expect(chatTypeOf({ type })).toBe(expected);
  });
});
