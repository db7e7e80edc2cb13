import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { currentInstanceId, instanceLiveness } from "@mediagate/sandbox";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { journalBackends } from "../../test/fixtures/journal-backends.js";
import { threadsNamed } from "../../test/fixtures/thread-names.js";
import type { InboundMessage } from "../channels/types.js";
import { migrate } from "../state/schema.js";
import { StorageError } from "./errors.js";
import { journalDbPath, SqliteJournal } from "./journal.js";
import { JOURNAL_MIGRATIONS } from "./journal-schema.js";
import type { OutboxReply } from "./types.js";

let home: string;
let path: string;
const opened: SqliteJournal[] = [];

/** A process's instance id, built the way `currentInstanceId()` builds one. */
function instanceIdOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const ticks = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  return [hostname(), boot, pid, ticks].join("/");
}

let live: ChildProcess;
/** A process that is still running (for the whole file). */
let liveOwner: string;
/** A process that ran and exited. */
let deadOwner: string;
/** A process on another host: its liveness is unknown, so it counts as alive. */
const foreignOwner = "another-host/boot/4242/99";

beforeAll(async () => {
  live = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await once(live, "spawn");
  liveOwner = instanceIdOf(live.pid!);
  const short = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
  await once(short, "spawn");
  deadOwner = instanceIdOf(short.pid!);
  short.kill("SIGKILL");
  await once(short, "exit");
  expect(instanceLiveness(deadOwner)).toBe("gone");
  expect(instanceLiveness(liveOwner)).toBe("alive");
});

afterAll(() => {
  live.kill("SIGKILL");
});

beforeEach(async () => {
  home = await tempDirForTest("mg-journal-");
  path = journalDbPath(join(home, "root"));
});

afterEach(async () => {
  for (const journal of opened.splice(0)) await journal.close();
});

async function openJournal(owner?: string, now?: () => number): Promise<SqliteJournal> {
  const journal = await SqliteJournal.open(path, {
    ...(owner === undefined ? {} : { owner }),
    ...(now === undefined ? {} : { now }),
  });
  opened.push(journal);
  return journal;
}

function discord(messageId: string, chatId = "555", threadId?: string): InboundMessage {
  return {
    profile: "work",
    platform: "discord",
    chatId,
    chatType: "group",
    threadId,
    userId: "8",
    messageId,
    text: "hi",
    receiptId: messageId,
  };
}

function replyTo(message: InboundMessage, text = "done"): OutboxReply {
  return {
    profile: message.profile,
    platform: message.platform,
    sessionKey: `agent:${message.profile}:${message.platform}:dm:${message.chatId}`,
    slot: "profile:work",
    target: { platform: message.platform, chatId: message.chatId, replyToMessageId: "1" },
    text,
  };
}

function raw<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

