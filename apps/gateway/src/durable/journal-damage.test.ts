import { existsSync, rmSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { damageHeader, damagePage } from "../../../../test-support/sqlite-damage.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { HandChannel } from "../../test/fixtures/hand-channel.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { rootPageOf } from "../../test/fixtures/sqlite-pages.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Gateway, NotRecordedDamagedText } from "../gateway.js";
import { createLogger } from "../log.js";
import { StorageError } from "./errors.js";
import { journalDbPath, SqliteJournal } from "./journal.js";
import { journalMarkerPath } from "./journal-marker.js";

/**
 * A damaged or lost journal (docs/durability.md, "A damaged or lost database"): each file is
 * written by the real journal, closed, then damaged in place at an offset computed from its
 * header, and opened again the way the gateway opens it.
 */

let home: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  home = await tempDirForTest("mg-journal-damage-");
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});

async function openJournal(
  path: string,
  options: Parameters<typeof SqliteJournal.open>[1] = {},
): Promise<SqliteJournal> {
  const journal = await SqliteJournal.open(path, options);
  closers.push(() => journal.close());
  return journal;
}

/** A journal with a few handled messages and one reply waiting in the outbox, closed. */
async function writeJournal(path: string): Promise<void> {
  const journal = await SqliteJournal.open(path);
  try {
    for (const id of ["1", "2", "3"]) await journal.record(telegramMessage(id));
    const { id } = await journal.record(telegramMessage("4"));
    await journal.addReply(
      {
        profile: "work",
        platform: "telegram",
        sessionKey: "agent:work:telegram:dm:100",
        slot: "default",
        target: { platform: "telegram", chatId: "100" },
        text: "a reply still to deliver",
      },
      id,
    );
  } finally {
    await journal.close();
  }
}

/** The way-out part every damaged-journal line ends with. */
function wayOut(path: string): string {
  return `stop the gateway and run \`mediagate db move-aside ${path}\`: it keeps the damaged file as ${path}.damaged-<time> and the next start makes a new, empty one; lost with it: the messages received but not answered yet`;
}

describe("a damaged journal at open", () => {
  it("refuses a journal whose header is damaged, naming the file, what is wrong and the way out", async () => {
    const path = journalDbPath(home);
    await writeJournal(path);
    damageHeader(path);

    const error = await SqliteJournal.open(path).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "open", path, damaged: true, full: false });
    const line = (error as Error).message;
    expect(line).toContain(`the journal ${path} is damaged (open: file is not a database)`);
    expect(line).toContain("the gateway cannot run on it");
    expect(line).toContain(wayOut(path));
  });

  it("refuses a journal with one damaged page, which SQLite itself opens without a word", async () => {
    const path = journalDbPath(home);
    await writeJournal(path);
    const page = rootPageOf(path, "sqlite_autoindex_entries_1");
    damagePage(path, page);

    const error = await SqliteJournal.open(path).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "open", path, damaged: true });
    const line = (error as Error).message;
    expect(line).toContain(`the journal ${path} is damaged (open: Tree ${page} page ${page}: `);
    expect(line).not.toContain("\n");
    expect(line).toContain(wayOut(path));
  });

  it("refuses it from the gateway's start, before anything runs", async () => {
    await writeJournal(journalDbPath(home));
    damageHeader(journalDbPath(home));
    const config = resolveConfig({ home, profiles: [{ name: "work" }] }, { env: emptyEnv(home) });

    const error = await Gateway.create(config, { channels: [] }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(wayOut(journalDbPath(home)));
  });
});

