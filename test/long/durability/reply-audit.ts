import { pollFor } from "../../../test-support/wait.js";
import type { FakeTelegram, RecordedCall } from "../../fakes/telegram/index.js";
import type { KillRecord } from "./crash-loop.js";
import type { SentMessage } from "./traffic.js";

/**
 * How one message was answered:
 * - `answered`: exactly one reply holds its token (and, for media, its file arrived once);
 * - `noticed`: no reply, but a notice answering it (a message that replies to it, e.g. "your
 *   command was cut off by a restart"), which is what a turn cut off by a crash must get;
 * - `lost`: neither;
 * - `duplicated`: its token or its file arrived more than once.
 */
export type Outcome = "answered" | "noticed" | "lost" | "duplicated";

/** What the chat got for one message. */
export interface MessageVerdict {
  readonly message: SentMessage;
  readonly outcome: Outcome;
  /** Successful sends holding the token as a line of their text or caption. */
  readonly replies: readonly RecordedCall[];
  /** Successful uploads of the message's file (media messages). */
  readonly files: readonly RecordedCall[];
  /** Successful sends that reply to the message and hold no token. */
  readonly notices: readonly RecordedCall[];
}

/** The verdicts of a run and what they add up to. */
export interface ReplyAudit {
  readonly verdicts: readonly MessageVerdict[];
  readonly answered: readonly MessageVerdict[];
  readonly noticed: readonly MessageVerdict[];
  readonly lost: readonly MessageVerdict[];
  readonly duplicated: readonly MessageVerdict[];
  /** Media messages answered with their token whose file never arrived, and nobody said so. */
  readonly filesMissing: readonly MessageVerdict[];
  /**
   * Media messages whose file never arrived and whose chat was told it may not have
   * (docs/durability.md: a file cut off mid-send is not sent twice, at-most-once).
   */
  readonly filesToldMissing: readonly MessageVerdict[];
  /** Successful sends to the users' chats that answer no message (no token, no reply-to). */
  readonly stray: readonly RecordedCall[];
}

/**
 * The lines a busy session's messages get on arrival and a long turn's status message
 * (docs/sessions.md, "Busy sessions", "Live progress"): they reply to the message but say
 * nothing of its fate, so they are neither replies nor notices.
 */
const BusyLines = ["⏳ queued", "⏹ stopped the running turn", "⏳ working", "⌛ ended after"];

const isBusyLine = (call: RecordedCall): boolean =>
  textsOf(call).some((text) => BusyLines.some((line) => text.startsWith(line)));

/**
 * Not messages: a chat action, and a private chat's draft (`sendMessageDraft`, the streamed
 * preview of docs/streaming.md), which Telegram shows only until the bot's next message and
 * never keeps. A draft holding a message's token (the shell agent streams its command's output)
 * followed by the final reply is one answer, not two.
 */
const NotMessages = new Set(["sendChatAction", "sendMessageDraft"]);

const isSend = (call: RecordedCall): boolean =>
  call.ok && call.method.startsWith("send") && !NotMessages.has(call.method) && !isBusyLine(call);

/**
 * Whether a notice replying to the message says part of its reply may not have arrived
 * (`⚠️ <file> may not have arrived…`, `⚠️ This reply may not have arrived in full…`).
 */
const toldMaybeMissing = (verdict: MessageVerdict): boolean =>
  verdict.notices.some((call) =>
    textsOf(call).some((text) => text.includes("may not have arrived")),
  );

/** The text and captions a send carried. */
export function textsOf(call: RecordedCall): string[] {
  const texts: string[] = [];
  for (const key of ["text", "caption"] as const) {
    const value = call.params[key];
    if (typeof value === "string") texts.push(value);
  }
  if (Array.isArray(call.params.media)) {
    for (const item of call.params.media as { caption?: unknown }[]) {
      if (typeof item?.caption === "string") texts.push(item.caption);
    }
  }
  return texts;
}

