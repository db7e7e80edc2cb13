import { MediagateError } from "@mediagate/io";
import type { MediaOutcome, MediaPlan, UploadLimits } from "@mediagate/media";

/** Chat platforms the gateway serves. */
export type Platform = "telegram" | "discord" | "console";

/** docs/sessions.md: how the chat is keyed. Supergroups and guild text channels are `group`. */
export type ChatType = "dm" | "group" | "channel";

/** One message as the core sees it, whatever platform it came from. Ids are strings. */
export interface InboundMessage {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatId: string;
  readonly chatType: ChatType;
  readonly chatName?: string | undefined;
  /** Telegram forum topic id or Discord thread id; threads are their own sessions. */
  readonly threadId?: string | undefined;
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly messageId: string;
  readonly text: string;
  /**
   * When the platform says the message was sent, by its clock: Telegram's `date` (whole
   * seconds), the Discord message's or slash command's timestamp. A typed approval answer
   * decides no question asked after it (docs/approvals.md). Absent for the console and
   * scheduled runs, and in messages recorded by a version before it.
   */
  readonly sentAtMs?: number | undefined;
  /**
   * What the platform redelivers the message under, unique per profile and platform: the
   * Telegram `update_id`, the Discord message id. The journal dedupes on it (docs/durability.md).
   */
  readonly receiptId: string;
  /**
   * The receipt ids of every platform message merged into this one (a Telegram album's
   * `update_id`s), in order, `receiptId` first; absent for a message of one receipt. The
   * journal records the message by each of them: one already recorded is never handed on
   * again, and the items offered again beside it are a message of their own
   * (docs/durability.md).
   */
  readonly receiptIds?: readonly string[] | undefined;
  /**
   * Files sent with the message (an album's files, a Discord message's attachments), in the
   * order sent; absent or empty for a text message. References only: nothing is downloaded
   * before the sender is authorized (docs/inbound-media.md).
   */
  readonly attachments?: readonly InboundAttachment[] | undefined;
  /**
   * Set on an item of an album that arrived alone (a Telegram webhook posts each item as a
   * request of its own): the gateway records it at once, then runs the items of one album as
   * one message, once none came for a while (docs/telegram-webhooks.md, "Albums").
   */
  readonly album?: InboundAlbum | undefined;
  /**
   * Set on a run of a scheduled task (docs/schedules.md): no platform message is behind it, so
   * its reply quotes nothing and nothing reacts on `messageId`. `operator`: a task of the
   * config's `schedules.tasks`, which runs whoever the config's lists allow.
   */
  readonly scheduled?: ScheduledRunInfo | undefined;
}

/** The album an {@link InboundMessage} is one item of. */
export interface InboundAlbum {
  /** Names the album within the profile and platform; one sender's in one chat. */
  readonly key: string;
  /**
   * Whether this item alone is for the bot (a group's `requireMention`: only the item with
   * the caption mentions it); the album runs when one of its items is.
   */
  readonly addressed: boolean;
}

/** Which task and due time a scheduled run is (its receipt id is `task:<taskId>:<dueMs>`). */
export interface ScheduledRunInfo {
  readonly taskId: string;
  readonly dueMs: number;
  readonly operator?: boolean | undefined;
}

/** How the platform labelled a file a user sent. */
export type AttachmentSentAs =
  | "photo"
  | "document"
  | "audio"
  | "voice"
  | "video"
  | "video_note"
  | "animation"
  | "file";

/**
 * A file a user sent, as its channel saw it: what it is and how to fetch it, not its bytes.
 * Plain JSON: the journal keeps it with the message, and a message run again after a restart
 * fetches its files again.
 */
export interface InboundAttachment {
  /** The name it was sent with, or one the channel made up (`photo.jpg`); any string. */
  readonly name: string;
  readonly sentAs: AttachmentSentAs;
  /** The size the platform announced, if it did: over the limit, nothing is fetched. */
  readonly size?: number | undefined;
  /** The MIME type the platform announced, if any (the saved file's kind comes from its bytes). */
  readonly mime?: string | undefined;
  /** What the channel fetches it by: a Telegram `file_id`, a Discord URL, a host path. */
  readonly ref: string;
}

