import { describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import type { ChannelAdapter, InboundMessage } from "../channels/types.js";
import { AlbumGatherer, type GatheredAlbum } from "./albums.js";

const channel = { platform: "telegram", profile: "p" } as unknown as ChannelAdapter;
const QuietMs = 1_000;

/** Item `id` (its update id, entry id `100 + id`) of album `group` sent by `user` in `chat`. */
function item(
  id: number,
  options: {
    group?: string;
    user?: string;
    chat?: string;
    text?: string;
    addressed?: boolean;
    recovered?: boolean;
  } = {},
) {
  const { group = "g", user = "7", chat = "7", text = "", addressed = true } = options;
  const message: InboundMessage = {
    profile: "p",
    platform: "telegram",
    chatId: chat,
    chatType: "dm",
    userId: user,
    messageId: String(id),
    text,
    receiptId: String(id),
    attachments: [{ name: `f${id}.jpg`, sentAs: "photo", ref: `file-${id}` }],
    album: { key: `${chat}:${user}:${group}`, addressed },
  };
  return { channel, message, entryId: 100 + id, recovered: options.recovered ?? false };
}

function gatherer(maxItems = 10) {
  const clock = manualClock();
  const ran: GatheredAlbum[] = [];
  const albums = new AlbumGatherer({
    quietMs: QuietMs,
    maxItems,
    schedule: clock.schedule,
    run: (album) => ran.push(album),
  });
  albums.start();
  return { clock, ran, albums };
}

const files = (album: GatheredAlbum | undefined) =>
  album?.message.attachments?.map((file) => file.ref);

describe("AlbumGatherer", () => {
  it("runs an album's items as one message once none came for the quiet window", () => {
    const { clock, ran, albums } = gatherer();
    albums.add(item(1, { text: "caption" }));
    clock.advance(QuietMs - 1);
    albums.add(item(2));
    clock.advance(QuietMs - 1);
    albums.add(item(3));
    clock.advance(QuietMs - 1);
    expect(ran).toEqual([]);
    clock.advance(1);
    expect(ran).toHaveLength(1);
    const [album] = ran;
    expect(album?.message).toMatchObject({
      text: "caption",
      receiptId: "1",
      messageId: "1",
      receiptIds: ["1", "2", "3"],
    });
    expect(album?.message.album).toBeUndefined();
    expect(files(album)).toEqual(["file-1", "file-2", "file-3"]);
    expect([album?.entryId, album?.merged]).toEqual([101, [102, 103]]);
    expect(clock.pending()).toEqual([]);
  });

  it("orders items by their update id whatever order they were recorded in, caption anywhere", () => {
    const { clock, ran, albums } = gatherer();
    albums.add(item(12));
    albums.add(item(10));
    albums.add(item(11, { text: "on the middle item" }));
    clock.advance(QuietMs);
    expect(ran[0]?.message).toMatchObject({
      receiptId: "10",
      receiptIds: ["10", "11", "12"],
      text: "on the middle item",
    });
    expect(files(ran[0])).toEqual(["file-10", "file-11", "file-12"]);
    expect(ran[0]?.merged).toEqual([111, 112]);
  });

  it("keeps albums of two chats, and of two senders in one group, apart when interleaved", () => {
    const { clock, ran, albums } = gatherer();
    albums.add(item(1, { chat: "-5", user: "7" }));
    albums.add(item(2, { chat: "-5", user: "8" }));
    albums.add(item(3, { chat: "9", user: "9" }));
    albums.add(item(4, { chat: "-5", user: "7" }));
    albums.add(item(5, { chat: "-5", user: "8" }));
    clock.advance(QuietMs);
    const gathered = ran.map((album) => album.message.receiptIds ?? [album.message.receiptId]);
    expect(gathered.sort()).toEqual([["1", "4"], ["2", "5"], ["3"]]);
  });

  it("runs a full album at once, and an item past the bound as an album of its own", () => {
    const { clock, ran, albums } = gatherer(3);
    for (const id of [1, 2, 3, 4]) albums.add(item(id));
    expect(ran.map((album) => album.message.receiptIds)).toEqual([["1", "2", "3"]]);
    clock.advance(QuietMs);
    expect(ran.map((album) => album.message.receiptIds ?? [album.message.receiptId])).toEqual([
      ["1", "2", "3"],
      ["4"],
    ]);
  });

  it("runs an open album first when its sender sends something else in the chat", () => {
    const { ran, albums } = gatherer();
    albums.add(item(1));
    albums.add(item(2, { user: "8", chat: "7" }));
    albums.closeSenderOf(item(3, { user: "7" }).message);
    expect(ran.map((album) => album.message.receiptIds)).toEqual([undefined]);
    expect(ran[0]?.message.receiptId).toBe("1");
    expect(albums.waiting).toBe(1);
  });

  it("says an album is for the bot when one item is, and whether an item was recovered", () => {
    const { clock, ran, albums } = gatherer();
    albums.add(item(1, { addressed: false, recovered: true }));
    albums.add(item(2, { addressed: true }));
    albums.add(item(3, { group: "h", addressed: false }));
    albums.add(item(4, { group: "h", addressed: false }));
    clock.advance(QuietMs);
    expect(ran.map((album) => [album.addressed, album.recovered])).toEqual([
      [true, true],
      [false, false],
    ]);
  });

  it("opens no window before start, and runs nothing after stop", () => {
    const clock = manualClock();
    const ran: GatheredAlbum[] = [];
    const albums = new AlbumGatherer({
      quietMs: QuietMs,
      maxItems: 10,
      schedule: clock.schedule,
      run: (album) => ran.push(album),
    });
    albums.add(item(1, { recovered: true }));
    clock.advance(10 * QuietMs);
    expect([ran, clock.pending()]).toEqual([[], []]);
    albums.start();
    albums.add(item(2));
    expect(clock.pending()).toEqual([QuietMs]);
    albums.stop();
    clock.advance(QuietMs);
    albums.add(item(3));
    expect([ran, clock.pending(), albums.waiting]).toEqual([[], [], 0]);
  });
});
