import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { damageHeader } from "../../../../test-support/sqlite-damage.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { journalMarkerPath } from "../durable/journal-marker.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { MoveAsideError, moveAside } from "./move-aside.js";

let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = await tempDirForTest("mg-move-aside-");
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});

/** 2030-01-02T03:04:05Z, the copy's name's time in these tests. */
const now = () => Date.UTC(2030, 0, 2, 3, 4, 5);

/**
 * What a gateway killed mid-run leaves: the journal with its -wal and -shm, copied while the
 * journal was open (the copy is what the disk held at that instant), in `home`.
 */
async function crashedJournal(home: string, messages: number): Promise<string> {
  const live = journalDbPath(join(dir, "live"));
  const journal = await SqliteJournal.open(live);
  try {
    for (let i = 1; i <= messages; i++) await journal.record(telegramMessage(String(i)));
    mkdirSync(home, { recursive: true });
    const path = journalDbPath(home);
    for (const suffix of ["", "-wal", "-shm"]) copyFileSync(`${live}${suffix}`, `${path}${suffix}`);
    copyFileSync(journalMarkerPath(live), journalMarkerPath(path));
    return path;
  } finally {
    await journal.close();
  }
}

async function run(file: string, options: Parameters<typeof moveAside>[1] = {}) {
  const lines: string[] = [];
  const code = await moveAside(file, { now, ...options }, (line) => lines.push(line));
  return { code, lines };
}

describe("mediagate db move-aside", () => {
  it("moves a journal and its -wal/-shm aside, keeping a copy SQLite reads with its log", async () => {
    const path = await crashedJournal(join(dir, "home"), 3);
    expect(existsSync(`${path}-wal`)).toBe(true);

    const { code, lines } = await run(path);

    const aside = `${path}.damaged-20300102T030405Z`;
    expect(code).toBe(0);
    for (const suffix of ["", "-wal", "-shm"]) {
      expect(existsSync(`${path}${suffix}`)).toBe(false);
      expect(existsSync(`${aside}${suffix}`)).toBe(true);
    }
    expect(lines).toEqual([
      `moved ${path} aside to ${aside} (with its -wal and -shm)`,
      "lost with it (the copy keeps them): the messages received but not answered yet (a platform does not offer a confirmed message again), the replies waiting in the outbox, and the Discord catch-up cursors (messages sent while no gateway ran are not fetched)",
      "the next start makes a new, empty journal",
    ]);
    // The messages were still in the log only: the copy found its log under its new name.
    const copy = new Database(aside, { readonly: true });
    try {
      expect(copy.prepare("SELECT count(*) FROM entries").pluck().get()).toBe(3);
    } finally {
      copy.close();
    }
  });

  it("lets the next start make a new journal without reporting it lost", async () => {
    const path = journalDbPath(join(dir, "home"));
    const before = await SqliteJournal.open(path);
    await before.record(telegramMessage("1"));
    await before.close();
    damageHeader(path);
    await expect(SqliteJournal.open(path)).rejects.toMatchObject({ damaged: true });

    await run(path);

    expect(existsSync(journalMarkerPath(path))).toBe(false);
    const journal = await SqliteJournal.open(path);
    closers.push(() => journal.close());
    expect(journal.lost).toBeUndefined();
    expect((await journal.record(telegramMessage("1"))).fresh).toBe(true);
  });

  it("moves a state database aside, saying what that loses", async () => {
    const path = stateDbPath(join(dir, "home", "profiles", "work"));
    const store = await SqliteStateStore.open(path);
    await store.currentSessionId("agent:work:telegram:dm:100");
    await store.close();
    damageHeader(path);

    const { lines } = await run(path);

    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}.damaged-20300102T030405Z`)).toBe(true);
    expect(lines[1]).toBe(
      "lost with it (the copy keeps them): the profile's conversation history (every chat starts a new session), its pairing approvals and pending codes (approved users pair again)",
    );
    const fresh = await SqliteStateStore.open(path);
    closers.push(() => fresh.close());
    expect(await fresh.listPairing()).toEqual({ pending: [], approved: [] });
  });

  it("refuses while a process has the database open, naming it, and moves nothing", async () => {
    const path = journalDbPath(join(dir, "home"));
    const journal = await SqliteJournal.open(path);
    closers.push(() => journal.close());

    const error = await run(path).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(MoveAsideError);
    expect((error as Error).message).toContain(`${path} is open in process ${process.pid} (`);
    expect((error as Error).message).toContain("stop the gateway");
    expect(existsSync(path)).toBe(true);
    expect((await journal.record(telegramMessage("1"))).fresh).toBe(true);
  });

  it("refuses when this host cannot tell who has it open, unless forced", async () => {
    const path = await crashedJournal(join(dir, "home"), 1);
    const blind = { holders: () => undefined };

    await expect(run(path, blind)).rejects.toThrow(
      `cannot tell whether a process has ${path} open (this host has no /proc); stop every gateway of this install, then run the command again with --force`,
    );
    expect(existsSync(path)).toBe(true);

    expect((await run(path, { ...blind, force: true })).code).toBe(0);
    expect(existsSync(path)).toBe(false);
  });

  it("refuses a file that is not a mediagate database, and a database that is not there", async () => {
    const other = join(dir, "notes.db");
    writeFileSync(other, "x");
    await expect(run(other)).rejects.toThrow(`${other} is not a mediagate database`);
    expect(existsSync(other)).toBe(true);
    const missing = journalDbPath(join(dir, "nowhere"));
    await expect(run(missing)).rejects.toThrow(`there is no database at ${missing}`);
  });
});
