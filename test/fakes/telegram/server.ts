import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Update, User } from "grammy/types";
import { CallbackQueries, type FakeCallbackQuery } from "./callbacks.js";
import { type EditLimitOptions, EditLimits } from "./edit-limits.js";
import { type Fault, FaultQueue, faultAnswer } from "./faults.js";
import {
  FileStore,
  PublicDownloadMaxBytes,
  type RecordedDownload,
  type StoredFile,
} from "./files.js";
import { type MediaInput, mediaUpdate, type SentMedia } from "./media-updates.js";
import { CommandMenus } from "./menus.js";
import { callMethod, type MethodContext, type MethodResult } from "./methods.js";
import { type ApiAnswer, fail, type UploadedFile } from "./protocol.js";
import { ReactionStore } from "./reactions.js";
import { decodeBody, RequestError, referencedFiles } from "./request.js";
import { UpdateQueue } from "./update-queue.js";
import {
  type ChannelPostInput,
  channelPostUpdate,
  type GroupMigrationInput,
  type GroupTextInput,
  groupMigrationUpdates,
  groupTextUpdate,
  type PrivateTextInput,
  privateTextUpdate,
  type SenderInput,
  type TopicTextInput,
  topicTextUpdate,
  type UpdateInput,
  userOf,
} from "./updates.js";
import { WebhookDelivery, type WebhookDeliveryOptions } from "./webhook-delivery.js";

/** One API call as the fake saw and answered it. */
export interface RecordedCall {
  /** Order of answering, from 1. */
  readonly seq: number;
  readonly method: string;
  /**
   * The parameters: JSON bodies as sent; multipart fields as strings (numbers arrive as
   * strings there), except values that are JSON objects/arrays (`media`, `reply_parameters`),
   * which are decoded as the real server does.
   */
  readonly params: Readonly<Record<string, unknown>>;
  readonly files: readonly UploadedFile[];
  readonly multipart: boolean;
  /** HTTP status answered; 0 when the fault dropped the connection. */
  readonly status: number;
  /** Whether the call succeeded (`ok: true`). */
  readonly ok: boolean;
  /** The `result` of a successful call, or the error description. */
  readonly result?: unknown;
  readonly description?: string;
  /** Set when an injected fault answered this call. */
  readonly fault?: Fault["kind"];
  /** When the answer was ready (epoch ms): which gateway run it went to, in a crash loop. */
  readonly atMs: number;
  /**
   * The caller's connection was already closed when the answer was ready (a killed process's
   * held `getUpdates`): the answer went nowhere.
   */
  readonly clientGone?: true;
}

export interface FakeTelegramOptions {
  /** The token the fake accepts; others get 401. */
  readonly token?: string;
  readonly botUsername?: string;
  readonly botId?: number;
  /**
   * Act as a local Bot API server (telegram-bot-api `--local`): `getFile` answers an absolute
   * path on this host (a temp dir, removed by `stop()`) and has no 20 MiB limit.
   */
  readonly localFiles?: boolean;
  /**
   * The largest file `getFile` hands out over the file route (default 20 MiB, the public Bot
   * API's limit). A bench raises it to send a large file through the HTTP download path.
   */
  readonly downloadMaxBytes?: number;
  /** How a set webhook's failed deliveries are retried (test/fakes/telegram/webhook-delivery.ts). */
  readonly webhook?: WebhookDeliveryOptions;
  /**
   * Telegram's clock, in ms (default `Date.now`): the `date` of the text messages users send.
   * A harness whose gateway runs on a manual clock hands it that clock, so the two agree.
   */
  readonly now?: () => number;
}

/** Telegram's answer to a call aimed at a chat gone for the bot (see `FakeTelegram.blockChat`). */
export interface GoneChat {
  readonly status: number;
  readonly description: string;
}

/** What Telegram answers a bot the user blocked. */
export const BlockedByUser: GoneChat = {
  status: 403,
  description: "Forbidden: bot was blocked by the user",
};