describe("a journal found damaged while running", () => {
  it("fails a record as damaged, not as a full disk, and keeps the damage once found", async () => {
    const path = journalDbPath(home);
    await writeJournal(path);
    damagePage(path, rootPageOf(path, "sqlite_autoindex_entries_1"));
    // The check outlasts a zero wait: the journal opens on the damaged file.
    const journal = await openJournal(path, { integrityWaitMs: 0 });
    expect(journal.check.early).toBeUndefined();

    const error = await journal.record(telegramMessage("5")).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "record", damaged: true, full: false });
    const line = (error as Error).message;
    expect(line).toContain(
      `the journal ${path} is damaged (record: database disk image is malformed)`,
    );
    expect(line).toContain("cannot be recorded until the journal is replaced");
    expect(line).not.toContain("will be handled once it is saved");
    expect(line).toContain(wayOut(path));
    expect(journal.damage?.damaged).toBe(true);
    expect((await journal.check.report).status).toBe("damaged");
  });
});

interface LogLine {
  level: number;
  msg: string;
  path?: string;
}

async function startGateway(integrityWaitMs?: number) {
  const lines: string[] = [];
  const config = resolveConfig(
    {
      home,
      health: { listen: "127.0.0.1:0" },
      profiles: [{ name: "work", allowedUsers: ["telegram:7"] }],
    },
    { env: emptyEnv(home) },
  );
  const channel = new HandChannel();
  const gateway = await Gateway.create(config, {
    channels: [channel],
    logger: createLogger({ level: "info", destination: { write: (l) => lines.push(l) } }),
    ...(integrityWaitMs === undefined ? {} : { integrityWaitMs }),
  });
  closers.push(() => gateway.stop());
  await gateway.start();
  const logs = () => lines.map((l) => JSON.parse(l) as LogLine);
  const url = logs().find((l) => l.msg === "health endpoint listening") as { url?: string };
  const health = async () =>
    (await (await fetch(`${url.url}/health`)).json()) as {
      status: string;
      journal: { writable: boolean; damaged?: boolean; detail?: string };
    };
  return { channel, logs, health };
}

describe("the gateway on a journal damaged while running", () => {
  it("tells the chat nothing it cannot keep, and health reports the damage with the way out", async () => {
    const path = journalDbPath(home);
    await writeJournal(path);
    damagePage(path, rootPageOf(path, "sqlite_autoindex_entries_1"));
    const { channel, logs, health } = await startGateway(0);

    await expect(channel.onMessage?.(telegramMessage("5"))).rejects.toMatchObject({
      damaged: true,
    });

    expect(channel.texts).toEqual([NotRecordedDamagedText]);
    expect(channel.texts.join("\n")).not.toContain("once it can be saved");
    const report = await health();
    expect(report.status).toBe("failed");
    expect(report.journal).toMatchObject({ writable: false, damaged: true });
    expect(report.journal.detail).toContain(wayOut(path));
    const notRecorded = logs().find((l) => l.msg.startsWith("message not recorded"));
    expect(notRecorded?.msg).toContain("the journal is damaged");
  });
});

describe("a lost journal", () => {
  it("is told from a first start by the marker its first open left", async () => {
    const path = journalDbPath(home);
    const first = await openJournal(path, { now: () => Date.UTC(2030, 0, 2) });
    expect(first.lost).toBeUndefined();
    expect(existsSync(journalMarkerPath(path))).toBe(true);
    await first.close();
    rmSync(path);

    const again = await openJournal(path, { now: () => Date.UTC(2030, 0, 3) });

    expect(again.lost).toEqual({
      path,
      marker: journalMarkerPath(path),
      since: "2030-01-02T00:00:00.000Z",
    });
    await again.close();
    const third = await openJournal(path);
    expect(third.lost).toBeUndefined();
  });

  it("is logged by the gateway at error level with what could not be recovered", async () => {
    await writeJournal(journalDbPath(home));
    rmSync(journalDbPath(home));

    const { logs } = await startGateway();

    const lost = logs().find((l) => l.msg.startsWith("the journal"));
    expect(lost?.level).toBe(50);
    expect(lost?.path).toBe(journalDbPath(home));
    expect(lost?.msg).toContain(`the journal ${journalDbPath(home)} is gone`);
    expect(lost?.msg).toContain(
      "what the old one held is lost: the messages received but not answered yet (a platform does not offer a confirmed message again), the replies waiting in the outbox",
    );
  });
});
