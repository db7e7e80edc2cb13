import { classify, formatBytes } from "@mediagate/media";
import type { InboxFile, InboxRefused, InboxResult } from "@mediagate/sandbox";
import type { TurnAttachment } from "../agents/types.js";
import type { AttachmentFetcher, InboundAttachment } from "../channels/types.js";
import { sandboxProblemOf, sandboxProblemText } from "../sandbox-access/sandbox-errors.js";
import { abortedByStop } from "../session/stopping.js";
import { sayAndFinish } from "./command-answer.js";
import { finishEntry } from "./journal-steps.js";
import { TurnFailedText } from "./run-turn.js";
import { type Middleware, say, sessionOf } from "./types.js";

/** What a file's name may show of itself in a notice: no controls or bidi overrides, bounded. */
const MaxShownNameChars = 80;
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
const Unshowable = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** A user-sent name as a notice shows it, quoted. */
export function shownName(name: string): string {
  const clean = name.replace(Unshowable, "").trim() || "(unnamed file)";
  const cut =
    clean.length > MaxShownNameChars ? `${clean.slice(0, MaxShownNameChars - 1)}…` : clean;
  return `“${cut}”`;
}

/** The chat's line for a file that was not saved: its name and why, and what to do. */
export function refusedNotice(refused: InboxRefused, maxBytes: number): string {
  const name = shownName(refused.name);
  switch (refused.reason) {
    case "too_large":
      return `📎 ${name} was not saved: it is larger than ${formatBytes(maxBytes)}, the limit for files sent to this bot.`;
    case "source_failed":
      return `📎 ${name} could not be downloaded (${detailOf(refused)}). Send it again.`;
    case "no_space":
      return `📎 ${name} was not saved: ${detailOf(refused)}. Delete files in /workspace or /reset, then send it again.`;
    case "inbox_unusable":
      return `📎 ${name} was not saved: /workspace/inbox is not a directory the gateway can write into. Remove or rename it, then send the file again.`;
    case "aborted":
      return `📎 ${name} was not saved: the message was stopped.`;
    case "failed":
      return `📎 ${name} was not saved: ${detailOf(refused)}.`;
  }
}

/**
 * The sandbox's sentence without the file name it starts with (the notice names the file);
 * for a failed download, the channel's own reason inside it.
 */
function detailOf(refused: InboxRefused): string {
  const at = refused.message.indexOf(": ");
  const detail = (at < 0 ? refused.message : refused.message.slice(at + 2)).replace(/\.$/, "");
  return /^the download failed \((.*)\)$/s.exec(detail)?.[1] ?? detail;
}

/**
 * A file's bytes as the inbox reads them: the channel's fetch starts only when the inbox asks
 * for the first chunk, so files wait their turn instead of holding connections open.
 */
function lazySource(
  fetcher: AttachmentFetcher,
  attachment: InboundAttachment,
  signal: AbortSignal,
): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      yield* await fetcher.open(attachment, signal);
    },
  };
}

/** Kinds from the bytes alone (a voice note is told by how the platform labelled it). */
const PlainKinds = { asVoice: false, asDocument: false } as const;

/** A channel without inbound files: each one refused unread, with a reason. */
const NoFetcher: AttachmentFetcher = {
  maxBytes: 0,
  open: () => Promise.reject(new Error("this channel does not take files")),
};

/**
 * Step: the message's files go into the session's inbox, `/workspace/inbox/` of its sandbox
 * (docs/inbound-media.md), before the agent's turn and inside the session's queue, after the
 * sender was authorized (nothing is fetched for anyone else). Each file is fetched from its
 * platform and streamed in; one that is over the limit, fails to download or does not fit gets
 * a notice naming it, and the rest of the message is still handled. The saved files go to the
 * agent as `ctx.attachments`. A message whose files all failed and that has no text ends here.
 */
export const saveAttachments: Middleware = async (ctx, next) => {
  const attachments = ctx.message.attachments ?? [];
  if (attachments.length === 0) {
    await next();
    return;
  }
  const session = sessionOf(ctx);
  const signal = ctx.signal ?? new AbortController().signal;
  const slot = ctx.slot ?? ctx.runtime.slotFor(session.sessionKey);
  const fetcher = ctx.channel.attachments ?? NoFetcher;
  const files: InboxFile[] = attachments.map((attachment) => ({
    name: attachment.name,
    source: lazySource(fetcher, attachment, signal),
    maxBytes: fetcher.maxBytes,
    declaredBytes: attachment.size,
  }));
  let results: InboxResult[];
  try {
    results = await ctx.runtime.sandbox.saveToInbox(slot, files, {
      sessionKey: session.sessionKey,
      classify: (head, filename) => classify(head, filename, PlainKinds),
      signal,
    });
  } catch (error) {
    if (signal.aborted) {
      await endAborted();
      return;
    }
    const problem = sandboxProblemOf(error);
    ctx.turn?.failed("saveAttachments", error);
    ctx.log.error({ err: error, slot }, "could not save the message's files");
    await sayAndFinish(
      ctx,
      problem === undefined ? TurnFailedText : sandboxProblemText(problem),
      "failed",
    );
    return;
  }
  const saved: TurnAttachment[] = [];
  const notices: string[] = [];
  results.forEach((result, index) => {
    const attachment = attachments[index] as InboundAttachment;
    if (result.status === "saved") {
      saved.push({
        name: result.name,
        containerPath: result.containerPath,
        hostPath: result.hostPath,
        kind: attachment.sentAs === "voice" && result.kind === "audio" ? "voice" : result.kind,
        mime: result.mime,
        size: result.size,
        sentAs: attachment.sentAs,
      });
    } else if (result.reason !== "aborted") {
      notices.push(refusedNotice(result, fetcher.maxBytes));
    }
  });
  ctx.log.info(
    {
      files: attachments.length,
      saved: saved.length,
      bytes: saved.reduce((sum, file) => sum + file.size, 0),
      refused: results.flatMap((r) => (r.status === "refused" ? [r.reason] : [])),
    },
    "inbound files",
  );
  if (signal.aborted) {
    await endAborted();
    return;
  }
  const noticeText = notices.length > 0 ? notices.join("\n") : undefined;
  if (saved.length === 0 && ctx.message.text.trim() === "") {
    await sayAndFinish(ctx, noticeText, "silent");
    return;
  }
  if (noticeText !== undefined) await say(ctx, noticeText);
  ctx.attachments = saved;
  await next();

  /** Cut off by the gateway's stop: kept for the next start; by /stop or /reset: closed. */
  async function endAborted(): Promise<void> {
    if (abortedByStop(signal)) return;
    await finishEntry(ctx, "stopped");
  }
};