/**
 * A file could not be fetched from its platform; `reason` is shown to the user after the
 * file's name ("could not be downloaded: <reason>"), so it names no token or URL.
 */
export class AttachmentFetchError extends MediagateError {
  override readonly name = "AttachmentFetchError";
  readonly code = "MG_ATTACHMENT_FETCH_FAILED";
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
  }
}

/**
 * Receives one message and resolves once it is durably recorded (the journal) by each of its
 * receipt ids. A channel confirms a message to its platform only after this resolved. When it
 * rejects (the journal cannot be written, e.g. a full disk, or some of its receipt ids were
 * recorded with another message while the others were not) the message is not confirmed:
 * Telegram keeps the update and the channel offers the same message again after a backoff,
 * and later ones wait (handed on already when they came in the same answer, told so through
 * `InboundOptions.after`); Discord retries in memory and the next start's catch-up finds it.
 */
export type InboundHandler = (message: InboundMessage, options?: InboundOptions) => Promise<void>;

/** What a channel may tell its {@link InboundHandler} beside the message. */
export interface InboundOptions {
  /**
   * The channel's message ahead of this one, when the channel hands this one on before that
   * one was handled (Telegram's poller hands on every update of a `getUpdates` answer at
   * once, so that their records share one commit): resolves `true` once that one was handed
   * on, `false` when it will not be in this process (the channel stopped first). The handler
   * records this message at once and runs it only after that: order is kept. When it
   * resolves `false`, this message stays recorded and not run, for the next start.
   */
  readonly after?: Promise<boolean> | undefined;
}

/** How a channel's connection to its platform is doing (docs/durability.md). */
export type ChannelState =
  /** Not started yet, or starting. */
  | "starting"
  /** Receiving: the last long poll (Telegram) or the websocket (Discord) is healthy. */
  | "up"
  /** A transient failure (network, 5xx, 409 Conflict, a hung poll); retrying with backoff. */
  | "retrying"
  /** Gave up for good (401: the token was revoked); the process exits non-zero. */
  | "failed"
  /** Stopped by the gateway. */
  | "stopped";

/** A channel's health, for `/status`, `doctor` and the health endpoint. Token-free. */
export interface ChannelHealth {
  readonly platform: Platform;
  readonly profile: string;
  readonly state: ChannelState;
  /** When `state` last changed (epoch ms). */
  readonly sinceMs: number;
  /** Last time the platform answered a receive call (getUpdates, a heartbeat ack) (epoch ms). */
  readonly lastOkMs?: number | undefined;
  /** Why it is not `up` (the last error, token-free), if it is not. */
  readonly detail?: string | undefined;
  /** How updates arrive, for a channel that has a choice (Telegram: long polling or a webhook). */
  readonly mode?: "polling" | "webhook" | undefined;
  /**
   * The platform's last error delivering to the webhook (Telegram's getWebhookInfo
   * `last_error_message`, with its time), while it is the latest news about the webhook.
   */
  readonly webhookError?: { readonly message: string; readonly atMs: number } | undefined;
  /**
   * In a cluster (docs/cluster.md): another replica polls this bot or holds its Discord
   * connection; this one sends, and takes over when that one stops or dies.
   */
  readonly standby?: true | undefined;
}

