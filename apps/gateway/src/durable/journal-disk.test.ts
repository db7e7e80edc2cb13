import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { waitFor } from "../../../../test-support/wait.js";
import { HandChannel } from "../../test/fixtures/hand-channel.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { type LoopFs, mountLoopFs } from "../../test/fixtures/loop-fs.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Gateway, NotRecordedText } from "../gateway.js";
import { createLogger } from "../log.js";
import type { StateStore } from "../state/state-store.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { StorageError } from "./errors.js";
import { journalDbPath, SqliteJournal } from "./journal.js";

/**
 * The journal on a real small file system that fills up or freezes (root only: the dev
 * machines and CI run as root). See docs/durability.md.
 */

let disk: LoopFs;
let elsewhere: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  disk = await mountLoopFs(8);
  elsewhere = await tempDirForTest("mg-journal-elsewhere-");
});

afterEach(async () => {
  await disk.thaw();
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await disk.remove();
});

async function openJournal(path: string): Promise<SqliteJournal> {
  const journal = await SqliteJournal.open(path);
  closers.push(() => journal.close());
  return journal;
}

async function openState(home: string): Promise<StateStore> {
  const store = await SqliteStateStore.open(stateDbPath(join(home, "profiles", "work")));
  closers.push(() => store.close());
  return store;
}

/** Writes zeros to `path` until the disk is full; returns the bytes written. */
function fill(path: string): number {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(64 * 1024);
  let written = 0;
  try {
    for (;;) written += writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
  return written;
}

describe("journal on a full disk", () => {
  it("rejects record() with StorageError.full, saves nothing of it, and works once space is freed", async () => {
    const path = journalDbPath(join(disk.dir, "root"));
    const journal = await openJournal(path);
    const kept = await journal.record(telegramMessage("1"));
    const filler = join(disk.dir, "filler");
    expect(fill(filler)).toBeGreaterThan(0);

    // A message bigger than any free page left in the database or its WAL.
    const big = telegramMessage("2", "x".repeat(512 * 1024));
    const error = await journal.record(big).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ operation: "record", path, full: true });
    expect(String(error)).toContain(
      `the disk holding ${path} is full; free space; the message was not confirmed and will be handled once it is saved`,
    );
    expect(String(error)).not.toContain("xxxx");

    rmSync(filler);
    expect(await journal.record(telegramMessage("1"))).toEqual({ id: kept.id, fresh: false });
    expect((await journal.record(big)).fresh).toBe(true);
    await journal.close();
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(db.prepare("SELECT key FROM entries ORDER BY id").pluck().all()).toEqual([
        "work:telegram:1",
        "work:telegram:2",
      ]);
    } finally {
      db.close();
    }
  });
});

describe("the gateway's health endpoint while the journal's disk is full", () => {
  it("reports journal.writable false (status degraded) with the reason, and true once a message is saved again", async () => {
    const home = join(disk.dir, "home");
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
    });
    closers.push(() => gateway.stop());
    await gateway.start();
    const listening = lines.map((l) => JSON.parse(l) as { msg?: string; url?: string });
    const url = listening.find((l) => l.msg === "health endpoint listening")?.url;
    const health = async () =>
      (await (await fetch(`${url}/health`)).json()) as {
        status: string;
        journal: { writable: boolean; detail?: string };
      };
    expect((await health()).journal).toEqual({ writable: true });

    const filler = join(disk.dir, "filler");
    fill(filler);
    const big = telegramMessage("1", "x".repeat(512 * 1024));
    await expect(channel.onMessage?.(big)).rejects.toBeInstanceOf(StorageError);
    const full = await health();
    expect(full.status).toBe("degraded");
    expect(full.journal.writable).toBe(false);
    expect(full.journal.detail).toMatch(/is full/);
    expect(channel.texts).toEqual([NotRecordedText]);

    rmSync(filler);
    await channel.onMessage?.(telegramMessage("2", "/status"));
    expect((await health()).journal).toEqual({ writable: true });
  });
});

describe("journal and state database on a frozen disk", () => {
  it("keeps the event loop and the databases of other disks running while writes wait", async () => {
    const frozenJournal = await openJournal(journalDbPath(join(disk.dir, "root")));
    const frozenState = await openState(join(disk.dir, "root"));
    const otherJournal = await openJournal(journalDbPath(join(elsewhere, "root")));
    const otherState = await openState(elsewhere);
    await frozenJournal.record(telegramMessage("0"));
    const frozenSession = await frozenState.currentSessionId("agent:work:telegram:dm:100");

    await disk.freeze();
    const settled: string[] = [];
    const waiting = [
      frozenJournal.record(telegramMessage("1")).finally(() => settled.push("journal")),
      frozenState
        .appendHistory(frozenSession, [{ role: "user", content: "waits for the disk" }])
        .finally(() => settled.push("state")),
    ] as const;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      await waitFor(() => expect(ticks).toBeGreaterThanOrEqual(50));
      expect((await otherJournal.record(telegramMessage("1"))).fresh).toBe(true);
      const sessionId = await otherState.currentSessionId("agent:work:telegram:dm:100");
      await otherState.appendHistory(sessionId, [{ role: "user", content: "still answering" }]);
      expect(await otherState.loadHistory(sessionId)).toEqual([
        { role: "user", content: "still answering" },
      ]);
      expect(settled).toEqual([]);
    } finally {
      clearInterval(timer);
      await disk.thaw();
    }
    expect((await waiting[0]).fresh).toBe(true);
    await waiting[1];
    expect(await frozenState.loadHistory(frozenSession)).toEqual([
      { role: "user", content: "waits for the disk" },
    ]);
  });
});