describe.each(journalBackends())("the journal on $name", (backend) => {
  beforeAll(() => backend.beforeAll());
  afterAll(() => backend.afterAll());
  beforeEach(() => backend.beforeEach());
  afterEach(() => backend.afterEach());

  it("syncs what it committed on demand, and refuses to once closed", async () => {
    const journal = await backend.open();
    await expect(journal.sync()).resolves.toBeUndefined();
    await journal.record(telegramMessage("1"));
    await journal.record(telegramMessage("2"));
    await expect(journal.sync()).resolves.toBeUndefined();
    await journal.close();
    const refused = await journal.sync().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as StorageError).message).toContain("sync");
  });

  it("records a message once: a redelivery under the same key is not fresh", async () => {
    const journal = await backend.open();
    const first = await journal.record(telegramMessage("41"));
    const again = await journal.record(telegramMessage("41", "the same update, delivered again"));
    const next = await journal.record(telegramMessage("42"));
    const otherProfile = await journal.record({ ...telegramMessage("41"), profile: "home" });

    expect(first.fresh).toBe(true);
    expect(again).toEqual({ id: first.id, fresh: false });
    expect(next.fresh).toBe(true);
    expect(otherProfile.fresh).toBe(true);
    expect(
      await backend.raw<{ key: string; owner: string }>(
        "SELECT key, owner FROM entries ORDER BY id",
      ),
    ).toEqual([
      { key: "work:telegram:41", owner: currentInstanceId() },
      { key: "work:telegram:42", owner: currentInstanceId() },
      { key: "home:telegram:41", owner: currentInstanceId() },
    ]);
  });

  it("records a merged message by each of its receipts: any of them again is not run again", async () => {
    const journal = await backend.open();
    const album = await journal.record({
      ...telegramMessage("50"),
      receiptIds: ["50", "51", "52"],
    });
    expect(album.fresh).toBe(true);
    expect(await backend.raw("SELECT key, entry_id FROM receipts ORDER BY key")).toEqual([
      { key: "work:telegram:50", entry_id: album.id },
      { key: "work:telegram:51", entry_id: album.id },
      { key: "work:telegram:52", entry_id: album.id },
    ]);
    // The whole album again, its tail alone, one item alone: all known, nothing new.
    expect(
      await journal.record({ ...telegramMessage("50"), receiptIds: ["50", "51", "52"] }),
    ).toEqual({
      id: album.id,
      fresh: false,
    });
    expect(await journal.record({ ...telegramMessage("51"), receiptIds: ["51", "52"] })).toEqual({
      id: album.id,
      fresh: false,
    });
    expect(await journal.record(telegramMessage("52"))).toEqual({ id: album.id, fresh: false });
    expect(await journal.recorded("work", "telegram", ["49", "50", "52", "53"])).toEqual([
      "50",
      "52",
    ]);
    expect(await journal.recorded("home", "telegram", ["50"])).toEqual([]);
    expect(await backend.raw("SELECT key FROM entries")).toEqual([{ key: "work:telegram:50" }]);
  });

  it("does not record a message sharing some receipts with another: it names the others", async () => {
    const journal = await backend.open();
    const head = await journal.record({ ...telegramMessage("60"), receiptIds: ["60", "61"] });
    const offeredAgain = await journal.record({
      ...telegramMessage("60", "the album with an item more"),
      receiptIds: ["60", "61", "62"],
    });
    expect(offeredAgain).toEqual({ id: head.id, fresh: false, unrecorded: ["62"] });
    expect(await backend.raw("SELECT key FROM entries")).toEqual([{ key: "work:telegram:60" }]);
    expect(await journal.recorded("work", "telegram", ["60", "61", "62"])).toEqual(["60", "61"]);
    // Handed on alone, the new item is a message of its own, after the first.
    const tail = await journal.record(telegramMessage("62"));
    expect(tail.fresh).toBe(true);
    expect(tail.id).toBeGreaterThan(head.id);
  });

  it("takes over the unfinished entries of a process that is gone, oldest first, once", async () => {
    const dead = await backend.open({ owner: deadOwner, now: () => 1_000 });
    const a = await dead.record(telegramMessage("1"));
    const b = await dead.record(telegramMessage("2"));
    await dead.started(b.id);
    const finished = await dead.record(telegramMessage("3"));
    await dead.finished(finished.id, "replied");
    await (await backend.open({ owner: liveOwner })).record(telegramMessage("4"));
    await (await backend.open({ owner: foreignOwner })).record(telegramMessage("5"));
    await dead.close();

    const me = await backend.open();
    const taken = await me.takeOver();

    expect(taken.map((entry) => [entry.id, entry.state, entry.owner])).toEqual([
      [a.id, "received", currentInstanceId()],
      [b.id, "started", currentInstanceId()],
    ]);
    expect(taken[0]).toMatchObject({ key: "work:telegram:1", message: telegramMessage("1") });
    expect(taken[1]).toMatchObject({ receivedAtMs: 1_000, startedAtMs: 1_000 });
    expect(await me.takeOver()).toEqual([]);
    expect(await backend.raw<{ owner: string }>("SELECT owner FROM entries ORDER BY id")).toEqual([
      { owner: currentInstanceId() },
      { owner: currentInstanceId() },
      { owner: deadOwner },
      { owner: liveOwner },
      { owner: foreignOwner },
    ]);
  });

  it("never hands one entry to two processes taking over at the same time", async () => {
    const dead = await backend.open({ owner: deadOwner });
    for (let i = 0; i < 50; i++) await dead.record(telegramMessage(String(i)));
    await dead.close();
    const [mine, theirs] = await Promise.all([
      backend.open().then((j) => j.takeOver()),
      backend.open({ owner: liveOwner }).then((j) => j.takeOver()),
    ]);
    const ids = [...mine, ...theirs].map((entry) => entry.id).sort((x, y) => x - y);
    expect(ids).toHaveLength(50);
    expect(new Set(ids).size).toBe(50);
  });

  it("keeps the numerically newest Discord message per chat as its cursor", async () => {
    const journal = await backend.open();
    await journal.record(discord("1000"));
    await journal.record(discord("999")); // older, and larger as text
    await journal.record(discord("9007199254740993", "777")); // beyond a double's precision
    await journal.record(discord("9007199254740992", "777"));
    await journal.record(discord("5000", "555", "thread-1"));
    await journal.record({ ...discord("7000"), profile: "home" });
    await journal.record(telegramMessage("123456"));

    expect(await journal.cursors("work")).toEqual([
      { channelId: "555", lastMessageId: "1000" },
      { channelId: "777", lastMessageId: "9007199254740993" },
      { channelId: "thread-1", lastMessageId: "5000" },
    ]);
    expect(await journal.cursors("home")).toEqual([{ channelId: "555", lastMessageId: "7000" }]);
    expect(await journal.cursors("nobody")).toEqual([]);
  });

  it("names the slots of a profile's pending replies, of any owner, and no closed one's", async () => {
    const dead = await backend.open({ owner: deadOwner });
    const slotOf = (reply: OutboxReply, slot: string): OutboxReply => ({ ...reply, slot });
    const message = telegramMessage("1");
    await dead.addReply(slotOf(replyTo(message), "session:a"), undefined);
    await dead.addReply(slotOf(replyTo(message, "again"), "session:a"), undefined);
    const closed = await dead.addReply(slotOf(replyTo(message), "session:closed"), undefined);
    await dead.closeReply(closed.id, "delivered");
    await dead.addReply(
      slotOf({ ...replyTo(message), profile: "home" }, "session:home"),
      undefined,
    );
    await dead.close();
    const me = await backend.open();
    await me.addReply(slotOf(replyTo(message), "session:mine"), undefined);

    expect((await me.pendingReplySlots("work")).sort()).toEqual(["session:a", "session:mine"]);
    expect(await me.pendingReplySlots("home")).toEqual(["session:home"]);
    expect(await me.pendingReplySlots("nobody")).toEqual([]);
  });

  it("keeps a reply's steps, attempts and schedule for the process that takes it over", async () => {
    const dead = await backend.open({ owner: deadOwner, now: () => 5_000 });
    const entry = await dead.record(telegramMessage("1"));
    const reply = await dead.addReply(replyTo(telegramMessage("1")), entry.id);
    expect(reply).toMatchObject({ state: "pending", attempts: 0, entryId: entry.id });
    expect(reply.steps.size).toBe(0);
    await dead.attempt(reply.id);
    await dead.step(reply.id, "text:0", "sent");
    await dead.step(reply.id, "media:/workspace/a.png", "unconfirmed");
    await dead.step(reply.id, "media:/workspace/a.png", "sent");
    await dead.attempt(reply.id);
    await dead.reschedule(reply.id, 65_000, "429: retry after 60 s");
    const delivered = await dead.addReply(replyTo(telegramMessage("2"), "other"), undefined);
    await dead.closeReply(delivered.id, "delivered");
    await dead.close();

    const me = await backend.open();
    expect(await me.takeOver()).toEqual([]); // the entry was marked done with its reply
    const [resumed, ...others] = await me.takeOverReplies();
    expect(others).toEqual([]);
    expect(resumed).toEqual({
      ...replyTo(telegramMessage("1")),
      id: reply.id,
      entryId: entry.id,
      state: "pending",
      owner: currentInstanceId(),
      steps: new Map([
        ["text:0", "sent"],
        ["media:/workspace/a.png", "sent"],
      ]),
      attempts: 2,
      createdAtMs: 5_000,
      notBeforeMs: 65_000,
      lastError: "429: retry after 60 s",
    });
    expect(await backend.raw("SELECT state, outcome FROM entries")).toEqual([
      { state: "done", outcome: "replied" },
    ]);

    await me.closeReply(reply.id, "given_up", "gave up after 8 attempts");
    expect(await me.takeOverReplies()).toEqual([]);
    expect(
      await backend.raw("SELECT state, last_error FROM replies ORDER BY created_at, rowid"),
    ).toEqual([
      { state: "given_up", last_error: "gave up after 8 attempts" },
      { state: "delivered", last_error: null },
    ]);
  });

  it("refuses steps of a reply it does not have, as a StorageError", async () => {
    const journal = await backend.open();
    const error = await journal.step("no-such-reply", "text:0", "sent").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "step", path: backend.where(), full: false });
    await expect(journal.attempt("no-such-reply")).rejects.toThrow(/no outbox reply/);
  });

  it("keeps its first outcome: finished after addReply leaves the entry replied", async () => {
    const journal = await backend.open();
    const entry = await journal.record(telegramMessage("1"));
    await journal.started(entry.id);
    await journal.addReply(replyTo(telegramMessage("1")), entry.id);
    await journal.finished(entry.id, "failed");
    await journal.started(entry.id);
    expect(await backend.raw("SELECT state, outcome FROM entries")).toEqual([
      { state: "done", outcome: "replied" },
    ]);
  });

  it("keeps its first outcome: a command's answer recorded after another closes nothing again", async () => {
    const journal = await backend.open();
    const entry = await journal.record(telegramMessage("1", "/status"));
    await journal.addReply(
      { ...replyTo(telegramMessage("1")), plain: true },
      entry.id,
      [],
      "command",
    );
    // The step failed after the command's answer: its notice is recorded, the outcome stays.
    await journal.addReply(
      { ...replyTo(telegramMessage("1"), "⚠️"), plain: true },
      entry.id,
      [],
      "failed",
    );
    expect(await backend.raw("SELECT state, outcome FROM entries")).toEqual([
      { state: "done", outcome: "command" },
    ]);
    const texts = (await journal.replies({ limit: 5 })).map((r) => [r.text, r.plain]);
    expect(texts.sort()).toEqual([
      ["done", true],
      ["⚠️", true],
    ]);
    // The replies answering one entry, oldest first (a kept turn's hand-on reads them).
    const other = await journal.record(telegramMessage("2"));
    await journal.addReply(replyTo(telegramMessage("2"), "other"), other.id);
    expect((await journal.replies({ entryId: entry.id })).map((r) => r.text)).toEqual([
      "done",
      "⚠️",
    ]);
    expect((await journal.replies({ entryId: other.id })).map((r) => r.owner)).toEqual([
      journal.owner,
    ]);
  });

  it("starts, answers and closes the messages of one collected turn together", async () => {
    const journal = await backend.open();
    const [a, b, c, d] = [
      await journal.record(telegramMessage("1")),
      await journal.record(telegramMessage("2")),
      await journal.record(telegramMessage("3")),
      await journal.record(telegramMessage("4")),
    ];
    await journal.started([a!.id, b!.id]);
    expect(await backend.raw("SELECT id, state FROM entries ORDER BY id")).toEqual([
      { id: a!.id, state: "started" },
      { id: b!.id, state: "started" },
      { id: c!.id, state: "received" },
      { id: d!.id, state: "received" },
    ]);
    await journal.addReply(replyTo(telegramMessage("1")), a!.id, [b!.id]);
    await journal.finished([c!.id, d!.id], "overflow");
    expect(await backend.raw("SELECT state, outcome FROM entries ORDER BY id")).toEqual([
      { state: "done", outcome: "replied" },
      { state: "done", outcome: "replied" },
      { state: "done", outcome: "overflow" },
      { state: "done", outcome: "overflow" },
    ]);
  });

  it("prunes finished entries and closed replies older than the cut, nothing open", async () => {
    let nowMs = 1_000;
    const journal = await backend.open({ now: () => nowMs });
    const old = await journal.record(telegramMessage("1"));
    await journal.finished(old.id, "silent");
    const oldReply = await journal.addReply(replyTo(telegramMessage("1")), undefined);
    await journal.step(oldReply.id, "text:0", "sent");
    await journal.closeReply(oldReply.id, "delivered");
    const open = await journal.record(telegramMessage("2"));
    const pending = await journal.addReply(replyTo(telegramMessage("2")), undefined);
    nowMs = 10_000;
    const recent = await journal.record(telegramMessage("3"));
    await journal.finished(recent.id, "command");
    nowMs = 1_000;
    const oldAlbum = await journal.record({ ...telegramMessage("4"), receiptIds: ["4", "5"] });
    await journal.finished(oldAlbum.id, "silent");

    expect(await journal.prune(5_000)).toBe(3);
    expect(await backend.raw<{ id: number }>("SELECT id FROM entries ORDER BY id")).toEqual([
      { id: open.id },
      { id: recent.id },
    ]);
    expect(await backend.raw<{ id: string }>("SELECT id FROM replies")).toEqual([
      { id: pending.id },
    ]);
    expect(await backend.raw("SELECT * FROM reply_steps")).toEqual([]);
    expect(await backend.raw("SELECT key FROM receipts ORDER BY key")).toEqual([
      { key: "work:telegram:2" },
      { key: "work:telegram:3" },
    ]);
    // A pruned key is a new message again, and so is any receipt of a pruned album.
    expect((await journal.record(telegramMessage("1"))).fresh).toBe(true);
    expect((await journal.record(telegramMessage("5"))).fresh).toBe(true);
  });

  it("keeps everything across a reopen", async () => {
    const first = await backend.open({ owner: deadOwner });
    await first.record(telegramMessage("1"));
    await first.record(discord("77"));
    await first.close();

    const second = await backend.open();
    expect((await second.record(telegramMessage("1"))).fresh).toBe(false);
    expect(await second.cursors("work")).toEqual([{ channelId: "555", lastMessageId: "77" }]);
    expect((await second.takeOver()).map((entry) => entry.key)).toEqual([
      "work:telegram:1",
      "work:discord:77",
    ]);
  });

  it("keeps a turn's status message while it shows and hands those of gone processes to the next start", async () => {
    const dead = await backend.open({ owner: deadOwner });
    const status = (chatId: string, messageId: string) => ({
      target: { platform: "telegram" as const, chatId, replyToMessageId: "1" },
      messageId,
    });
    const cutOff = await dead.record(telegramMessage("1"));
    await dead.started(cutOff.id);
    await dead.statusShown(cutOff.id, status("100", "41"));
    const answered = await dead.record(telegramMessage("2"));
    await dead.statusShown(answered.id, status("100", "42"));
    await dead.addReply(replyTo(telegramMessage("2")), answered.id);
    const cleared = await dead.record(telegramMessage("3"));
    await dead.statusShown(cleared.id, status("100", "43"));
    await dead.statusGone(cleared.id);
    await dead.finished(cleared.id, "silent");
    const alive = await backend.open({ owner: liveOwner });
    const theirs = await alive.record(telegramMessage("4"));
    await alive.statusShown(theirs.id, status("100", "44"));
    await dead.close();

    const me = await backend.open();
    const leftovers = await me.leftoverStatuses();
    expect(leftovers).toEqual([
      {
        entryId: cutOff.id,
        profile: "work",
        platform: "telegram",
        state: "started",
        ...status("100", "41"),
        previews: [],
      },
      {
        entryId: answered.id,
        profile: "work",
        platform: "telegram",
        state: "done",
        ...status("100", "42"),
        previews: [],
      },
    ]);
    // Only reads: the entries are still there to take over, the statuses until forgotten.
    expect((await me.takeOver()).map((entry) => entry.id)).toEqual([cutOff.id]);
    expect((await me.leftoverStatuses()).map((left) => left.entryId)).toEqual([answered.id]);
    await me.statusGone(answered.id);
    await me.statusGone(cutOff.id);
    await me.release();
    expect(await (await backend.open()).leftoverStatuses()).toEqual([]);
  });

  it("records a message offered by two processes at once once, and an album's overlap not at all", async () => {
    const [a, b] = [await backend.open(), await backend.open({ owner: liveOwner })];
    const results = await Promise.all([
      a.record(telegramMessage("80")),
      b.record(telegramMessage("80")),
    ]);
    expect(results.map((result) => result.fresh).sort()).toEqual([false, true]);
    expect(results[0]?.id).toBe(results[1]?.id);
    const albums = await Promise.all([
      a.record({ ...telegramMessage("90"), receiptIds: ["90", "91"] }),
      b.record({ ...telegramMessage("91"), receiptIds: ["91", "92"] }),
    ]);
    const fresh = albums.filter((result) => result.fresh);
    expect(fresh).toHaveLength(1);
    const refused = albums.find((result) => !result.fresh);
    expect(refused).toMatchObject({ id: fresh[0]?.id, fresh: false });
    expect(refused?.unrecorded).toHaveLength(1);
    expect(await backend.raw("SELECT count(*) AS n FROM receipts")).toEqual([{ n: 3 }]);
  });

  it("reads back texts, targets, plans and step keys exactly as they were written", async () => {
    const text = "nul \u0000 here, ünïcödé 🐱, 'quotes' and \\ slashes";
    const journal = await backend.open();
    // JSON keeps a lone surrogate (a message cut mid-character); a reply's text has none.
    const message = { ...telegramMessage("1"), text: `${text}, a lone \ud800 half` };
    await journal.record(message);
    const reply = await journal.addReply(
      { ...replyTo(message), text: `MEDIA:/workspace/a.txt ${text}` },
      undefined,
    );
    const keys = [
      "text:0",
      "media:/workspace/out/chart 2: final.png",
      "media:/workspace/фото/猫 🐱.jpg",
      "notices:plan/text:0",
    ];
    for (const key of keys) await journal.step(reply.id, key, "sent");
    await journal.step(reply.id, keys[0]!, "unconfirmed");
    const plan = {
      version: 1,
      text,
      asVoice: false,
      asDocument: false,
      items: [
        {
          status: "ready",
          path: "/workspace/фото/猫 🐱.jpg",
          kind: "photo",
          filename: "猫 🐱.jpg",
          mime: "image/jpeg",
          size: 3,
        },
      ],
    } as const;
    await journal.setPlan(reply.id, plan);
    await journal.reschedule(reply.id, 1_000, "error with \u0000 inside");
    await journal.release();

    const next = await backend.open({ owner: liveOwner });
    const [taken] = await next.takeOver();
    expect(taken?.message).toEqual(message);
    const [resumed] = await next.takeOverReplies();
    expect(resumed?.text).toBe(`MEDIA:/workspace/a.txt ${text}`);
    expect(resumed?.target).toEqual(replyTo(message).target);
    expect(resumed?.plan).toEqual(plan);
    expect([...(resumed?.steps ?? new Map())]).toEqual([
      ["text:0", "unconfirmed"],
      ...keys.slice(1).map((key) => [key, "sent"]),
    ]);
    // A NUL in stored text comes back as U+FFFD on both stores (docs/store.md).
    expect(resumed?.lastError).toBe("error with \uFFFD inside");
  });

  it("releases a status still showing at a stop, its turn done or not, and forgets one that does not read back", async () => {
    const first = await backend.open();
    const done = await first.record(telegramMessage("1"));
    await first.statusShown(done.id, {
      target: { platform: "telegram", chatId: "100" },
      messageId: "7",
    });
    await first.finished(done.id, "failed");
    expect(await first.leftoverStatuses()).toEqual([]);
    expect(await first.release()).toBe(1);
    expect(await first.leftoverStatuses()).toMatchObject([{ entryId: done.id, state: "done" }]);
    await first.close();

    await backend.exec("UPDATE entries SET status = '{\"messageId\":7}' WHERE id = ?", done.id);
    const next = await backend.open();
    expect(await next.leftoverStatuses()).toEqual([]);
    expect(await backend.raw("SELECT status FROM entries")).toEqual([{ status: null }]);
  });
});