/** What {@link ChannelAdapter.start} is given. */
export interface ChannelStartOptions {
  readonly onMessage: InboundHandler;
  /**
   * Called once when the channel cannot go on (e.g. 401: the bot token was revoked). The
   * gateway stops and the process exits non-zero so a service manager restarts or alerts.
   */
  readonly onFatal: (error: Error) => void;
  /**
   * Makes every message `onMessage` resolved for durable against a power cut (the journal's
   * `sync`). A channel that confirms messages to its platform (Telegram's next `getUpdates`
   * offset) calls it first; the gateway passes it. Absent: what `onMessage` resolved for is
   * already as durable as it gets.
   */
  readonly flush?: () => Promise<void>;
  /**
   * The journal's cursors of the channel's profile: the newest recorded message of each chat.
   * A channel whose platform redelivers nothing (Discord) reads them at the start of every
   * gateway session and fetches what each chat received after its cursor; the gateway passes
   * it. Absent: no catch-up.
   */
  readonly cursors?: () => Promise<readonly ChatCursor[]>;
  /**
   * Which of `receiptIds` the journal already holds, recorded with any message. A channel that
   * merges several platform messages into one (a Telegram album) asks before it hands a merged
   * message on, and leaves out the messages recorded before: an album offered again after a
   * crash with more items than were recorded runs only the new ones (docs/durability.md).
   * Rejects like `onMessage` when the journal cannot be read. Absent: none are recorded.
   */
  readonly recorded?: (receiptIds: readonly string[]) => Promise<ReadonlySet<string>>;
  /**
   * Someone pressed a button of a message posted with {@link ChoiceButtons.post}. Resolves
   * with what the presser is told and what the message becomes; a channel answers the
   * platform with it (Telegram: `answerCallbackQuery`, then `editMessageText` without the
   * keyboard; Discord: the interaction's `update` or an ephemeral reply, within its 3 s).
   * Absent: presses are answered "this button does nothing now".
   */
  readonly onChoice?: (press: ChoicePress) => Promise<ChoiceAnswer>;
}

/**
 * One button of a choice message. `data` travels through the platform and comes back with
 * a press: at most {@link ChoiceDataMaxBytes} bytes (Telegram's `callback_data` limit; Discord
 * allows 100), built and read with choices/choice-data.ts. Anyone who can see the message can
 * press it, and a modified client can send any data: the receiver checks both.
 */
export interface ChoiceButton {
  readonly label: string;
  readonly data: string;
  /** How the platform draws it, where it can (Discord): the safe choice, a risky one, or neither. */
  readonly style?: "primary" | "danger" | "secondary" | undefined;
}

/** Telegram's `callback_data` limit, in bytes (UTF-8); Discord's `custom_id` allows 100. */
export const ChoiceDataMaxBytes = 64;

/** A press of a choice button, as the channel received it. Untrusted: `data` may be forged. */
export interface ChoicePress {
  readonly profile: string;
  readonly platform: Platform;
  /** The chat the pressed message is in (where the platform says it is, not what `data` says). */
  readonly chatId: string;
  readonly threadId?: string | undefined;
  /** The message whose button was pressed. */
  readonly messageId: string;
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly data: string;
}

/** What a press is answered with. */
export type ChoiceAnswer =
  /** The choice is made: the presser sees `notice` (if any), the message becomes `text` without buttons. */
  | { readonly kind: "decided"; readonly text: string; readonly notice?: string | undefined }
  /** Nothing changes: only the presser sees `notice` (a callback answer, an ephemeral reply). */
  | { readonly kind: "refused"; readonly notice: string };

/**
 * Messages with buttons (docs/approvals.md, "Buttons"): a question the chat answers by
 * pressing one. A channel without them (the console) gets typed answers instead. Each call is
 * one try bounded by `signal` and rejects with the platform's error.
 */
export interface ChoiceButtons {
  /** Posts `text` with `rows` of buttons; resolves with the message's id. */
  post(
    target: ChatTarget,
    text: string,
    rows: readonly (readonly ChoiceButton[])[],
    signal: AbortSignal,
  ): Promise<string>;
  /** Replaces the message's text and removes its buttons (a choice made elsewhere, an expiry). */
  close(target: ChatTarget, messageId: string, text: string, signal: AbortSignal): Promise<void>;
}

/** One step of a reply, as the outbox records it. */
export type StepResult =
  /** The platform confirmed it. */
  | "sent"
  /**
   * The request may or may not have gone through (the connection was lost after the body was
   * sent, a 5xx) and the ambiguity policy said not to resend it (docs/durability.md).
   */
  | "unconfirmed"
  /** The platform refused it for good (a 4xx other than 429); not retried. */
  | "failed"
  /**
   * Its request is about to go out: recorded before sending (Telegram), so a process that dies
   * before the answer is recorded leaves a trace. A resumed delivery decides by the platform's
   * `Idempotence` (durable/earlier-outcome.ts) instead of sending blindly again: under
   * `at-most-once` it is not sent again (`unconfirmed`), otherwise it is.
   */
  | "sending";

