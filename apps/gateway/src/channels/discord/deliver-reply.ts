import { noticeFor, type ReadyMedia } from "@mediagate/media";
import type { Logger } from "pino";
import { replyParts } from "../../delivery/reply-parts.js";
import { RateLimitedError } from "../../delivery/retry.js";
import { splitText } from "../../delivery/split-text.js";
import { earlierOutcome, type Idempotence, sendsAgain } from "../../durable/earlier-outcome.js";
import { formatStepKey, mediaStepKey, textStepKey } from "../../durable/step-keys.js";
import type {
  DeliveryOutcome,
  DeliveryProgress,
  DeliveryReport,
  OutboundReply,
  StepResult,
} from "../types.js";
import { batchFiles } from "./batches.js";
import { chatUnreachable, DiscordRequestError, describeError } from "./errors.js";
import { type MessageDraft, newNonce, stepNonce } from "./message-create.js";
import { type DiscordOutbox, DiscordTextLimit } from "./outbox.js";

/** One reply to deliver into one Discord channel (a thread's own id for a thread). */
export interface ReplyDelivery {
  readonly channelId: string;
  readonly reply: OutboundReply;
  /** The chat's upload limit per request. */
  readonly limitBytes: number;
  /**
   * Messages the text may take (`delivery.maxTextChunks`); a longer text is sent as that many
   * messages of its head, then the whole as `reply.txt` (docs/media.md, "Long replies").
   */
  readonly maxTextChunks: number;
  readonly signal?: AbortSignal | undefined;
  readonly progress?: DeliveryProgress | undefined;
}

/** Why a delivery stopped before its last step; the steps left stay undone. */
type Halt =
  | { readonly kind: "rate_limited"; readonly retryAfterSeconds: number }
  /** The signal aborted (shutdown), or the token was refused. */
  | { readonly kind: "stopped" };

type Attempt =
  | { readonly status: "sent" }
  | { readonly status: "halted" }
  | { readonly status: "failed"; readonly error: unknown };

const mediaKey = (item: ReadyMedia): string => mediaStepKey(item.path);

/**
 * Every create carries a nonce derived from the reply and its step (`enforce_nonce`): a step
 * cut off mid-send by an earlier process is sent again, and Discord returns the first message.
 */
export const DiscordIdempotence: Idempotence = "idempotent";

/**
 * Delivers a reply step by step: the text's chunks (`text:<n>`; a text over
 * `maxTextChunks` messages is its head, then the whole as `reply.txt`, the last `text:<n>`),
 * then its files in messages of
 * up to 10 attachments within the chat's limit (each file's step is `media:<path>`, a message's
 * files share its result). Steps `progress.done` lists are skipped; each finished step is
 * recorded with `progress.step` before the next starts (a rejection there propagates: nothing
 * more is sent that could not be recorded).
 *
 * Every create's nonce is derived from `progress.replyId` and its step key(s), so a create
 * repeated by another attempt or another process returns the message already posted (without
 * progress, each create gets a fresh nonce). The first message sent replies to
 * `replyToMessageId`, unless an earlier attempt already sent a step.
 *
 * A refused text chunk (4xx) is recorded `failed` and the rest still go; a refused message of
 * several files is resent file by file. A rate limit longer than the retry policy holds stops
 * the delivery with `retryAfterSeconds`; an aborted signal (or a 401) stops it before the next
 * step, its files `pending`. Files over the chat's limit are not sent: the chat gets a notice.
 */
