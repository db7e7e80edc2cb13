import { randomBytes } from "node:crypto";
import type { Update } from "grammy/types";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ManualClock, manualClock } from "../../test-support/clock.js";
import { closedPort } from "../../test-support/net.js";
import type { FakeTelegram, MediaInput } from "../fakes/telegram/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

/**
 * Albums in webhook mode (docs/telegram-webhooks.md, "Albums"): the whole gateway with
 * `telegram.webhook`, FakeTelegram POSTing each item of an album as a request of its own. Each
 * item is answered 200 once recorded; the album's turn waits for its quiet window, whose timer
 * the test fires by hand (`Defaults.telegram.webhookAlbumQuietMs` of real time otherwise).
 */

const Admin = 2801;
const Other = 2802;
const Team = -100_280_001;
const Secret = "album-webhook-secret";
/** Prints each attachment's path, one `P:<path>` line each. */
const PrintPaths = 'for f in $MEDIAGATE_ATTACHMENTS; do echo "P:$f"; done';
/** Longer than any window the gateway arms (`Defaults.telegram.webhookAlbumQuietMs`). */
const PastTheWindowMs = 60_000;

let harness: TelegramGatewayHarness;
let bot: TelegramBot;
let fake: FakeTelegram;
let albums: ManualClock;
let url: string;
let since: number;

beforeAll(async () => {
  const port = await closedPort();
  url = `http://127.0.0.1:${port}/telegram`;
  albums = manualClock();
  harness = await TelegramGatewayHarness.start(
    "t-wh-album",
    [
      {
        admins: [Admin],
        allowed: [Other],
        telegram: { webhook: { url, listen: `127.0.0.1:${port}`, secretToken: Secret } },
        settings: { progress: { enabled: false } },
      },
    ],
    { albumSchedule: albums.schedule, drainTimeoutMs: 300 },
  );
  bot = harness.bot();
  fake = bot.fake;
});

afterAll(async () => {
  await harness?.close();
});

beforeEach(() => {
  since = bot.mark();
});

let groupSeq = 0;
/** A fresh `media_group_id`. */
const newGroup = () => `28${Date.now()}${groupSeq++}`;

/** A document item of album `group` from `userId` (in its private chat unless `chatId`). */
function item(
  group: string,
  name: string,
  extra: Partial<MediaInput> & { userId?: number } = {},
): MediaInput {
  return {
    kind: "document",
    // Text, as its name and type say: random bytes are sniffed by content first and now and
    // then start like an MP3 frame, which makes the file "audio" (packages/media classify).
    bytes: Buffer.from(randomBytes(250).toString("hex")),
    fileName: name,
    mimeType: "text/plain",
    userId: Admin,
    mediaGroupId: group,
    ...extra,
  };
}

/** Queues `input` at the fake (delivered by webhook) and waits until it was answered 200. */
async function send(input: MediaInput): Promise<Update> {
  return bot.post((f) => f.sendMedia(input).update);
}

/** Closes every album window now, then waits until what it started is handled. */
async function closeWindows(): Promise<void> {
  closeWindowsNow();
  await harness.gateway.idle();
}

/** Closes every album window now: their turns start. */
function closeWindowsNow(): void {
  albums.advance(PastTheWindowMs);
}

/** The replies the chat got since the test began, each split into its lines. */
const replies = (chat: number = Admin) => bot.texts(chat, since).map((text) => text.split("\n"));

/** POSTs `update` to the webhook as Telegram would; resolves with the status. */
async function post(update: Update): Promise<number> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": Secret },
    body: JSON.stringify(update),
  });
  return answer.status;
}