/**
 * Progress of one reply through its outbox record. Step keys are built and read with
 * durable/step-keys.ts: `text:<n>` for the n-th chunk (from 0) of the reply text as the
 * platform splits it, `media:<path>` for a ready item (every item of an album gets its own
 * key, with the album's result); a text sent as a caption counts as its chunk 0.
 */
export interface DeliveryProgress {
  /** Stable across restarts (the outbox id): Discord derives each create's nonce from it and the key. */
  readonly replyId: string;
  /** Steps already done by an earlier attempt: skip them. */
  readonly done: ReadonlyMap<string, StepResult>;
  /** Records a finished step; awaited before the next step starts. */
  step(key: string, result: StepResult): Promise<void>;
  /** Forgets a step recorded `sending` whose request is known not to have gone out. */
  clear(key: string): Promise<void>;
}

/** Options of {@link ChannelAdapter.deliver}. */
export interface DeliverOptions {
  readonly signal?: AbortSignal | undefined;
  readonly progress?: DeliveryProgress | undefined;
}

/** Where a reply goes. Adapters put it back in the same chat (and thread/topic). */
export interface ChatTarget {
  readonly platform: Platform;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  readonly replyToMessageId?: string | undefined;
}

/**
 * How a reply's text is shown (docs/formatting.md): `markdown` renders the agent's Markdown
 * natively (Telegram HTML, Discord's own Markdown); `plain` shows it exactly as written.
 */
export type TextFormat = "markdown" | "plain";

/**
 * How a delivered text is rendered: a profile's {@link TextFormat}, or `verbatim` for the
 * gateway's own words (a command's answer from the outbox): exactly as `sendText` sends them,
 * neither rendered nor escaped.
 */
export type ReplyFormat = TextFormat | "verbatim";

/**
 * A finished turn, ready to deliver. It carries session key and profile explicitly: delivery
 * must never depend on the turn that made it still running (docs/sessions.md, "Turns").
 */
export interface OutboundReply {
  readonly sessionKey: string;
  readonly profile: string;
  readonly target: ChatTarget;
  /** Reply text with delivered tags removed (MediaPlan.text). */
  readonly text: string;
  readonly plan: MediaPlan;
  /** How the text is shown; absent: `plain` (the gateway's own notices). */
  readonly format?: ReplyFormat | undefined;
}

/** What happened to one file the plan marked ready, after the upload was attempted. */
export type DeliveryOutcome =
  | { readonly status: "delivered"; readonly path: string; readonly kind: string }
  | { readonly status: "upload_failed"; readonly path: string; readonly error: string }
  | {
      readonly status: "rate_limited";
      readonly path: string;
      readonly retryAfterSeconds: number;
    }
  /** Sent, but the platform's answer was lost and the policy forbids resending (see {@link StepResult}). */
  | { readonly status: "unconfirmed"; readonly path: string }
  /** Not attempted: the delivery was aborted (shutdown); the outbox resumes it. */
  | { readonly status: "pending"; readonly path: string };

export interface DeliveryReport {
  /** One entry per ready media item of the plan, in plan order. */
  readonly outcomes: readonly DeliveryOutcome[];
  /**
   * Set when the platform asked for a wait longer than a delivery is held for: the steps not
   * recorded as done are left for the outbox to retry after this many seconds.
   */
  readonly retryAfterSeconds?: number | undefined;
  /**
   * Text parts still to send (skipped for a rate limit or an abort): the outbox tries them
   * again. A part the platform refused for good is recorded `failed` instead, and the chat is
   * told (docs/durability.md).
   */
  readonly textPending?: boolean | undefined;
  /**
   * Set when the platform said the chat is gone for the bot (blocked by the user, removed from
   * the group, deleted): its answer, token-free. The steps it refused are recorded `failed` as
   * any refused step is; a scheduled run counts it (docs/schedules.md, "Chats that are gone").
   */
  readonly unreachable?: string | undefined;
}

/**
 * A chat platform. The core calls `start` once with its message handler, and `deliver`
 * with each finished turn; notices for media the plan did not mark ready (unreachable,
 * denied, too large) are composed by the core and sent with `sendText`.
 */
