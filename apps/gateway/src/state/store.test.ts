import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StateSchemaError, StateStoreError } from "./errors.js";
import { MIGRATIONS } from "./schema.js";
import { StateStore, stateDbPath } from "./store.js";
import type { ChatMessage } from "./types.js";

let home: string;
let dbPath: string;
const open: StateStore[] = [];

function openStore(): StateStore {
  const store = StateStore.open(dbPath);
  open.push(store);
  return store;
}

const exchange: ChatMessage[] = [
  { role: "user", content: "make a file" },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      {
        id: "call_1",
        type: "function",
        function: { name: "terminal", arguments: '{"command":"ls"}' },
      },
    ],
  },
  { role: "tool", tool_call_id: "call_1", content: "exit_code: 0" },
  { role: "assistant", content: "done\nMEDIA:/workspace/a.txt" },
];

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mediagate-state-"));
  dbPath = stateDbPath(join(home, "profiles", "work"));
});

afterEach(() => {
  for (const store of open.splice(0)) store.close();
  rmSync(home, { recursive: true, force: true });
});

describe("StateStore", () => {
  it("creates the file and its parent directories in WAL mode, owner-only", () => {
    openStore();
    expect(dbPath).toBe(join(home, "profiles", "work", "state.db"));
    expect(statSync(dbPath).mode & 0o777).toBe(0o600);
    const raw = new Database(dbPath, { readonly: true });
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.pragma("user_version", { simple: true })).toBe(MIGRATIONS.at(-1)?.version);
    } finally {
      raw.close();
    }
  });

  it("keeps session ids and history across a restart", () => {
    const first = openStore();
    const id = first.currentSessionId("agent:work:telegram:dm:1");
    first.appendHistory(id, exchange);
    first.close();

    const second = openStore();
    expect(second.currentSessionId("agent:work:telegram:dm:1")).toBe(id);
    expect(second.loadHistory(id)).toEqual(exchange);
  });

  it("gives each session key its own stable random id", () => {
    const store = openStore();
    const a = store.currentSessionId("agent:work:telegram:dm:1");
    const b = store.currentSessionId("agent:work:telegram:dm:2");
    expect(a).not.toBe(b);
    expect(store.currentSessionId("agent:work:telegram:dm:1")).toBe(a);
  });

  it("rotates to a new id and deletes the old history on /reset", () => {
    const store = openStore();
    const key = "agent:work:discord:group:9:7";
    const old = store.currentSessionId(key);
    store.appendHistory(old, exchange);
    const other = store.currentSessionId("agent:work:discord:group:9:8");
    store.appendHistory(other, exchange);

    const fresh = store.rotateSessionId(key);

    expect(fresh).not.toBe(old);
    expect(store.currentSessionId(key)).toBe(fresh);
    expect(store.loadHistory(old)).toEqual([]);
    expect(store.loadHistory(fresh)).toEqual([]);
    expect(store.loadHistory(other)).toEqual(exchange);
  });

  it("rotates a key it has never seen into a first id", () => {
    const store = openStore();
    const id = store.rotateSessionId("agent:work:console:dm:local");
    expect(store.currentSessionId("agent:work:console:dm:local")).toBe(id);
  });

  it("loads only the newest messages when given a limit, oldest first", () => {
    const store = openStore();
    store.appendHistory("s", exchange);
    expect(store.loadHistory("s", 2)).toEqual(exchange.slice(2));
    expect(store.loadHistory("s", 0)).toEqual([]);
    expect(store.loadHistory("s", 100)).toEqual(exchange);
  });

  it("appends in order across calls", () => {
    const store = openStore();
    store.appendHistory("s", exchange.slice(0, 1));
    store.appendHistory("s", exchange.slice(1));
    expect(store.loadHistory("s")).toEqual(exchange);
  });

  it("writes nothing when one message of an append is invalid", () => {
    const store = openStore();
    const bad = [exchange[0], { role: "robot", content: "?" }] as unknown as ChatMessage[];
    expect(() => store.appendHistory("s", bad)).toThrow(StateStoreError);
    expect(store.loadHistory("s")).toEqual([]);
  });

  it("rolls back an append whose later message cannot be serialized", () => {
    const store = openStore();
    store.appendHistory("s", exchange.slice(0, 1));
    const cyclic: { role: "user"; content: string; self?: unknown } = {
      role: "user",
      content: "x",
    };
    cyclic.self = cyclic;
    expect(() => store.appendHistory("s", [exchange[1]!, cyclic])).toThrow(StateStoreError);
    expect(store.loadHistory("s")).toEqual(exchange.slice(0, 1));
  });

  it("clears one session's history and keeps the others", () => {
    const store = openStore();
    store.appendHistory("a", exchange);
    store.appendHistory("b", exchange);
    store.clearHistory("a");
    expect(store.loadHistory("a")).toEqual([]);
    expect(store.loadHistory("b")).toEqual(exchange);
  });

  it("refuses a corrupt row with the row id instead of handing it to a model", () => {
    openStore().close();
    const raw = new Database(dbPath);
    raw
      .prepare("INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, ?)")
      .run("s", "user", '{"role":"user"}', 0);
    raw.close();
    expect(() => openStore().loadHistory("s")).toThrow(/message row 1 is not a chat message/);
  });

  it("refuses a database written by a newer schema and leaves it alone", () => {
    openStore().close();
    const newer = new Database(dbPath);
    newer.pragma("user_version = 7");
    newer.close();
    expect(() => StateStore.open(dbPath)).toThrow(StateSchemaError);
    const check = new Database(dbPath, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(7);
    check.close();
  });

  it("reports a path it cannot open as a StateStoreError naming the path", () => {
    const blocked = join(home, "file");
    openStore();
    // A regular file where a directory is needed.
    new Database(blocked).close();
    const error = (() => {
      try {
        StateStore.open(join(blocked, "state.db"));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ operation: "open", path: join(blocked, "state.db") });
  });

  it("can be closed twice", () => {
    const store = openStore();
    store.close();
    expect(() => store.close()).not.toThrow();
  });
});