export const FakeTelegramDefaults = {
  token: "123456:TEST-token_abcdefghijklmnopqrstuvwxyz",
  botUsername: "mediagate_test_bot",
  botId: 123456,
  localFiles: false,
  downloadMaxBytes: PublicDownloadMaxBytes,
  webhook: {},
  now: Date.now,
  /** How long an idle client connection is kept open (the server's `keepAliveTimeout`). */
  keepAliveTimeoutMs: 60_000,
} as const satisfies Required<FakeTelegramOptions> & { keepAliveTimeoutMs: number };

/** A multipart body being received, or one whose sender went away before its end. */
export interface UploadProgress {
  readonly method: string;
  readonly receivedBytes: number;
}

type Waiter = { predicate: (call: RecordedCall) => boolean; resolve: (call: RecordedCall) => void };

/**
 * A local Telegram Bot API server for tests: `POST /bot<token>/<method>` with JSON or
 * multipart bodies, real long polling, a record of every call, and fault injection.
 * Point grammY at it with `new Bot(token, { client: { apiRoot } })`.
 */
export class FakeTelegram {
  readonly token: string;
  readonly bot: User;
  /** Every answered call, in order. */
  readonly calls: RecordedCall[] = [];
  private readonly updates = new UpdateQueue();
  /**
   * setWebhook/deleteWebhook/getWebhookInfo, and the POSTs of queued updates to a set webhook
   * (its `attempts`, `retryNow`, `deliverAgain`).
   */
  readonly webhook: WebhookDelivery;
  private readonly faults = new FaultQueue();
  /** Chats gone for the bot, by `chat_id`, with Telegram's answer to any call aimed at them. */
  private readonly goneChats = new Map<string, GoneChat>();
  private readonly photoRules: { test: (file: UploadedFile) => boolean; description: string }[] =
    [];
  private readonly chats = new Map<string, Record<string, unknown>>();
  private readonly messageIds = new Map<string, number>();
  /** The bot's messages by `<chat id>:<message id>`, until it deletes them. */
  private readonly botMessages = new Map<string, Record<string, unknown>>();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners = new Set<(call: RecordedCall) => void>();
  /** The bot's reactions, as `setMessageReaction` left them, and each accepted change. */
  readonly reactions = new ReactionStore();
  /** Users' button presses (callback queries) and the bot's answers to them. */
  readonly callbacks = new CallbackQueries();
  /** The bot's command menus by scope, as `setMyCommands` left them. */
  readonly menus = new CommandMenus((chatId) => this.chats.has(chatId));
  private server: Server | undefined;
  private inboundMessageId = 1000;
  private readonly now: () => number;
  /** Calls dropped by {@link forgetCalls}, so `seq` keeps counting. */
  private forgotten = 0;
  private uploadBytesPerSecond: number | undefined;
  private readonly receiving = new Set<{ method: string; receivedBytes: number }>();
  /** Multipart bodies whose sender went away before the end (never handled, never recorded). */
  readonly cutOffUploads: UploadProgress[] = [];
  private readonly localFiles: boolean;
  private readonly downloadMaxBytes: number;
  private files_: FileStore | undefined;
  private connections_ = 0;

  constructor(options: FakeTelegramOptions = {}) {
    const settings = { ...FakeTelegramDefaults, ...options };
    this.token = settings.token;
    this.localFiles = settings.localFiles;
    this.downloadMaxBytes = settings.downloadMaxBytes;
    this.now = settings.now;
    this.webhook = new WebhookDelivery(this.updates, settings.webhook);
    this.bot = {
      id: settings.botId,
      is_bot: true,
      first_name: "mediagate test",
      username: settings.botUsername,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    } as User;
  }

