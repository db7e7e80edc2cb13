import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { damageHeader, damagePage } from "../../../../test-support/sqlite-damage.js";
import { rootPageOf } from "../../test/fixtures/sqlite-pages.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Gateway } from "../gateway.js";
import { StateStoreError } from "./errors.js";
import type { StateStore } from "./state-store.js";
import { SqliteStateStore, stateDbPath } from "./store.js";

/**
 * A damaged state database (docs/durability.md, "A damaged or lost database"): written by the
 * real store, closed, damaged in place at an offset computed from its header, opened again.
 */

let home: string;
let path: string;
const open: StateStore[] = [];

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mg-state-damage-"));
  path = stateDbPath(join(home, "profiles", "work"));
});

afterEach(async () => {
  for (const store of open.splice(0)) await store.close().catch(() => {});
  rmSync(home, { recursive: true, force: true });
});

/** A store with one session's history and a paired user, closed; the session id. */
async function writeStore(): Promise<string> {
  const store = await SqliteStateStore.open(path);
  try {
    const sessionId = await store.currentSessionId("agent:work:telegram:dm:100");
    await store.appendHistory(sessionId, [
      { role: "user", content: "hello" },
      { role: "assistant", content: "hi" },
    ]);
    return sessionId;
  } finally {
    await store.close();
  }
}

function wayOut(): string {
  return `stop the gateway and run \`mediagate db move-aside ${path}\`: it keeps the damaged file as ${path}.damaged-<time> and the next start makes a new, empty one; lost with it: the profile's conversation history`;
}

describe("a damaged state database at open", () => {
  it("refuses one whose header is damaged, naming the file, what is wrong and the way out", async () => {
    await writeStore();
    damageHeader(path);

    const error = await SqliteStateStore.open(path).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ operation: "open", path, damaged: true, full: false });
    const line = (error as Error).message;
    expect(line).toContain(`the state database ${path} is damaged (open: file is not a database)`);
    expect(line).toContain(wayOut());
  });

  it("refuses one with a damaged page of its history", async () => {
    await writeStore();
    damagePage(path, rootPageOf(path, "messages"));

    const error = await SqliteStateStore.open(path).catch((e: unknown) => e);

    expect(error).toMatchObject({ operation: "open", damaged: true });
    const line = (error as Error).message;
    expect(line).toContain(
      `the state database ${path} is damaged (open: table messages: database disk image is malformed)`,
    );
    expect(line).toContain(wayOut());
  });

  it("stops the gateway's start with that line", async () => {
    await writeStore();
    damageHeader(path);
    const config = resolveConfig({ home, profiles: [{ name: "work" }] }, { env: emptyEnv(home) });

    const error = await Gateway.create(config, { channels: [] }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StateStoreError);
    expect((error as Error).message).toContain(wayOut());
  });
});

describe("a state database opened without the check (a short command)", () => {
  it("opens, and the damage shows where a call reads it", async () => {
    const sessionId = await writeStore();
    damagePage(path, rootPageOf(path, "messages"));

    const store = await SqliteStateStore.open(path, { integrityCheck: false });
    open.push(store);

    expect(store.check.early).toEqual({ status: "skipped" });
    expect(await store.currentSessionId("agent:work:telegram:dm:100")).toBe(sessionId);
    await expect(store.loadHistory(sessionId)).rejects.toMatchObject({ damaged: true });
    expect(store.damage?.message).toContain(wayOut());
  });
});

describe("a state database found damaged while running", () => {
  it("fails a read as damaged with the way out, not as a full disk", async () => {
    const sessionId = await writeStore();
    damagePage(path, rootPageOf(path, "messages"));
    const store = await SqliteStateStore.open(path, { integrityWaitMs: 0 });
    open.push(store);

    const error = await store.loadHistory(sessionId).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ damaged: true, full: false });
    expect((error as Error).message).toContain(
      `the state database ${path} is damaged (load: database disk image is malformed)`,
    );
    expect((error as Error).message).toContain(wayOut());
    expect(store.damage?.damaged).toBe(true);
  });
});
