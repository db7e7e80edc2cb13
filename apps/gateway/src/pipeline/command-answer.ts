import type { JournalOutcome, OutboxRecord } from "../durable/types.js";
import { finishEntry } from "./journal-steps.js";
import { type AnswerCollector, type MessageContext, sayNow } from "./types.js";

/**
 * What a command (or another step answering a message itself) says, collected while it runs:
 * {@link answerAndFinish} records it with the close of the message's journal entry and
 * delivers it through the outbox, so a crash neither loses nor repeats it (docs/durability.md,
 * "Command answers"). Set on the context as `ctx.answer`, it catches every `say`.
 */
export class CommandAnswer implements AnswerCollector {
  readonly #lines: string[] = [];
  #post: (() => Promise<boolean>) | undefined;

  /** Adds a line to the answer. */
  add(text: string): void {
    this.#lines.push(text);
  }

  /**
   * The answer is posted with buttons by `post` (false: it was not, as on a channel without
   * buttons); `text` is what the chat gets instead, with typed answers: when `post` declines,
   * and after a crash between the record and the post (a question's buttons live in the
   * process that posted them).
   */
  offer(text: string, post: () => Promise<boolean>): void {
    this.#lines.push(text);
    this.#post = post;
  }

  /** The answer's text; undefined when nothing was said. */
  get text(): string | undefined {
    const text = this.#lines.join("\n");
    return text.trim() === "" ? undefined : text;
  }

  /** How the answer is posted with buttons, if it is. */
  get post(): (() => Promise<boolean>) | undefined {
    return this.#post;
  }
}

/**
 * Closes the message's journal entry with `outcome` and `text` (if any) as its answer, recorded
 * with the close and delivered through the outbox ({@link answerAndFinish}).
 */
export async function sayAndFinish(
  ctx: MessageContext,
  text: string | undefined,
  outcome: JournalOutcome,
): Promise<void> {
  const answer = new CommandAnswer();
  if (text !== undefined) answer.add(text);
  await answerAndFinish(ctx, outcome, answer);
}

/**
 * Closes the message's journal entry with `outcome`, with `answer` recorded in the same write
 * and then delivered through the outbox, like a turn's reply: a crash before the record runs
 * the message again (nothing of it reached the chat), one after it delivers the answer on the
 * next start. An answer posted with buttons, or through a handle only this process holds (a
 * Discord slash command's ephemeral reply; also the typed form of a question whose buttons
 * could not be posted), is sent that way with its first step marked `sending` first
 * (Outbox#sendOwnWay). When the journal cannot take the record, the answer is
 * sent directly and the entry closed after it, as before.
 */
export async function answerAndFinish(
  ctx: MessageContext,
  outcome: JournalOutcome,
  answer: CommandAnswer,
): Promise<void> {
  const text = answer.text;
  if (text === undefined) {
    await finishEntry(ctx, outcome);
    return;
  }
  const { outbox } = ctx.services;
  const sessionKey = ctx.session?.sessionKey;
  let record: OutboxRecord;
  try {
    record = await outbox.record(
      {
        profile: ctx.message.profile,
        platform: ctx.message.platform,
        sessionKey: sessionKey ?? "",
        slot: ctx.slot ?? ctx.runtime.slotFor(sessionKey),
        target: ctx.target,
        text,
        plain: true,
      },
      ctx.entryId,
      ctx.mergedEntryIds,
      outcome,
    );
  } catch (error) {
    ctx.log.error({ err: error, outcome }, "could not record the answer; sending it directly");
    if (answer.post === undefined || !(await answer.post())) await sayNow(ctx, text);
    await finishEntry(ctx, outcome);
    return;
  }
  const { post } = answer;
  const { channel, target } = ctx;
  if (post !== undefined) {
    if (await outbox.sendOwnWay(record, async () => ((await post()) ? "sent" : "declined"))) return;
  }
  // Also when its buttons could not be posted: a Discord slash command is answered through its
  // interaction, which works where the bot may not post in the chat at all (50013).
  if (channel.answersInPlace?.(target) === true) {
    const sent = await outbox.sendOwnWay(record, async () => {
      await channel.sendText(target, text, outbox.signal);
      return "sent";
    });
    if (sent) return;
  }
  const { result } = await outbox.deliver(record);
  ctx.log.debug({ replyId: record.id, result, outcome }, "answer delivery attempt ended");
}
