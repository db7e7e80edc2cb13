import type { Schedule } from "@mediagate/io";
import type { ChannelAdapter, InboundMessage } from "../channels/types.js";

/** One recorded item of an album, waiting for the rest of it. */
export interface AlbumItem {
  readonly channel: ChannelAdapter;
  /** The item as recorded; its `album` names the album. */
  readonly message: InboundMessage;
  readonly entryId: number;
  /**
   * Taken over from the journal at start-up (recorded by an earlier process); `handed`: handed
   * over by the replica that just received it (gateway/dispatch.ts).
   */
  readonly recovered: boolean | "handed";
}

/** An album's items as the one message that runs. */
export interface GatheredAlbum {
  readonly channel: ChannelAdapter;
  /** Every item's files in order, the first caption as its text, every item's receipt id. */
  readonly message: InboundMessage;
  /** The first item's journal entry: the turn's. */
  readonly entryId: number;
  /** The other items' entries: they start, end and are answered with the turn's. */
  readonly merged: readonly number[];
  /** Whether one of its items is for the bot (a group's `requireMention`). */
  readonly addressed: boolean;
  /** Whether an item was taken over from the journal at start-up (else one handed over). */
  readonly recovered: boolean | "handed";
}

/** Settings of {@link AlbumGatherer}. */
export interface AlbumGathererOptions {
  /** How long the album stays open after its latest item (`Defaults.telegram.webhookAlbumQuietMs`). */
  readonly quietMs: number;
  /** Items of one album at most (`Defaults.telegram.albumMaxItems`); it runs when full. */
  readonly maxItems: number;
  readonly schedule: Schedule;
  /** Runs an album that closed. */
  readonly run: (album: GatheredAlbum) => void;
}

interface Gathering {
  readonly items: AlbumItem[];
  cancel: (() => void) | undefined;
}

/**
 * Albums whose items were recorded one by one (a Telegram webhook posts each item alone;
 * docs/telegram-webhooks.md, "Albums"), gathered into one message each. An album runs once no
 * item of it came for `quietMs`, at once when it holds `maxItems` (an item after that opens
 * another), and at once when its sender sends anything else in the chat (Telegram delivers one
 * chat's updates in order, so the album is complete then and runs first). Items come from
 * the journal at start-up too: their windows open only at {@link start}, once the channels
 * take the items Telegram still holds. Nothing here is durable: each item is recorded before
 * it is added, and an album open when the gateway stops (or crashes) is gathered again from
 * the journal by the next start.
 */
export class AlbumGatherer {
  readonly #open = new Map<string, Gathering>();
  readonly #options: AlbumGathererOptions;
  #started = false;
  #stopped = false;

  constructor(options: AlbumGathererOptions) {
    this.#options = options;
  }

  /** Items waiting for their album to close. */
  get waiting(): number {
    let count = 0;
    for (const gathering of this.#open.values()) count += gathering.items.length;
    return count;
  }

  /** Adds a recorded item to its album (opened by it if needed); ignored once stopped. */
  add(item: AlbumItem): void {
    if (this.#stopped || item.message.album === undefined) return;
    const key = albumKey(item.message);
    let gathering = this.#open.get(key);
    if (gathering === undefined) {
      gathering = { items: [], cancel: undefined };
      this.#open.set(key, gathering);
    }
    gathering.items.push(item);
    if (gathering.items.length >= this.#options.maxItems) this.#close(key);
    else this.#arm(key, gathering);
  }

  /** Runs now the open albums of `message`'s sender in its chat, before `message` runs. */
  closeSenderOf(message: InboundMessage): void {
    if (this.#open.size === 0) return;
    const keys = [...this.#open].filter(([, gathering]) => {
      const first = gathering.items[0]?.message;
      return first !== undefined && sameSender(first, message);
    });
    for (const [key] of keys) this.#close(key);
  }

  /** Opens the windows of the albums gathered so far (from the journal) and of those to come. */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    for (const [key, gathering] of this.#open) this.#arm(key, gathering);
  }

  /** Runs nothing more: open albums stay in the journal, received, for the next start. */
  stop(): void {
    this.#stopped = true;
    for (const gathering of this.#open.values()) gathering.cancel?.();
    this.#open.clear();
  }

  #arm(key: string, gathering: Gathering): void {
    gathering.cancel?.();
    gathering.cancel = this.#started
      ? this.#options.schedule(() => this.#close(key), this.#options.quietMs)
      : undefined;
  }

  #close(key: string): void {
    const gathering = this.#open.get(key);
    if (gathering === undefined) return;
    this.#open.delete(key);
    gathering.cancel?.();
    if (this.#stopped) return;
    this.#options.run(gatherAlbum(gathering.items));
  }
}

/** The items' album within their profile and platform. */
function albumKey(message: InboundMessage): string {
  return JSON.stringify([message.profile, message.platform, message.album?.key]);
}

function sameSender(a: InboundMessage, b: InboundMessage): boolean {
  return (
    a.profile === b.profile &&
    a.platform === b.platform &&
    a.chatId === b.chatId &&
    a.userId === b.userId
  );
}

/** Receipt ids as the platform numbers them (Telegram's `update_id`), else the order recorded. */
function inOrder(items: readonly AlbumItem[]): AlbumItem[] {
  const numeric = items.every((item) => /^[0-9]{1,20}$/.test(item.message.receiptId));
  return [...items].sort((a, b) =>
    numeric ? compareDigits(a.message.receiptId, b.message.receiptId) : a.entryId - b.entryId,
  );
}

function compareDigits(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The items as one message (docs/inbound-media.md, "Albums"): in the order the platform
 * numbered them, whatever order they were recorded in; the first item's ids and sender; the
 * first non-empty text (the caption); every item's files and receipt ids.
 */
export function gatherAlbum(items: readonly AlbumItem[]): GatheredAlbum {
  const sorted = inOrder(items);
  const first = sorted[0];
  if (first === undefined) throw new TypeError("an album needs an item");
  const { album: _album, receiptIds: _ids, attachments: _files, ...base } = first.message;
  const receiptIds = sorted.flatMap((item) => item.message.receiptIds ?? [item.message.receiptId]);
  const attachments = sorted.flatMap((item) => item.message.attachments ?? []);
  const text = sorted.find((item) => item.message.text !== "")?.message.text ?? "";
  return {
    channel: first.channel,
    message: {
      ...base,
      text,
      ...(receiptIds.length > 1 ? { receiptIds } : {}),
      ...(attachments.length > 0 ? { attachments } : {}),
    },
    entryId: first.entryId,
    merged: sorted.slice(1).map((item) => item.entryId),
    addressed: sorted.some((item) => item.message.album?.addressed === true),
    recovered: sorted.some((item) => item.recovered === true)
      ? true
      : sorted.some((item) => item.recovered === "handed") && "handed",
  };
}