describe("SqliteJournal", () => {
  it("runs the database in a thread named mg-journal, where /proc shows names", async () => {
    const before = threadsNamed("mg-journal");
    const journal = await openJournal();
    expect(threadsNamed("mg-journal")).toBe(before + 1);
    await journal.close();
    expect(threadsNamed("mg-journal")).toBe(before);
  });

  it("creates journal.db owner-only in a 0700 directory, WAL mode", async () => {
    const journal = await openJournal();
    await journal.record(telegramMessage("1"));
    expect(path).toBe(join(home, "root", "journal.db"));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, "root")).mode & 0o777).toBe(0o700);
    expect(raw<{ journal_mode: string }>("PRAGMA journal_mode")).toEqual([{ journal_mode: "wal" }]);
  });

  it("keeps a reply's plan; a reply of a journal from before plans reads back without one", async () => {
    mkdirSync(join(home, "root"), { recursive: true });
    const old = new Database(path);
    migrate(old, JOURNAL_MIGRATIONS.slice(0, 1));
    old
      .prepare(
        `INSERT INTO replies (id, profile, platform, session_key, slot, target, text, state, owner, created_at)
         VALUES ('old-reply', 'work', 'telegram', 'agent:work:telegram:dm:100', 'profile:work',
                 '{"platform":"telegram","chatId":"100"}', 'MEDIA:/workspace/a.txt', 'pending', ?, 1)`,
      )
      .run(deadOwner);
    old.close();

    const journal = await openJournal();
    const [resumed] = await journal.takeOverReplies();
    expect(resumed).toMatchObject({ id: "old-reply", text: "MEDIA:/workspace/a.txt" });
    expect(resumed?.plan).toBeUndefined();
    const plan = {
      version: 1,
      text: "",
      asVoice: false,
      asDocument: false,
      items: [
        {
          status: "ready",
          path: "/workspace/a.txt",
          kind: "document",
          filename: "a.txt",
          mime: "text/plain",
          size: 3,
        },
      ],
    } as const;
    await journal.setPlan("old-reply", plan);
    await journal.release();
    expect((await journal.takeOverReplies())[0]?.plan).toEqual(plan);
    expect(raw("PRAGMA user_version")).toEqual([{ user_version: JOURNAL_MIGRATIONS.length }]);
  });

  it("knows an entry of a journal from before receipts by its key, an album there whole", async () => {
    mkdirSync(join(home, "root"), { recursive: true });
    const old = new Database(path);
    migrate(old, JOURNAL_MIGRATIONS.slice(0, 2));
    old
      .prepare(
        `INSERT INTO entries (key, profile, platform, state, owner, message, received_at)
         VALUES ('work:telegram:70', 'work', 'telegram', 'received', ?, ?, 1)`,
      )
      .run(deadOwner, JSON.stringify(telegramMessage("70")));
    old.close();

    const journal = await openJournal();
    expect(raw("PRAGMA user_version")).toEqual([{ user_version: JOURNAL_MIGRATIONS.length }]);
    const [entry] = await journal.takeOver();
    expect(await journal.record(telegramMessage("70"))).toEqual({ id: entry?.id, fresh: false });
    // That version recorded an album by its first update: offered again under it, the whole
    // album counts as recorded (as it did then); its other updates alone are unknown.
    expect(await journal.record({ ...telegramMessage("70"), receiptIds: ["70", "71"] })).toEqual({
      id: entry?.id,
      fresh: false,
    });
    expect(await journal.recorded("work", "telegram", ["70", "71"])).toEqual(["70", "71"]);
    expect(await journal.recorded("work", "telegram", ["71", "70"])).toEqual(["70"]);
  });

  it("refuses a journal written by a newer schema and leaves it alone", async () => {
    await (await openJournal()).close();
    const newer = new Database(path);
    newer.pragma("user_version = 9");
    newer.close();
    const error = await SqliteJournal.open(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "open", full: false });
    expect(String(error)).toMatch(/schema version 9 is newer .* move .*journal\.db aside/);
    expect(raw("PRAGMA user_version")).toEqual([{ user_version: 9 }]);
  });
});
