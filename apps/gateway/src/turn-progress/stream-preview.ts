import { type ChatTarget, StatusCallError, type StatusMessages } from "../channels/types.js";
import { Defaults } from "../defaults.js";
import { type RenderPlatform, render, type TextFormat } from "../delivery/render/render.js";
import { replyParts } from "../delivery/reply-parts.js";
import { type ProgressClock, ProgressDefaults, RealProgressClock } from "./progress.js";

/**
 * How a turn's reply text shows while the agent writes it (docs/streaming.md): `draft`
 * (Telegram's `sendMessageDraft`, private chats) or `edit` (one message edited, a new one
 * past the platform's length).
 */
export type PreviewMode = "draft" | "edit";

/** Where a reply goes and how it is shown (docs/formatting.md). */
export interface PreviewRender {
  readonly platform: RenderPlatform;
  readonly format: TextFormat;
}

/**
 * What the chat sees of `text` while it streams, message by message: the final reply's text
 * messages as {@link replyParts} makes them (split, and past `maxChunks` their head ending
 * with the cut notice), so a preview never takes more messages than its final, nor shows a
 * cut notice the final will not have. A message the final sends as Telegram HTML (a `markdown`
 * reply) shows its visible text (`plain`: a link's label without its URL, no markers): a
 * preview is plain text, and the raw Markdown of a link-heavy answer is far longer than what
 * its messages show. Elsewhere a message shows its text as sent (on Discord, Markdown that
 * Discord renders; a `plain` reply escaped).
 */
export function previewChunks(
  text: string,
  limit: StatusMessages["textLimit"],
  shownAs: PreviewRender,
): string[] {
  const { maxLength, measure, maxChunks } = limit;
  const { platform, format } = shownAs;
  const parts =
    maxChunks === undefined
      ? render(platform, text, format, { maxLength, measure })
      : replyParts(text, { maxLength, measure, maxChunks, platform, format }).flatMap((part) =>
          part.kind === "text" ? [part] : [],
        );
  return parts.map((part) => (part.parseMode === undefined ? part.text : part.plain));
}

/**
 * Where the preview keeps the messages it posted (the turn's journal entry) so a restart can
 * clear those a crash left behind (docs/durability.md). The first one is the turn's status
 * message (the one `TurnProgress` posted, or the preview's first post); the others are the
 * rollovers past the platform's length.
 */
export interface PreviewLedger {
  /** The preview's first message was posted as `messageId` (none was adopted). */
  first(messageId: string): Promise<void>;
  /** Every rollover message posted so far, in order. */
  rollovers(messageIds: readonly string[]): Promise<void>;
  /** Every preview message is gone. */
  gone(): Promise<void>;
}

/** Options of {@link StreamPreview}. */
export interface StreamPreviewOptions {
  readonly mode: PreviewMode;
  readonly clock?: ProgressClock | undefined;
  /** Bound of one call. Default: `Defaults.progress.requestTimeoutMs`. */
  readonly requestTimeoutMs?: number | undefined;
  /** Added to the platform's edit interval. Default: `Defaults.progress.previewMarginMs`. */
  readonly marginMs?: number | undefined;
  /** Calls failing in a row (not counting rate limits) before the preview stops. */
  readonly maxFailures?: number | undefined;
  readonly onProblem?: ((what: string, error: unknown) => void) | undefined;
  readonly ledger?: PreviewLedger | undefined;
  /**
   * Asked once, when the first text is to show, for the turn's status message to take over
   * (`edit`) or to make it go (`draft`): one message per turn shows progress. Resolves with
   * the status message's id when there is one to adopt.
   */
  readonly takeOver?: ((mode: PreviewMode) => Promise<string | undefined>) | undefined;
  /** A draft id for the turn (non-zero); the rollovers count up from it. Default: from the clock. */
  readonly draftId?: number | undefined;
  /**
   * Nothing shows before this much time since the preview was made: the text pushed until then
   * shows together when it passes, and a turn that ends first shows none (its reply is the
   * only message). The `shell` agent's output waits as long as the status message does
   * (`progress.afterSeconds`), so a quick command's output never flashes by. Default 0.
   */
  readonly holdMs?: number | undefined;
  /**
   * Where the reply goes and how it is shown (docs/formatting.md): the preview is split
   * exactly as the reply's messages will be ({@link previewChunks}). Default: the console's
   * (the text as written).
   */
  readonly render?: PreviewRender | undefined;
}