describe("webhook mode runs an album as one turn", () => {
  it("answers each item 200 once recorded, then runs the album once, after its quiet window", async () => {
    const group = newGroup();
    const attempts = fake.webhook.attempts.length;
    await send(item(group, "a1.txt", { caption: PrintPaths }));
    for (const name of ["a2.txt", "a3.txt", "a4.txt"]) await send(item(group, name));
    expect(fake.webhook.attempts.slice(attempts).map((a) => a.status)).toEqual([
      200, 200, 200, 200,
    ]);
    await harness.gateway.idle();
    expect(replies()).toEqual([]);
    expect(albums.pending()).toHaveLength(1);

    await closeWindows();
    expect(replies()).toEqual([
      [
        "P:/workspace/inbox/a1.txt",
        "P:/workspace/inbox/a2.txt",
        "P:/workspace/inbox/a3.txt",
        "P:/workspace/inbox/a4.txt",
      ],
    ]);
    expect(harness.logs.join("\n")).toContain("album items run as one message");
  });

  it("keeps another chat's message and another user's album apart, interleaved", async () => {
    const mine = newGroup();
    const theirs = newGroup();
    await send(item(mine, "m1.txt", { caption: PrintPaths }));
    await bot.post((f) => f.sendPrivateText({ userId: Other, text: "echo other-now" }));
    await send(item(theirs, "t1.txt", { userId: Other, caption: PrintPaths }));
    await send(item(mine, "m2.txt"));
    await send(item(theirs, "t2.txt", { userId: Other }));
    await send(item(mine, "m3.txt"));
    await harness.gateway.idle();
    // The other chat's text ran at once; neither album before its window closed.
    expect(replies(Other)).toEqual([["other-now"]]);
    expect(replies(Admin)).toEqual([]);

    await closeWindows();
    expect(replies(Admin)).toEqual([
      ["P:/workspace/inbox/m1.txt", "P:/workspace/inbox/m2.txt", "P:/workspace/inbox/m3.txt"],
    ]);
    expect(replies(Other)).toEqual([
      ["other-now"],
      ["P:/workspace/inbox/t1.txt", "P:/workspace/inbox/t2.txt"],
    ]);
  });

  it("orders items that arrive out of order by their update id, the caption wherever it is", async () => {
    const group = newGroup();
    // Update ids far above the fake's own, posted third, first, second.
    const base = 9_280_000 + groupSeq * 10;
    const made = ["o1.txt", "o2.txt", "o3.txt"].map((name, i) =>
      fake.mediaUpdate(item(group, name, i === 1 ? { caption: PrintPaths } : {}), base + i),
    );
    const statuses = [];
    for (const i of [2, 0, 1]) statuses.push(await post(made[i] as Update));
    expect(statuses).toEqual([200, 200, 200]);
    await closeWindows();
    expect(replies()).toEqual([
      ["P:/workspace/inbox/o1.txt", "P:/workspace/inbox/o2.txt", "P:/workspace/inbox/o3.txt"],
    ]);
  });

  it("runs what came when the album's last item never comes; an item after that runs alone", async () => {
    const group = newGroup();
    await send(item(group, "l1.txt", { caption: PrintPaths }));
    await send(item(group, "l2.txt"));
    await closeWindows();
    expect(replies()).toEqual([["P:/workspace/inbox/l1.txt", "P:/workspace/inbox/l2.txt"]]);

    await send(item(group, "l3.txt"));
    await closeWindows();
    expect(replies()).toEqual([
      ["P:/workspace/inbox/l1.txt", "P:/workspace/inbox/l2.txt"],
      ["/workspace/inbox/l3.txt (document, 500 B)"],
    ]);
  });

  it("answers an item Telegram sends again 200 and runs it once, during the window and after", async () => {
    const group = newGroup();
    const first = await send(item(group, "r1.txt", { caption: PrintPaths }));
    const second = await send(item(group, "r2.txt"));
    expect(await fake.webhook.deliverAgain(first)).toBe(200);
    await send(item(group, "r3.txt"));
    await closeWindows();
    expect(await fake.webhook.deliverAgain(second)).toBe(200);
    expect(await fake.webhook.deliverAgain(first)).toBe(200);
    await closeWindows();
    expect(replies()).toEqual([
      ["P:/workspace/inbox/r1.txt", "P:/workspace/inbox/r2.txt", "P:/workspace/inbox/r3.txt"],
    ]);
    expect(harness.logs.join("\n")).toContain(
      "message redelivered by the platform was recorded before",
    );
  });

  it("runs an album of twelve items as ten at once and two after the window (the album bound)", async () => {
    const group = newGroup();
    const names = Array.from({ length: 12 }, (_, i) => `b${String(i + 1).padStart(2, "0")}.txt`);
    for (const name of names) await send(item(group, name));
    await harness.gateway.idle();
    const listed = (from: number, to: number) =>
      names.slice(from, to).map((name) => `/workspace/inbox/${name} (document, 500 B)`);
    expect(replies()).toEqual([listed(0, 10)]);
    await closeWindows();
    expect(replies()).toEqual([listed(0, 10), listed(10, 12)]);
  });

  it("runs an album first when its sender writes again, so the text comes after it", async () => {
    const group = newGroup();
    await send(item(group, "f1.txt", { caption: PrintPaths }));
    await send(item(group, "f2.txt"));
    await bot.post((f) => f.sendPrivateText({ userId: Admin, text: "echo after-the-album" }));
    await harness.gateway.idle();
    // The text waits behind the album's turn, as behind any turn of its session.
    expect(replies()).toEqual([
      ["⏳ queued — 1 ahead; /stop cancels"],
      ["P:/workspace/inbox/f1.txt", "P:/workspace/inbox/f2.txt"],
      ["after-the-album"],
    ]);
    expect(albums.pending()).toEqual([]);
  });

  it("in a group, runs an album whose caption mentions the bot, and never one that does not", async () => {
    const addressed = newGroup();
    const mention = `@${fake.bot.username} ${PrintPaths}`;
    await send(item(addressed, "g1.txt", { chatId: Team, caption: mention }));
    await send(item(addressed, "g2.txt", { chatId: Team }));
    const quiet = newGroup();
    const downloads = fake.downloads.length;
    await send(item(quiet, "q1.txt", { chatId: Team, caption: "just sharing" }));
    await send(item(quiet, "q2.txt", { chatId: Team }));
    await closeWindows();
    expect(replies(Team)).toEqual([["P:/workspace/inbox/g1.txt", "P:/workspace/inbox/g2.txt"]]);
    // The quiet album's files were never asked for.
    expect(fake.downloads.length - downloads).toBe(2);
  });

  it("stopped with an album open, runs it after the restart with the items Telegram held, once", async () => {
    const group = newGroup();
    await send(item(group, "s1.txt", { caption: PrintPaths }));
    await send(item(group, "s2.txt"));
    await harness.stopGateway();
    // Sent while the gateway is down: Telegram holds it and posts it after the restart.
    fake.sendMedia(item(group, "s3.txt"));
    await harness.restart();
    await waitUntil(() => fake.pendingUpdates === 0, "the held item to be posted and answered");
    await closeWindows();
    expect(replies()).toEqual([
      ["P:/workspace/inbox/s1.txt", "P:/workspace/inbox/s2.txt", "P:/workspace/inbox/s3.txt"],
    ]);
  });

  it("cut off by a stop, an album's turn gets one notice after the restart, not one per item", async () => {
    const group = newGroup();
    const command = "sleep 30; echo never-printed";
    await send(item(group, "c1.txt", { caption: command }));
    await send(item(group, "c2.txt"));
    await send(item(group, "c3.txt"));
    closeWindowsNow();
    await waitUntil(async () => {
      const running = (await bot.containers()).find((c) => c.state === "running");
      return (
        running !== undefined && (await harness.docker.processes(running.id)).includes("sleep 30")
      );
    }, "the album's command to start");
    await harness.restart();
    await waitUntil(() => replies().length > 0, "the notice");
    await harness.gateway.idle();
    expect(replies()).toEqual([
      [expect.stringContaining(`while working on your message “${command}”`)],
    ]);
  });
});