export async function deliverReply(
  outbox: DiscordOutbox,
  log: Logger,
  delivery: ReplyDelivery,
): Promise<DeliveryReport> {
  const { channelId, reply, limitBytes, signal, progress } = delivery;
  const done: ReadonlyMap<string, StepResult> = progress?.done ?? new Map();
  let replyTo = done.size === 0 ? reply.target.replyToMessageId : undefined;
  let halt: Halt | undefined;
  let textPending = false;
  /** Discord's answer when it said the channel is gone for the bot. */
  let unreachable: string | undefined;

  const record = async (keys: readonly string[], result: StepResult) => {
    for (const key of keys) await progress?.step(key, result);
  };
  /** Sends one step (its nonce from `keys`); records it `sent` unless it is a notice. */
  const attempt = async (
    keys: readonly string[],
    draft: MessageDraft,
    recorded = true,
  ): Promise<Attempt> => {
    if (halt === undefined && signal?.aborted) halt = { kind: "stopped" };
    if (halt !== undefined) return { status: "halted" };
    const nonceKey = keys.join("\n");
    const nonce = progress === undefined ? newNonce() : stepNonce(progress.replyId, nonceKey);
    try {
      await outbox.create(channelId, { ...draft, replyTo }, nonce, signal);
    } catch (error) {
      halt = haltFor(error, signal);
      if (chatUnreachable(error) && error instanceof Error) unreachable ??= error.message;
      return halt === undefined ? { status: "failed", error } : { status: "halted" };
    }
    replyTo = undefined;
    if (recorded) await record(keys, "sent");
    return { status: "sent" };
  };

  const parts =
    reply.text.trim() === ""
      ? []
      : replyParts(reply.text, {
          maxLength: DiscordTextLimit,
          maxChunks: delivery.maxTextChunks,
          platform: "discord",
          format: reply.format,
        });
  for (const [index, part] of parts.entries()) {
    const key = textStepKey(index);
    if (!sendsAgain(done.get(key), DiscordIdempotence)) continue;
    const result = await attempt(
      [key],
      part.kind === "text" ? { content: part.text } : { memoryFiles: [part] },
    );
    if (result.status === "sent") continue;
    // A part refused for good is recorded `failed`: not pending, the outbox says so instead.
    if (result.status === "halted") textPending = true;
    if (result.status === "failed") {
      log.error(
        { channelId, chunk: index, err: describeError(result.error) },
        "discord reply text not delivered",
      );
      await record([key], "failed");
    }
  }

  const ready = reply.plan.ready();
  const outcomes = new Map<ReadyMedia, DeliveryOutcome>();
  const todo: ReadyMedia[] = [];
  for (const item of ready) {
    const earlier = earlierOutcome(item, done.get(mediaKey(item)), DiscordIdempotence);
    if (earlier === undefined) todo.push(item);
    else outcomes.set(item, earlier);
  }
  const { batches, tooLarge } = batchFiles(todo, limitBytes);
  const queue = [...batches];
  while (queue.length > 0) {
    const batch = queue.shift()!;
    const keys = batch.map(mediaKey);
    const result = await attempt(keys, { files: batch });
    if (result.status === "halted") continue;
    if (result.status === "sent") {
      for (const item of batch) {
        outcomes.set(item, { status: "delivered", path: item.path, kind: item.kind });
      }
      continue;
    }
    log.warn(
      { channelId, files: batch.map((item) => item.filename), err: describeError(result.error) },
      "discord attachment upload failed",
    );
    if (batch.length > 1 && isRefusal(result.error)) {
      queue.unshift(...batch.map((item) => [item]));
      continue;
    }
    const message = result.error instanceof Error ? result.error.message : String(result.error);
    for (const item of batch) {
      outcomes.set(item, { status: "upload_failed", path: item.path, error: message });
    }
    await record(keys, "failed");
  }

  const notices: string[] = [];
  const refused = new Map<ReadyMedia, DeliveryOutcome>();
  for (const item of tooLarge) {
    const notice = noticeFor({ ...item, status: "too_large", limit: limitBytes });
    refused.set(item, { status: "upload_failed", path: item.path, error: notice ?? "too large" });
    if (notice !== undefined) notices.push(notice);
  }
  const noticeChunks =
    notices.length === 0 ? [] : splitText(notices.join("\n"), { maxLength: DiscordTextLimit });
  for (const [index, content] of noticeChunks.entries()) {
    replyTo = undefined;
    const key = formatStepKey({ kind: "notice", index });
    const result = await attempt([key], { content }, false);
    if (result.status === "failed") {
      log.warn({ channelId, err: describeError(result.error) }, "discord notice failed");
    }
  }
  if (halt === undefined) {
    for (const [item, outcome] of refused) {
      outcomes.set(item, outcome);
      await record([mediaKey(item)], "failed");
    }
  }

  return {
    outcomes: ready.map((item) => outcomes.get(item) ?? undone(item, halt)),
    ...(halt?.kind === "rate_limited" ? { retryAfterSeconds: halt.retryAfterSeconds } : {}),
    ...(textPending ? { textPending: true } : {}),
    ...(unreachable === undefined ? {} : { unreachable }),
  };
}

/** A failure that ends the delivery (the rest stays undone), or undefined for one bad step. */
function haltFor(error: unknown, signal: AbortSignal | undefined): Halt | undefined {
  if (signal?.aborted) return { kind: "stopped" };
  if (error instanceof RateLimitedError) {
    return { kind: "rate_limited", retryAfterSeconds: error.retryAfterSeconds };
  }
  if (error instanceof DiscordRequestError && error.status === 401) return { kind: "stopped" };
  return undefined;
}

/** Discord said no to the request itself (4xx other than 429), as opposed to failing. */
function isRefusal(error: unknown): boolean {
  return (
    error instanceof DiscordRequestError &&
    error.status !== undefined &&
    error.status >= 400 &&
    error.status < 500
  );
}

/** The outcome of a file a halted delivery did not get to. */
function undone(item: ReadyMedia, halt: Halt | undefined): DeliveryOutcome {
  return halt?.kind === "rate_limited"
    ? { status: "rate_limited", path: item.path, retryAfterSeconds: halt.retryAfterSeconds }
    : { status: "pending", path: item.path };
}