interface Shown {
  readonly id: string;
  text: string;
}

/**
 * The preview of one turn's reply while it streams (docs/streaming.md). {@link push} appends
 * text; at most one call per the platform's edit interval (`StatusMessages.editIntervalMs`)
 * shows it: in `edit` mode the current message is edited, or, once the text passes the
 * platform's length (split as the final reply is), the last one is completed and a new one
 * posted; in `draft` mode the current chunk goes out as a draft (a new draft id per chunk).
 *
 * Best effort, like the status message: one try per call, never a repeated post (a post whose
 * answer was lost may be in the chat; one refused by a rate limit was not posted, and goes out
 * once the wait passed), a rate limit pauses the preview for as long as the platform asked,
 * `maxFailures` failures in a row stop it, and a draft the platform refused (a 4xx) switches
 * to `edit`; a draft lost on the way (a timeout, a 5xx) is only a failure, its chunk drafted
 * again at the next call. The final reply never depends on it: it goes through the outbox,
 * and {@link finish} then deletes every preview message (drafts vanish on their own).
 */
export class StreamPreview {
  readonly #status: StatusMessages;
  readonly #target: ChatTarget;
  readonly #clock: ProgressClock;
  readonly #intervalMs: number;
  readonly #requestTimeoutMs: number;
  readonly #maxFailures: number;
  readonly #onProblem: (what: string, error: unknown) => void;
  readonly #ledger: PreviewLedger | undefined;
  readonly #takeOver: StreamPreviewOptions["takeOver"];
  readonly #draftId: number;
  readonly #shownAs: PreviewRender;
  #mode: PreviewMode;
  #text = "";
  #rendered: { readonly text: string; readonly chunks: string[] } | undefined;
  #shown: Shown[] = [];
  #draftShown: { index: number; text: string } | undefined;
  #started = false;
  #stopped = false;
  #cancel: (() => void) | undefined;
  #inFlight: Promise<void> = Promise.resolve();
  #pausedUntilMs = 0;
  #lastCallMs = Number.NEGATIVE_INFINITY;
  #failures = 0;
  #finished: Promise<void> | undefined;
  #holding = false;
  #cancelHold: (() => void) | undefined;
  /** Calls that got through (posts, edits, drafts), for the turn's report. */
  calls = 0;

