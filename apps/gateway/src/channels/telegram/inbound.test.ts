import type { Message } from "grammy/types";
import { describe, expect, it } from "vitest";
import { chatTypeOf, stripBotMention, toInboundMessage } from "./inbound.js";

const context = { profile: "work", botUsername: "gate_bot", updateId: 1 };
const user = { id: 42, is_bot: false, first_name: "Ada", last_name: "L", username: "ada" };

function message(fields: Record<string, unknown>): Message {
  return { message_id: 9, date: 0, text: "hi", from: user, ...fields } as unknown as Message;
}

describe("toInboundMessage", () => {
  it("maps a private chat to a dm with string ids and the raw numeric user id", () => {
    const inbound = toInboundMessage(
      message({ chat: { id: 42, type: "private", first_name: "Ada", last_name: "L" } }),
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