  /** Listens on an ephemeral 127.0.0.1 port; `apiRoot` has no trailing slash. */
  async start(): Promise<{ apiRoot: string }> {
    this.files_ = new FileStore(
      this.token,
      this.localFiles ? await mkdtemp(join(tmpdir(), "mediagate-tg-local-")) : undefined,
      this.downloadMaxBytes,
    );
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.write(res, fail(500, `Internal Server Error: ${String(error)}`));
      });
    });
    // Like the real API's servers, an idle connection stays open long enough for clients to
    // reuse it: Node's agent does not reuse a socket whose server announced a timeout of 1 s
    // or less (`Keep-Alive: timeout=1`), so a shorter one made every call a new connection.
    server.keepAliveTimeout = FakeTelegramDefaults.keepAliveTimeoutMs;
    server.on("connection", () => {
      this.connections_++;
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    this.server = server;
    return { apiRoot: this.apiRoot };
  }

  get apiRoot(): string {
    if (this.server === undefined) throw new Error("FakeTelegram is not started; call start()");
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Answers held long polls with no updates, drops connections and closes the port. */
  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    this.updates.close();
    this.webhook.close();
    const closed = once(server, "close");
    server.close();
    server.closeAllConnections();
    await closed;
    if (this.files.localDir !== undefined) {
      await rm(this.files.localDir, { recursive: true, force: true });
    }
  }

  private get files(): FileStore {
    if (this.files_ === undefined) throw new Error("FakeTelegram is not started; call start()");
    return this.files_;
  }

  /**
   * A user sends a photo, document, audio, voice note, video, video note or animation (with
   * `caption`, in an album with `mediaGroupId`); its bytes are served by getFile and the
   * download route. Answers the update and the files it refers to.
   */
  sendMedia(input: MediaInput): { update: Update; sent: SentMedia } {
    const { update, sent } = mediaUpdate(this.inboundMessageId++, input, this.files);
    return { update: this.pushUpdate(update), sent };
  }

  /**
   * The update {@link sendMedia} would queue, with `updateId`, not queued: a test delivers it
   * itself (to a webhook, out of order). Its file is served like any other.
   */
  mediaUpdate(input: MediaInput, updateId: number): Update {
    const { update } = mediaUpdate(this.inboundMessageId++, input, this.files);
    return { ...update, update_id: updateId } as Update;
  }

  /**
   * A user sends an album: one message per item, all with one `media_group_id`, the caption
   * on the first, queued together (consecutive updates, woken once: one answer may carry all).
   */
  sendAlbum(
    items: readonly Omit<MediaInput, "mediaGroupId" | "caption">[],
    caption?: string,
  ): { updates: Update[]; sent: SentMedia[] } {
    const mediaGroupId = String(13_000_000_000_000_000n + BigInt(this.inboundMessageId));
    const built = items.map((item, i) =>
      mediaUpdate(
        this.inboundMessageId++,
        { ...item, mediaGroupId, ...(i === 0 ? { caption } : {}) },
        this.files,
      ),
    );
    for (const { update } of built) this.noteChat(update);
    return {
      updates: this.updates.pushAll(built.map((b) => b.update)),
      sent: built.map((b) => b.sent),
    };
  }

  /**
   * Where, as a local Bot API server (`localFiles`), the fake keeps `file` on its disk: the
   * absolute path its `getFile` answers (written by that call).
   */
  localPathOf(file: StoredFile): string {
    return this.files.localPathOf(file);
  }

  /** Registers a file without sending it (its `file_id` for a hand-made update). */
  registerFile(input: Parameters<FileStore["register"]>[0]): StoredFile {
    return this.files.register(input);
  }

  /**
   * From now on downloads send `bytes` bytes, then hold the connection until the client
   * leaves (recorded then, `cutOff: true`); `undefined` serves them whole again.
   */
  holdDownloads(bytes: number | undefined): void {
    this.files.holdAfterBytes = bytes;
  }

  /**
   * Downloads send `bytes` of the file with no `Content-Length` and close cleanly (a body
   * short of the file's `file_size` that HTTP cannot tell from a whole one); `undefined`
   * serves whole files again.
   */
  endDownloadsAfter(bytes: number | undefined): void {
    this.files.endAfterBytes = bytes;
  }

  /** The next download is answered `302 Found` to `location` (once each call). */
  redirectNextDownload(location: string): void {
    this.files.redirects.push(location);
  }

  /** Every request on `GET /file/bot<token>/<file_path>`, in order. */
  get downloads(): readonly RecordedDownload[] {
    return this.files.downloads;
  }

  /** Queues an update (numbered if `update_id` is absent) and wakes a held long poll. */
  pushUpdate(update: UpdateInput): Update {
    this.noteChat(update);
    return this.updates.push(update);
  }

  /** Now by the fake's clock, in Unix seconds, as a message's `date`. */
  private seconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private noteChat(update: UpdateInput): void {
    const message = update.message ?? update.channel_post;
    if (message !== undefined) this.chats.set(String(message.chat.id), { ...message.chat });
  }

  /** A user writes `text` to the bot in a private chat (chat id = user id). */
  sendPrivateText(input: PrivateTextInput): Update {
    return this.pushUpdate(
      privateTextUpdate(this.inboundMessageId++, { date: this.seconds(), ...input }),
    );
  }

  /** A user writes in a group or supergroup (not a forum topic). */
  sendGroupText(input: GroupTextInput): Update {
    return this.pushUpdate(
      groupTextUpdate(this.inboundMessageId++, { date: this.seconds(), ...input }),
    );
  }

  /** A user writes in a forum topic: `message_thread_id` set, `is_topic_message: true`. */
  sendTopicText(input: TopicTextInput): Update {
    return this.pushUpdate(
      topicTextUpdate(this.inboundMessageId++, { date: this.seconds(), ...input }),
    );
  }

  /**
   * A basic group is upgraded to a supergroup (a new chat id): its two service messages, the
   * old group's then the new one's; returns the first.
   */
  migrateGroup(input: GroupMigrationInput): Update {
    const [old, moved] = groupMigrationUpdates(this.inboundMessageId++, {
      date: this.seconds(),
      ...input,
    });
    const first = this.pushUpdate(old);
    this.pushUpdate(moved);
    return first;
  }

  /** A post in a channel the bot administers (no `from`, `sender_chat` set). */
  sendChannelPost(input: ChannelPostInput): Update {
    return this.pushUpdate(
      channelPostUpdate(this.inboundMessageId++, { date: this.seconds(), ...input }),
    );
  }

  /**
   * A user presses the button labelled `button` (or whose `callback_data` it is) of a message
   * the bot sent: a `callback_query` update carrying the button's data and the message as it
   * is now. Throws when the message is gone or has no such button (a real client cannot press
   * it); {@link sendCallbackQuery} sends any data, as a modified client can.
   */
  pressButton(
    input: { chatId: number | string; messageId: number; button: string } & SenderInput,
  ): FakeCallbackQuery {
    const message = this.botMessage(input.chatId, input.messageId);
    const rows = (
      message?.reply_markup as
        | { inline_keyboard?: { text: string; callback_data: string }[][] }
        | undefined
    )?.inline_keyboard;
    const button = rows
      ?.flat()
      .find((b) => b.text === input.button || b.callback_data === input.button);
    if (message === undefined || button === undefined) {
      throw new Error(
        `FakeTelegram.pressButton: message ${input.messageId} has no button ${JSON.stringify(input.button)}`,
      );
    }
    return this.sendCallbackQuery({ ...input, data: button.callback_data });
  }

  /**
   * A `callback_query` with any `data` on a message of the bot in `chatId` (a forged press);
   * the message must exist there.
   */
  sendCallbackQuery(
    input: { chatId: number | string; messageId: number; data: string } & SenderInput,
  ): FakeCallbackQuery {
    const message = this.botMessage(input.chatId, input.messageId);
    if (message === undefined)
      throw new Error(`FakeTelegram: no message ${input.messageId} in ${input.chatId}`);
    const from = userOf(input);
    const query = this.callbacks.create({
      from,
      data: input.data,
      chatId: String(input.chatId),
      messageId: input.messageId,
    });
    this.updates.push({
      callback_query: {
        id: query.id,
        from,
        message: message as never,
        chat_instance: `ci-${input.chatId}`,
        data: input.data,
      },
    });
    return query;
  }

  /** Updates queued and not yet confirmed by an offset. */
  get pendingUpdates(): number {
    return this.updates.size;
  }

  /** Whether a `getUpdates` long poll is being held open right now. */
  get polling(): boolean {
    return this.updates.holding;
  }

  /**
   * Concurrent `getUpdates` consumers: how many polls came while another was held open (each
   * such pair is a 409 Conflict, as the real Bot API answers), and the most open at once.
   */
  get getUpdatesConsumers(): { readonly conflicts: number; readonly max: number } {
    return { conflicts: this.updates.conflicts, max: this.updates.maxConsumers };
  }

  /** TCP connections clients opened to the fake so far (to see whether they reuse them). */
  get connections(): number {
    return this.connections_;
  }

  /**
   * Reads multipart bodies (uploads) at most this fast from now on, as over a slow uplink;
   * `undefined` lifts the limit, also for uploads already under way.
   */
  throttleUploads(bytesPerSecond: number | undefined): void {
    this.uploadBytesPerSecond = bytesPerSecond;
  }

  /** Multipart bodies being received right now, with the bytes that arrived so far. */
  get uploadsInProgress(): UploadProgress[] {
    return [...this.receiving].map((upload) => ({ ...upload }));
  }

  /** The next `times` calls of `method` are answered by `fault` instead of being handled. */
  failNext(method: string, fault: Fault, times = 1): void {
    this.faults.add(method, fault, times);
  }

  /**
   * From now on every call aimed at `chatId` (its `chat_id`) is answered as Telegram answers a
   * bot whose chat is gone: by default 403 "Forbidden: bot was blocked by the user" (the user
   * blocked the bot); `gone` gives another answer ("Forbidden: user is deactivated", 400
   * "Bad Request: chat not found"). Calls are recorded, nothing is posted.
   */
  blockChat(chatId: number | string, gone: GoneChat = BlockedByUser): void {
    this.goneChats.set(String(chatId), gone);
  }

  /** Calls aimed at `chatId` are handled again (the user unblocked the bot). */
  unblockChat(chatId: number | string): void {
    this.goneChats.delete(String(chatId));
  }

  /** Edit pace enforced since {@link limitEdits}; undefined: edits are unlimited. */
  editLimits: EditLimits | undefined;

  /**
   * From now on, `editMessageText` and `sendMessageDraft` keep Telegram's pace per chat (one a
   * second, 20 a minute in a group) or get a 429 with `retry_after`; `editLimits` counts.
   */
  limitEdits(options: EditLimitOptions = {}): EditLimits {
    this.editLimits = new EditLimits(options);
    return this.editLimits;
  }

  /** Shorthand: the next `times` calls of `method` get 429 with `retry_after`. */
  rateLimitNext(method: string, retryAfterSeconds: number, times = 1): void {
    this.failNext(method, { kind: "rate_limit", retryAfterSeconds }, times);
  }

  /** Shorthand: the next `times` calls of `method` get a 5xx. */
  serverErrorNext(method: string, status = 502, times = 1): void {
    this.failNext(method, { kind: "server_error", status }, times);
  }

  /**
   * From now on, photo uploads (sendPhoto and album photos) whose file matches are refused
   * with a 400, as Telegram refuses images with unusable dimensions.
   */
  rejectPhotos(
    test: (file: UploadedFile) => boolean,
    description = "Bad Request: PHOTO_INVALID_DIMENSIONS",
  ): void {
    this.photoRules.push({ test, description });
  }

  /**
   * A message the bot sent and has not deleted, as it is now (edits applied): what the chat
   * shows. `undefined` once `deleteMessage` removed it.
   */
  botMessage(chatId: number | string, messageId: number): Record<string, unknown> | undefined {
    return this.botMessages.get(`${chatId}:${messageId}`);
  }

  /**
   * The bot's messages in a chat still there (not deleted), in the order sent, as Telegram
   * keeps them: markup parsed into `text` and `entities` (or `caption`, `caption_entities`).
   * What the user sees.
   */
  botMessagesIn(chatId: number | string): Record<string, unknown>[] {
    const prefix = `${chatId}:`;
    return [...this.botMessages.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, message]) => message)
      .sort((a, b) => Number(a.message_id) - Number(b.message_id));
  }

  callsTo(method: string): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** Resolves with the first recorded call (past or future) matching; rejects after timeoutMs. */
  waitFor(predicate: (call: RecordedCall) => boolean, timeoutMs = 5000): Promise<RecordedCall> {
    const seen = this.calls.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve: (call) => {
          clearTimeout(timer);
          resolve(call);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`FakeTelegram.waitFor: no matching call within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /**
   * Calls `listener` with every call recorded from now on, as it is recorded (before its
   * answer is written), e.g. to timestamp replies in a benchmark without scanning `calls`.
   * Returns the function that stops it.
   */
  onCall(listener: (call: RecordedCall) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Forgets every recorded call (and the files they carried), so a long run does not keep
   * them all; numbering goes on from where it was.
   */
  forgetCalls(): void {
    this.forgotten += this.calls.length;
    this.calls.length = 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(path);
    if (file !== null && req.method === "GET") {
      return this.files.download(file[1] ?? "", decodeURIComponent(file[2] ?? ""), res);
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(new URL(req.url ?? "/", "http://x").pathname);
    if (req.method !== "POST" && req.method !== "GET") {
      return this.write(res, fail(405, "Method Not Allowed"));
    }
    if (match === null) return this.write(res, fail(404, "Not Found"));
    const [, token = "", method = ""] = match;
    let decoded: Awaited<ReturnType<typeof decodeBody>>;
    const upload = { method, receivedBytes: 0 };
    try {
      decoded = await decodeBody(req, {
        multipartBytesPerSecond: () => this.uploadBytesPerSecond,
        onMultipartProgress: (receivedBytes) => {
          upload.receivedBytes = receivedBytes;
          this.receiving.add(upload);
        },
      });
    } catch (error) {
      // A sender that went away mid-body: how the read ends depends on timing (an "aborted"
      // error, or an early end whose truncated multipart then fails to parse); the request
      // never completing is what tells either apart from a bad body.
      if (!req.complete && upload.receivedBytes > 0) {
        this.cutOffUploads.push({ ...upload });
        return;
      }
      if (error instanceof RequestError) return this.write(res, fail(400, error.message));
      throw error;
    } finally {
      this.receiving.delete(upload);
    }
    const base = { method, params: decoded.params, multipart: decoded.multipart };
    if (token !== this.token) {
      return this.answer(res, base, [], fail(401, "Unauthorized"));
    }
    const fault = this.faults.take(method);
    if (fault !== undefined) {
      // The upload still arrived in full; record it so tests can check every attempt's bytes.
      const files = referencedFiles(decoded.params, decoded.parts);
      if (fault.kind === "disconnect") {
        this.record({ ...base, files, status: 0, ok: false, fault: fault.kind });
        res.socket?.destroy();
        return;
      }
      if (fault.kind === "slow" || fault.kind === "held") {
        const result = this.dispatch(method, decoded.params, decoded.parts);
        await (fault.kind === "slow"
          ? new Promise((resolve) => setTimeout(resolve, fault.delayMs))
          : fault.until);
        return this.answer(res, base, result.files, result.answer, fault.kind);
      }
      return this.answer(res, base, files, faultAnswer(fault), fault.kind);
    }
    const gone = this.goneChats.get(String(decoded.params.chat_id ?? ""));
    if (gone !== undefined) {
      return this.answer(res, base, [], fail(gone.status, gone.description));
    }
    const limited = this.editLimits?.check(method, String(decoded.params.chat_id ?? ""));
    if (limited !== undefined) return this.answer(res, base, [], limited, "rate_limit");
    if (method === "getFile") {
      return this.answer(res, base, [], await this.files.getFile(decoded.params));
    }
    if (method === "setWebhook" || method === "deleteWebhook" || method === "getWebhookInfo") {
      const files = referencedFiles(decoded.params, decoded.parts);
      const answer =
        method === "setWebhook"
          ? this.webhook.setWebhook(decoded.params, files.length > 0)
          : method === "deleteWebhook"
            ? this.webhook.deleteWebhook(decoded.params)
            : this.webhook.getWebhookInfo();
      return this.answer(res, base, files, answer);
    }
    if (method === "getUpdates" && this.webhook.active) {
      return this.answer(
        res,
        base,
        [],
        fail(
          409,
          "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
        ),
      );
    }
    if (method === "getUpdates") {
      const answer = await this.updates.poll(decoded.params, res);
      if (answer !== undefined) this.answer(res, base, [], answer);
      return;
    }
    const result = this.dispatch(method, decoded.params, decoded.parts);
    this.answer(res, base, result.files, result.answer);
  }

  private dispatch(
    method: string,
    params: Record<string, unknown>,
    parts: MethodContext["parts"],
  ): MethodResult {
    const ctx: MethodContext = {
      params,
      parts,
      bot: this.bot,
      sent: {
        save: (chatId, message) => this.botMessages.set(`${chatId}:${message.message_id}`, message),
        get: (chatId, messageId) => this.botMessages.get(`${chatId}:${messageId}`),
        delete: (chatId, messageId) => this.botMessages.delete(`${chatId}:${messageId}`),
      },
      callbacks: this.callbacks,
      nextMessageId: (chatId) => {
        const next = (this.messageIds.get(chatId) ?? 0) + 1;
        this.messageIds.set(chatId, next);
        return next;
      },
      chatFor: (chatId) => this.chatFor(chatId),
      menus: this.menus,
      reactions: this.reactions,
      photoRejection: (file) => this.photoRules.find((rule) => rule.test(file))?.description,
    };
    return callMethod(method, ctx, {
      dropPendingUpdates: () => this.updates.dropAll(),
      pendingUpdates: () => this.updates.size,
    });
  }

  private chatFor(chatId: string): Record<string, unknown> {
    const known = this.chats.get(chatId);
    if (known !== undefined) return known;
    const id = Number(chatId);
    return id > 0
      ? { id, type: "private", first_name: "User" }
      : { id, type: "supergroup", title: "Unknown group" };
  }

  private answer(
    res: ServerResponse,
    base: Pick<RecordedCall, "method" | "params" | "multipart">,
    files: readonly UploadedFile[],
    answer: ApiAnswer,
    fault?: Fault["kind"],
  ): void {
    const body = answer.body;
    const isOk = "ok" in body && body.ok;
    const call: Omit<RecordedCall, "seq" | "atMs"> = {
      ...base,
      files,
      status: answer.status,
      ok: isOk,
      ...("ok" in body
        ? body.ok
          ? { result: body.result }
          : { description: body.description }
        : {}),
      ...(fault === undefined ? {} : { fault }),
      ...(res.writableEnded || res.destroyed ? { clientGone: true as const } : {}),
    };
    this.record(call);
    this.write(res, answer);
  }

  private record(call: Omit<RecordedCall, "seq" | "atMs">): void {
    const recorded: RecordedCall = {
      seq: this.forgotten + this.calls.length + 1,
      atMs: Date.now(),
      ...call,
    };
    this.calls.push(recorded);
    for (const listener of this.listeners) listener(recorded);
    for (const waiter of this.waiters) {
      if (waiter.predicate(recorded)) {
        this.waiters.delete(waiter);
        waiter.resolve(recorded);
      }
    }
  }

  private write(res: ServerResponse, answer: ApiAnswer): void {
    if (res.writableEnded || res.destroyed) return;
    const body = answer.body;
    if ("raw" in body) {
      res.writeHead(answer.status, { "content-type": body.contentType });
      res.end(body.raw);
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }
}