export interface ChannelAdapter {
  readonly platform: Platform;
  /** Upload limits used when planning media for this platform. */
  readonly limits: UploadLimits;
  /**
   * Optional: the exact limits of one chat (e.g. a Discord guild's boosted limit). The core
   * plans with these when present, else with `limits`.
   */
  limitsFor?(target: ChatTarget): UploadLimits;
  /** The profile the channel serves. */
  readonly profile: string;
  /** Begin receiving; resolves once the platform connection is ready. */
  start(options: ChannelStartOptions): Promise<void>;
  /** The connection's current health. */
  health(): ChannelHealth;
  /**
   * Stop receiving. Sending (`sendText`, `deliver`, `showActivity`) must keep working after
   * it: the core stops receiving first, then drains the turns already in flight.
   */
  stop(): Promise<void>;
  /** Send plain text, split per the platform's limits. */
  sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void>;
  /**
   * Send reply text and every ready media item of the plan, skipping the steps
   * `options.progress` says are done and recording each one it finishes. Never throws for one
   * bad file. An aborted signal stops before the next step (the rest stays pending).
   */
  deliver(reply: OutboundReply, options?: DeliverOptions): Promise<DeliveryReport>;
  /**
   * Optional: how users address the bot in a group (`@username` on Telegram, the `<@id>`
   * mention on Discord), once known (after `start`). `/help` names it in groups.
   */
  addressedAs?(): string | undefined;
  /**
   * Optional: whether a text to `target` goes through a handle only this process holds (a
   * Discord slash command's deferred ephemeral reply). A command's answer to it is sent with
   * `sendText` once recorded, rather than by the outbox's steps (docs/durability.md).
   */
  answersInPlace?(target: ChatTarget): boolean;
  /**
   * Optional: the core is done with a message this channel handed over (its pipeline ended,
   * whether or not it answered). Discord answers a slash command the core said nothing to.
   */
  settled?(message: InboundMessage): Promise<void>;
  /** Show that the bot is working (typing). Best effort; never throws; gives up on `signal`. */
  showActivity(target: ChatTarget, signal?: AbortSignal): Promise<void>;
  /**
   * Inbound files (docs/inbound-media.md): the largest file saved, and how its bytes are
   * fetched, streamed. Called only for an authorized sender's message. `open` rejects with an
   * {@link AttachmentFetchError} (or any error) when the file cannot be had; the stream may
   * fail part-way. A channel without it refuses every file with a notice.
   */
  readonly attachments?: AttachmentFetcher | undefined;
  /**
   * Optional: one message the gateway posts while a long turn runs and edits with what it
   * does, then deletes (docs/sessions.md, "Live progress"). A channel without it (the console)
   * gets the one-time "still working" message instead.
   */
  readonly status?: StatusMessages | undefined;
  /**
   * Optional: the bot's reaction on a user's message telling where it is (docs/sessions.md,
   * "Status reactions"). A channel without it shows none.
   */
  readonly reactions?: StatusReactions | undefined;

  /**
   * Optional: messages with buttons; presses come to {@link ChannelStartOptions.onChoice}.
   * A channel without them (the console) gets the question as text with typed answers.
   */
  readonly choices?: ChoiceButtons | undefined;
}

/**
 * A turn's status message on a platform that can edit and delete its messages. Every call is
 * one try, bounded by `signal`, and never retried here: a status is best effort, and a post
 * repeated after a lost answer could leave two. Failures reject with a {@link StatusCallError}.
 */
export interface StatusMessages {
  /** The shortest wait between two edits the platform tolerates in this chat (ms). */
  editIntervalMs(target: ChatTarget): number;
  /**
   * The longest text one message may hold, how the platform measures it, and how many
   * messages a reply's text may take before it comes as `reply.txt` (`delivery.maxTextChunks`):
   * a streamed preview is split as the final reply will be.
   */
  readonly textLimit: {
    readonly maxLength: number;
    readonly measure?: ((text: string) => number) | undefined;
    readonly maxChunks?: number | undefined;
  };
  /**
   * Posts `text` (plain, no markup) in the chat; resolves with the message's id. `verbatim`:
   * the text is the reply's own (a streamed preview), not a status line to escape.
   */
  post(
    target: ChatTarget,
    text: string,
    signal: AbortSignal,
    options?: StatusTextOptions,
  ): Promise<string>;
  edit(
    target: ChatTarget,
    messageId: string,
    text: string,
    signal: AbortSignal,
    options?: StatusTextOptions,
  ): Promise<void>;
  remove(target: ChatTarget, messageId: string, signal: AbortSignal): Promise<void>;
  /**
   * Optional: shows `text` as a draft of the bot's next message (Telegram's
   * `sendMessageDraft`, private chats only; docs/streaming.md). Ephemeral: nothing to delete.
   */
  draft?(target: ChatTarget, draftId: number, text: string, signal: AbortSignal): Promise<void>;
}