/** The message id a send replies to (`reply_parameters.message_id`), if any. */
function repliesTo(call: RecordedCall): number | undefined {
  const reply = call.params.reply_parameters;
  if (typeof reply !== "object" || reply === null) return undefined;
  const id = Number((reply as { message_id?: unknown }).message_id);
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * Attributes every successful send the fake recorded to the messages of `messages`, by the
 * token lines of its text (the shell agent's reply is the command's output), by the files it
 * carried, and by what it replies to. Pure: give it `fake.calls` at any moment.
 */
export function auditReplies(
  calls: readonly RecordedCall[],
  messages: readonly SentMessage[],
): ReplyAudit {
  const chats = new Set(messages.map((m) => String(m.chatId)));
  const sends = calls.filter((c) => isSend(c) && chats.has(String(c.params.chat_id)));
  const byToken = new Map<string, RecordedCall[]>();
  const byFile = new Map<string, RecordedCall[]>();
  const byReplyTo = new Map<number, RecordedCall[]>();
  const tokens = new Set(messages.map((m) => m.token));
  const add = <K>(map: Map<K, RecordedCall[]>, key: K, call: RecordedCall) => {
    const list = map.get(key) ?? [];
    if (!list.includes(call)) list.push(call);
    map.set(key, list);
  };
  const attributed = new Set<RecordedCall>();
  for (const call of sends) {
    const chat = String(call.params.chat_id);
    const lines = textsOf(call).flatMap((t) => t.split("\n").map((line) => line.trim()));
    const held = lines.filter((line) => tokens.has(line));
    for (const token of held) add(byToken, `${chat} ${token}`, call);
    for (const file of call.files) add(byFile, `${chat} ${file.filename ?? ""}`, call);
    const to = repliesTo(call);
    if (held.length === 0 && to !== undefined) add(byReplyTo, to, call);
  }
  const verdicts = messages.map((message): MessageVerdict => {
    const chat = String(message.chatId);
    const replies = byToken.get(`${chat} ${message.token}`) ?? [];
    const files =
      message.file === undefined ? [] : (byFile.get(`${chat} ${message.file.name}`) ?? []);
    const notices = byReplyTo.get(message.messageId) ?? [];
    for (const call of [...replies, ...files, ...notices]) attributed.add(call);
    const outcome: Outcome =
      replies.length > 1 || files.length > 1
        ? "duplicated"
        : replies.length === 1
          ? "answered"
          : notices.length > 0
            ? "noticed"
            : "lost";
    return { message, outcome, replies, files, notices };
  });
  const having = (outcome: Outcome) => verdicts.filter((v) => v.outcome === outcome);
  const withoutFile = verdicts.filter(
    (v) => v.outcome === "answered" && v.message.file !== undefined && v.files.length === 0,
  );
  return {
    verdicts,
    answered: having("answered"),
    noticed: having("noticed"),
    lost: having("lost"),
    duplicated: having("duplicated"),
    filesMissing: withoutFile.filter((v) => !toldMaybeMissing(v)),
    filesToldMissing: withoutFile.filter(toldMaybeMissing),
    stray: sends.filter((call) => !attributed.has(call)),
  };
}

const callList = (calls: readonly RecordedCall[]): string =>
  calls.map((c) => `#${c.seq} ${c.method}`).join(", ");

const who = (m: SentMessage): string => `${m.id} (update ${m.updateId}, ${m.kind})`;

const clip = (text: string, max = 80): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

/**
 * Everything that breaks "every message answered exactly once", one precise line per kind:
 * which messages were lost (with their update ids), which were answered more than once (with
 * the calls that did it), which media replies came without their file.
 */
export function replyProblems(
  audit: ReplyAudit,
  options: {
    /**
     * At most this many messages may end with a notice instead of a reply: a crash cuts off
     * only the turns running at that moment (kills × concurrency). More means turns that had
     * not started were given up instead of run.
     */
    readonly maxNoticed?: number;
  } = {},
): string[] {
  const total = audit.verdicts.length;
  const problems: string[] = [];
  if (options.maxNoticed !== undefined && audit.noticed.length > options.maxNoticed) {
    problems.push(
      `${audit.noticed.length} messages got a notice instead of a reply, more than the ${options.maxNoticed} turns the kills can have cut off: ${audit.noticed
        .map((v) => who(v.message))
        .join(", ")}`,
    );
  }
  if (audit.lost.length > 0) {
    problems.push(
      `lost ${audit.lost.length} of ${total} messages (no reply, no notice): ${audit.lost
        .map((v) => who(v.message))
        .join(", ")}`,
    );
  }
  if (audit.duplicated.length > 0) {
    problems.push(
      `duplicated ${audit.duplicated.length} of ${total} messages: ${audit.duplicated
        .map(
          (v) =>
            `${who(v.message)} replied ${v.replies.length}× [${callList(v.replies)}]` +
            (v.message.file === undefined
              ? ""
              : `, file ${v.files.length}× [${callList(v.files)}]`),
        )
        .join("; ")}`,
    );
  }
  if (audit.filesMissing.length > 0) {
    problems.push(
      `${audit.filesMissing.length} media replies arrived without their file: ${audit.filesMissing
        .map((v) => who(v.message))
        .join(", ")}`,
    );
  }
  return problems;
}

/** One line of figures: answered, noticed, lost, duplicated, stray sends. */
export function replySummary(audit: ReplyAudit): string {
  const stray =
    audit.stray.length === 0
      ? ""
      : `; ${audit.stray.length} other sends: ${audit.stray
          .slice(0, 5)
          .map((c) => JSON.stringify(clip(textsOf(c).join(" | "))))
          .join(", ")}`;
  return (
    `${audit.verdicts.length} messages: ${audit.answered.length} answered, ` +
    `${audit.noticed.length} noticed (turn cut off), ${audit.lost.length} lost, ` +
    `${audit.duplicated.length} duplicated, ${audit.filesMissing.length} files missing, ` +
    `${audit.filesToldMissing.length} told their file may not have arrived${stray}`
  );
}

/** Texts of the notices (first 5), for the report. */
export function noticeSamples(audit: ReplyAudit): string[] {
  return audit.noticed
    .slice(0, 5)
    .map(
      (v) => `${v.message.id}: ${clip(v.notices.map((c) => textsOf(c).join(" | ")).join(" / "))}`,
    );
}

/** What became of the status messages the gateway posted in the users' chats. */
export interface StatusAudit {
  /** Status posts (`⏳ working …`) that Telegram took. */
  readonly posted: number;
  /** Deleted since. */
  readonly deleted: number;
  /** Still in the chat, by the last text each shows (edits applied). */
  readonly shown: readonly { readonly call: RecordedCall; readonly text: string }[];
}

const isStatusPost = (call: RecordedCall): boolean =>
  call.ok && call.method === "sendMessage" && String(call.params.text).startsWith("⏳ working");

/**
 * Every status message posted in the chats of `messages`, as the chat shows it now (the
 * fake's state, every edit and delete applied): a status a crash left behind must have been
 * deleted or edited by a later start (docs/durability.md), never left reading `⏳ working`.
 */
export function auditStatuses(fake: FakeTelegram, messages: readonly SentMessage[]): StatusAudit {
  const chats = new Set(messages.map((m) => String(m.chatId)));
  const posts = fake.calls.filter((c) => isStatusPost(c) && chats.has(String(c.params.chat_id)));
  const shown: { call: RecordedCall; text: string }[] = [];
  for (const call of posts) {
    const id = Number((call.result as { message_id?: unknown } | undefined)?.message_id);
    const now = fake.botMessage(String(call.params.chat_id), id);
    if (now !== undefined) shown.push({ call, text: String(now.text) });
  }
  return { posted: posts.length, deleted: posts.length - shown.length, shown };
}

/**
 * How long after Telegram answered a status post a kill still counts as cutting off its
 * record: one journal write, which the gateway makes once its event loop reads the answer.
 * On a loaded machine (the long suite runs its files side by side on two cores) that can take
 * hundreds of ms; a kill later than this left a status the next start should have cleared.
 */
export const StatusRecordWindowMs = 1_000;

/**
 * The status messages still reading `⏳ working` that a kill left where docs/sessions.md says
 * no later start can clear them: the process was killed after Telegram answered the post,
 * before it could record the message's id (an `after-send` kill that followed that very call,
 * or any kill within {@link StatusRecordWindowMs} of that answer: with several turns running,
 * a kill aimed at another call's answer lands in this one's window too). Telegram has no
 * idempotency key, so the id is known only from that answer.
 */
export function statusesInTheRecordWindow(
  audit: StatusAudit,
  kills: readonly KillRecord[],
): RecordedCall[] {
  const followed = new Set(kills.filter((k) => k.moment === "after-send").map((k) => k.after));
  const cutOff = (call: RecordedCall) =>
    followed.has(call.seq) ||
    kills.some((k) => k.atMs >= call.atMs && k.atMs - call.atMs <= StatusRecordWindowMs);
  return audit.shown
    .filter((s) => s.text.startsWith("⏳ working") && cutOff(s.call))
    .map((s) => s.call);
}

/**
 * One problem line when a status message still reads `⏳ working`, those in the window
 * {@link statusesInTheRecordWindow} names aside (given the loop's `kills`).
 */
export function statusProblems(audit: StatusAudit, kills: readonly KillRecord[] = []): string[] {
  const excused = new Set(statusesInTheRecordWindow(audit, kills));
  const working = audit.shown.filter(
    (s) => s.text.startsWith("⏳ working") && !excused.has(s.call),
  );
  if (working.length === 0) return [];
  return [
    `${working.length} status messages still read "⏳ working" at the end: ${working
      .map((s) => `#${s.call.seq} in chat ${String(s.call.params.chat_id)}`)
      .join(", ")}`,
  ];
}

/** One line of figures: status messages posted, deleted, and what the others read. */
export function statusSummary(audit: StatusAudit, kills: readonly KillRecord[] = []): string {
  const texts = new Map<string, number>();
  for (const { text } of audit.shown) {
    const head = text.split("\n")[0] ?? "";
    const key = head.startsWith("⏳ working") ? "⏳ working" : head;
    texts.set(key, (texts.get(key) ?? 0) + 1);
  }
  const left = [...texts].map(([text, n]) => `${n} "${text}"`).join(", ");
  const windowed = statusesInTheRecordWindow(audit, kills).length;
  const excused = windowed === 0 ? "" : ` (${windowed} of them killed right after the post)`;
  return `${audit.posted} status messages: ${audit.deleted} deleted${left === "" ? "" : `, ${left}`}${excused}`;
}

/** Options of {@link settleReplies}. */
export interface SettleOptions {
  /**
   * When the audit counts as settled (default: nothing lost). A notice is not lost, so a test
   * that expects the answer after a notice says so here.
   */
  readonly until?: ((audit: ReplyAudit) => boolean) | undefined;
  /** Give up waiting once no send happened for this long and Telegram holds no update. */
  readonly quietMs: number;
  /** Bound on the whole wait. */
  readonly timeoutMs: number;
}

/**
 * Polls until every message is answered or noticed and the fake holds no unconfirmed update,
 * or until nothing is sent any more for `quietMs` (what is unanswered then stays so), and
 * returns the audit of that moment.
 */
export async function settleReplies(
  fake: FakeTelegram,
  messages: readonly SentMessage[],
  options: SettleOptions,
): Promise<ReplyAudit> {
  let sends = -1;
  let quietSinceMs = Date.now();
  const look = (): ReplyAudit | undefined => {
    const audit = auditReplies(fake.calls, messages);
    const settled =
      (options.until?.(audit) ?? audit.lost.length === 0) && fake.pendingUpdates === 0;
    if (settled) return audit;
    const count = fake.calls.filter(isSend).length;
    if (count !== sends) {
      sends = count;
      quietSinceMs = Date.now();
    } else if (Date.now() - quietSinceMs > options.quietMs && fake.pendingUpdates === 0) {
      return audit;
    }
    return undefined;
  };
  // An audit reads every call the fake recorded: every 200 ms is often enough.
  return (await pollFor(look, options.timeoutMs, 200)) ?? auditReplies(fake.calls, messages);
}
