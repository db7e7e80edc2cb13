import { describe, expect, it } from "vitest";
import type { RecordedCall } from "../../fakes/telegram/index.js";
import type { KillRecord } from "./crash-loop.js";
import {
  auditReplies,
  replyProblems,
  type StatusAudit,
  StatusRecordWindowMs,
  statusProblems,
} from "./reply-audit.js";
import type { SentMessage } from "./traffic.js";

const message: SentMessage = {
  id: "u7005#024",
  userId: 7005,
  place: { type: "dm" },
  kind: "long",
  token: "ok-u7005-n024",
  text: "sleep 3; echo ok-u7005-n024",
  chatId: 7005,
  updateId: 112,
  messageId: 40,
  sentAtMs: 0,
};

let seq = 0;
const call = (method: string, params: Record<string, unknown>): RecordedCall => ({
  seq: ++seq,
  method,
  params: { chat_id: message.chatId, ...params },
  files: [],
  multipart: false,
  status: 200,
  ok: true,
  result: true,
  atMs: 0,
});

describe("auditReplies", () => {
  it("counts a streamed draft and the final reply holding one token as one answer", () => {
    const draft = call("sendMessageDraft", { draft_id: 1, text: message.token });
    const final = call("sendMessage", { text: message.token });
    const audit = auditReplies([draft, final], [message]);
    expect(audit.answered.map((v) => v.replies)).toEqual([[final]]);
    expect(replyProblems(audit)).toEqual([]);
  });

  it("still counts two messages holding one token as a duplicate", () => {
    const first = call("sendMessage", { text: message.token });
    const second = call("sendMessage", { text: message.token });
    expect(replyProblems(auditReplies([first, second], [message]))).toEqual([
      "duplicated 1 of 1 messages: u7005#024 (update 112, long) replied 2× " +
        `[#${first.seq} sendMessage, #${second.seq} sendMessage]`,
    ]);
  });

  it("does not take a draft alone for an answer", () => {
    const draft = call("sendMessageDraft", { draft_id: 1, text: message.token });
    expect(auditReplies([draft], [message]).lost).toHaveLength(1);
  });

  it("takes a media reply without its file as missing unless the chat was told it may be", () => {
    const media: SentMessage = {
      ...message,
      id: "u7003#004",
      kind: "media",
      token: "ok-u7003-n004",
      file: { name: "f-ok-u7003-n004.txt", content: "x" },
      messageId: 41,
    };
    const caption = call("sendMessage", { text: media.token });
    const silent = auditReplies([caption], [media]);
    expect(silent.filesMissing).toHaveLength(1);
    expect(replyProblems(silent)).toEqual([
      "1 media replies arrived without their file: u7003#004 (update 112, media)",
    ]);
    const notice = call("sendMessage", {
      text: "⚠️ f-ok-u7003-n004.txt may not have arrived: the connection broke while it was being sent, and it is not sent twice.",
      reply_parameters: { message_id: media.messageId },
    });
    const told = auditReplies([caption, notice], [media]);
    expect(told.filesMissing).toEqual([]);
    expect(told.filesToldMissing.map((v) => v.message.id)).toEqual(["u7003#004"]);
    expect(replyProblems(told)).toEqual([]);
  });
});

describe("statusProblems", () => {
  const post = (text: string) => call("sendMessage", { text });
  const [early, late] = [post("⏳ working — 3s"), post("⏳ working — 3s")];
  const audit: StatusAudit = {
    posted: 2,
    deleted: 0,
    shown: [
      { call: early, text: "⏳ working — 3s" },
      { call: late, text: "⏳ working — 3s" },
    ],
  };
  /** A kill long after every post's answer (`atMs` 0), unless `atMs` says otherwise. */
  const kill = (moment: KillRecord["moment"], after: number, atMs = 60_000): KillRecord => ({
    run: 1,
    moment,
    fellBack: false,
    afterMs: 900,
    atMs,
    after,
  });

  it("names every status left reading working", () => {
    expect(statusProblems(audit)).toEqual([
      `2 status messages still read "⏳ working" at the end: #${early.seq} in chat 7005, #${late.seq} in chat 7005`,
    ]);
  });

  it("excuses only a status whose post an after-send kill followed: no start can know its id", () => {
    expect(statusProblems(audit, [kill("after-send", late.seq)])).toEqual([
      `1 status messages still read "⏳ working" at the end: #${early.seq} in chat 7005`,
    ]);
    // Only an after-send kill is one right after a post: any other is no excuse.
    expect(statusProblems(audit, [kill("after-receipt", late.seq)])).toHaveLength(1);
    expect(
      statusProblems(audit, [kill("after-send", early.seq), kill("after-send", late.seq)]),
    ).toEqual([]);
  });

  it("excuses a status whose post's answer any kill followed within the record window", () => {
    // Another turn's call was the one followed, or a timer kill: the record was cut off alike.
    expect(statusProblems(audit, [kill("timer", 0, StatusRecordWindowMs)])).toEqual([]);
    expect(statusProblems(audit, [kill("after-send", 999, 200)])).toEqual([]);
    // Later, the record had been made: the next start should have cleared it.
    expect(statusProblems(audit, [kill("timer", 0, StatusRecordWindowMs + 1)])).toHaveLength(1);
  });
});