  constructor(status: StatusMessages, target: ChatTarget, options: StreamPreviewOptions) {
    this.#status = status;
    this.#target = target;
    this.#mode = options.mode === "draft" && status.draft === undefined ? "edit" : options.mode;
    this.#clock = options.clock ?? RealProgressClock;
    this.#intervalMs =
      Math.max(ProgressDefaults.minEveryMs, status.editIntervalMs(target)) +
      (options.marginMs ?? Defaults.progress.previewMarginMs);
    this.#requestTimeoutMs = options.requestTimeoutMs ?? ProgressDefaults.requestTimeoutMs;
    this.#maxFailures = options.maxFailures ?? ProgressDefaults.maxFailedEdits;
    this.#onProblem = options.onProblem ?? (() => {});
    this.#ledger = options.ledger;
    this.#takeOver = options.takeOver;
    this.#shownAs = options.render ?? { platform: "console", format: "plain" };
    this.#draftId = options.draftId ?? (Math.floor(this.#clock.now()) % 1_000_000_000) + 1;
    const holdMs = options.holdMs ?? 0;
    if (holdMs > 0) {
      this.#holding = true;
      this.#cancelHold = this.#clock.schedule(() => {
        this.#holding = false;
        this.#cancelHold = undefined;
        if (this.#text !== "") this.#start();
      }, holdMs);
    }
  }

  /** The mode in use (a refused draft turns it to `edit`). */
  get mode(): PreviewMode {
    return this.#mode;
  }

  /** Whether any text was pushed. */
  get started(): boolean {
    return this.#started;
  }

  /** The preview messages in the chat now, in order. */
  get messageIds(): readonly string[] {
    return this.#shown.map((shown) => shown.id);
  }

  /** Appends `piece` to the text; it shows at the next call the pace allows. */
  push(piece: string): void {
    if (this.#stopped || piece === "") return;
    this.#text += piece;
    if (this.#holding) return;
    if (!this.#started) {
      this.#start();
      return;
    }
    this.#schedule();
  }

  #start(): void {
    if (this.#stopped || this.#started) return;
    this.#started = true;
    this.#inFlight = this.#begin();
  }

  /**
   * Stops showing and waits for a call in flight: the agent is done, and nothing of the
   * preview may land after the final reply. Never rejects; safe to call again.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelHold?.();
    this.#cancelHold = undefined;
    this.#cancel?.();
    this.#cancel = undefined;
    await this.#inFlight;
  }

  /**
   * Stops showing, waits for a call in flight and deletes every preview message (once the
   * final reply's delivery attempt ended): a failed delete is made once more, and a message
   * it still leaves is edited to {@link PreviewEndedNote}. Never rejects; safe to call twice.
   */
  finish(): Promise<void> {
    this.#finished ??= this.#finish();
    return this.#finished;
  }

  async #begin(): Promise<void> {
    const adopted = await this.#takeOver?.(this.#mode).catch((error: unknown) => {
      this.#onProblem("the status message could not hand over to the preview", error);
      return undefined;
    });
    if (adopted !== undefined && this.#mode === "edit") this.#shown.push({ id: adopted, text: "" });
    await this.#show();
  }

  #schedule(): void {
    if (this.#stopped || this.#cancel !== undefined) return;
    const now = this.#clock.now();
    const wait = Math.max(this.#lastCallMs + this.#intervalMs, this.#pausedUntilMs) - now;
    this.#cancel = this.#clock.schedule(
      () => {
        this.#cancel = undefined;
        this.#inFlight = this.#inFlight.then(() => this.#show());
      },
      Math.max(0, wait),
    );
  }

  /** One call, if the text shown is behind; then the next is scheduled. */
  async #show(): Promise<void> {
    if (this.#stopped) return;
    const now = this.#clock.now();
    if (now < this.#pausedUntilMs || now < this.#lastCallMs + this.#intervalMs) {
      this.#schedule();
      return;
    }
    const call = this.#mode === "draft" ? this.#nextDraft() : this.#nextEdit();
    if (call === undefined) return;
    this.#lastCallMs = now;
    try {
      await call();
      this.calls += 1;
      this.#failures = 0;
    } catch (error) {
      this.#failed(error);
    }
    if (this.#behind()) this.#schedule();
  }

  /**
   * The messages the text takes, as the final reply's will be ({@link previewChunks}). Kept
   * until the text grows: a call asks twice (what to send, then whether it is still behind),
   * and rendering a Telegram Markdown reply's 80,000-character head took 90 ms here (15 ms for
   * 4,000 characters).
   */
  #chunks(): string[] {
    if (this.#rendered?.text !== this.#text) {
      this.#rendered = {
        text: this.#text,
        chunks: previewChunks(this.#text, this.#status.textLimit, this.#shownAs),
      };
    }
    return this.#rendered.chunks;
  }

  #behind(): boolean {
    if (this.#stopped) return false;
    const chunks = this.#chunks();
    if (this.#mode === "draft") {
      const last = chunks.length - 1;
      return this.#draftShown?.index !== last || this.#draftShown.text !== chunks[last];
    }
    return (
      chunks.length > this.#shown.length ||
      this.#shown.some((shown, index) => shown.text !== chunks[index])
    );
  }

  #nextDraft(): (() => Promise<void>) | undefined {
    const chunks = this.#chunks();
    const index = chunks.length - 1;
    const text = chunks[index];
    const draft = this.#status.draft;
    if (text === undefined || draft === undefined) return undefined;
    if (this.#draftShown?.index === index && this.#draftShown.text === text) return undefined;
    return async () => {
      await draft.call(this.#status, this.#target, this.#draftId + index, text, this.#bound());
      this.#draftShown = { index, text };
    };
  }

  /**
   * The next edit-mode call: complete or update a message whose text is behind (oldest
   * first), else post the next chunk.
   */
  #nextEdit(): (() => Promise<void>) | undefined {
    const chunks = this.#chunks();
    const stale = this.#shown.findIndex((shown, index) => shown.text !== chunks[index]);
    const staleShown = this.#shown[stale];
    const staleText = chunks[stale];
    if (staleShown !== undefined && staleText !== undefined) {
      return async () => {
        await this.#status.edit(this.#target, staleShown.id, staleText, this.#bound(), {
          verbatim: true,
        });
        staleShown.text = staleText;
      };
    }
    const next = chunks[this.#shown.length];
    if (next === undefined) return undefined;
    return async () => {
      const id = await this.#posted(next);
      this.#shown.push({ id, text: next });
      await this.#record();
    };
  }

  async #posted(text: string): Promise<string> {
    try {
      return await this.#status.post(this.#target, text, this.#bound(), { verbatim: true });
    } catch (error) {
      // Never posted again: a post whose answer was lost may be in the chat already. A rate
      // limit is an answer that nothing was posted: the preview pauses and posts it then.
      if (!(error instanceof StatusCallError && error.retryAfterMs !== undefined)) {
        this.#stopped = true;
      }
      throw error;
    }
  }

  async #record(): Promise<void> {
    const [first, ...rollovers] = this.#shown;
    try {
      if (rollovers.length === 0 && first !== undefined) await this.#ledger?.first(first.id);
      else await this.#ledger?.rollovers(rollovers.map((shown) => shown.id));
    } catch (error) {
      this.#onProblem("could not record a preview message", error);
    }
  }

  #failed(error: unknown): void {
    const retryAfterMs = error instanceof StatusCallError ? error.retryAfterMs : undefined;
    if (retryAfterMs !== undefined) {
      this.#pausedUntilMs = this.#clock.now() + retryAfterMs;
      this.#onProblem(`preview rate limited; pausing it for ${retryAfterMs} ms`, error);
      return;
    }
    if (this.#mode === "draft" && refusedByPlatform(error)) {
      this.#mode = "edit";
      this.#onProblem("the platform refused the draft; the preview edits a message instead", error);
      return;
    }
    this.#failures += 1;
    if (this.#stopped || this.#failures >= this.#maxFailures) {
      this.#stopped = true;
      this.#onProblem("the preview stopped after failed calls", error);
      return;
    }
    this.#onProblem("a preview call failed; trying again at the next one", error);
  }

  async #finish(): Promise<void> {
    await this.stop();
    if (this.#shown.length === 0) return;
    const results = await Promise.all(this.#shown.map((shown) => this.#clear(shown.id)));
    if (!results.every(Boolean)) return;
    try {
      await this.#ledger?.gone();
    } catch (error) {
      this.#onProblem("could not record the preview messages gone", error);
    }
  }

  /**
   * Deletes one preview message; when that fails, once more (after the wait a rate limit asked
   * for, up to `Defaults.progress.leftoverMaxWaitMs`), a message already gone counting as
   * deleted; when that fails too, edits it to {@link PreviewEndedNote}, so no partial answer
   * stays in the chat looking like a reply. False when none of it got through (the partial
   * text stays, and the ledger keeps the message).
   */
  async #clear(id: string): Promise<boolean> {
    const remove = () => this.#status.remove(this.#target, id, this.#bound());
    let failure: unknown;
    try {
      await remove();
      return true;
    } catch (error) {
      failure = error;
      this.#onProblem("could not delete a preview message; trying once more", error);
    }
    const waitMs = failure instanceof StatusCallError ? (failure.retryAfterMs ?? 0) : 0;
    if (waitMs <= Defaults.progress.leftoverMaxWaitMs) {
      if (waitMs > 0) await new Promise<void>((done) => this.#clock.schedule(done, waitMs));
      try {
        await remove();
        return true;
      } catch (error) {
        if (alreadyGone(error)) return true;
        this.#onProblem("could not delete a preview message again; marking it ended", error);
      }
    }
    try {
      await this.#status.edit(this.#target, id, PreviewEndedNote, this.#bound(), {
        verbatim: true,
      });
      return true;
    } catch (error) {
      this.#onProblem("could not mark a preview message ended; it stays as it is", error);
      return false;
    }
  }

  #bound(): AbortSignal {
    return AbortSignal.timeout(this.#requestTimeoutMs);
  }
}

/**
 * What a preview message that could not be deleted is edited to: the partial text would read
 * as an answer, and the reply (or the turn's failure line) is below it.
 */
export const PreviewEndedNote = "✏️ (preview ended: the reply is below)";

/**
 * Whether a delete failed because the message is not there (Discord's 404, Telegram's 400
 * "message to delete not found"): the first attempt deleted it and only its answer was lost.
 */
function alreadyGone(error: unknown): boolean {
  if (!(error instanceof StatusCallError)) return false;
  return error.status === 404 || (error.status === 400 && /not found/i.test(error.message));
}

/**
 * Whether the platform answered a call with a refusal (a 4xx): a bot or client without
 * drafts. A timeout, a lost connection or a 5xx says nothing about drafts.
 */
function refusedByPlatform(error: unknown): boolean {
  return (
    error instanceof StatusCallError &&
    error.status !== undefined &&
    error.status >= 400 &&
    error.status < 500
  );
}