/** How a status call treats its text. */
export interface StatusTextOptions {
  /** The reply's own text (a preview): sent as it is, where a status line is escaped. */
  readonly verbatim?: boolean | undefined;
}

/** A status call the platform refused or that did not get through. Token-free. */
export class StatusCallError extends MediagateError {
  override readonly name = "StatusCallError";
  readonly code = "MG_STATUS_CALL_FAILED";
  constructor(
    readonly operation: "post" | "edit" | "remove" | "draft",
    /** The platform's HTTP status, when it answered. */
    readonly status: number | undefined,
    description: string,
    /** Set for a rate limit: how long the platform asked to wait (ms). */
    readonly retryAfterMs?: number | undefined,
  ) {
    super(`status ${operation} failed: ${status === undefined ? "" : `${status} `}${description}`);
  }
}

/** How a channel hands over the files its users send. */
export interface AttachmentFetcher {
  /** Bytes; a file over it is refused (unread when its announced size is over). */
  readonly maxBytes: number;
  /**
   * The file's bytes, in order. A chunk is valid only until the next one is asked for: a
   * fetcher reads the next bytes into the same memory (so a large file leaves no garbage,
   * docs/inbound-media.md). Copy a chunk to keep it.
   */
  open(attachment: InboundAttachment, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
}

/** The newest message the journal recorded in one chat (Discord channel or DM channel id). */
export interface ChatCursor {
  /** The channel id messages are fetched from (a thread's own id for a thread). */
  readonly channelId: string;
  readonly lastMessageId: string;
}

export type { MediaOutcome };

/**
 * Where a user's message is, shown as the bot's reaction on it (docs/sessions.md, "Status
 * reactions"): accepted and waiting, its turn running, answered, or failed.
 */
export type ReactionStatus = "seen" | "working" | "done" | "failed";

/**
 * The emoji of each status. Every one is in Telegram's fixed list of reactions a bot may set
 * (`ReactionTypeEmoji` of the Bot API) and is a plain unicode emoji Discord takes as is.
 */
export const ReactionEmoji = {
  seen: "👀",
  working: "👨‍💻",
  done: "👍",
  failed: "👎",
} as const satisfies Record<ReactionStatus, string>;

/**
 * What the bot's reaction on a message was before a change: a status this process set, none,
 * or `unknown` (a message taken over from the journal after a restart: the previous process
 * may have left any status on it).
 */
export type PreviousReaction = ReactionStatus | "none" | "unknown";

/**
 * Status reactions on the users' messages of one platform. One try per call, bounded by
 * `signal`, never retried here; a failure rejects with a {@link ReactionCallError}.
 */
export interface StatusReactions {
  /**
   * Makes the bot's reaction on `messageId` show `status` (`undefined`: no reaction), replacing
   * its `previous` one. A message that cannot carry a reaction (a Discord slash command)
   * resolves without a call.
   */
  set(
    target: ChatTarget,
    messageId: string,
    status: ReactionStatus | undefined,
    previous: PreviousReaction,
    signal: AbortSignal,
  ): Promise<void>;
}

/** A reaction call the platform refused or that did not get through. Token-free. */
export class ReactionCallError extends MediagateError {
  override readonly name = "ReactionCallError";
  readonly code = "MG_REACTION_FAILED";
  constructor(
    /** The platform's HTTP status, when it answered. */
    readonly status: number | undefined,
    description: string,
    /** Set for a rate limit: how long the platform asked to wait (ms). */
    readonly retryAfterMs?: number | undefined,
  ) {
    super(`reaction failed: ${status === undefined ? "" : `${status} `}${description}`);
  }
}
