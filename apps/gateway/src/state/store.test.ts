import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import { threadsNamed } from "../../test/fixtures/thread-names.js";
import { StateSchemaError, StateStoreError } from "./errors.js";
import { MIGRATIONS } from "./schema.js";
import type { StateStore } from "./state-store.js";
import { SqliteStateStore, stateDbPath } from "./store.js";
import type { ChatMessage } from "./types.js";

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

describe.each(StateBackends)("StateStore on %s", (kind) => {
  const backend = useStateBackend(kind, "store");
  const openStore = (now?: () => number): Promise<StateStore> =>
    backend.open(now === undefined ? {} : { now });

  it("keeps session ids and history across a restart", async () => {
    const first = await openStore();
    const id = await first.currentSessionId("agent:work:telegram:dm:1");
    await first.appendHistory(id, exchange);
    await first.close();

    const second = await openStore();
    expect(await second.currentSessionId("agent:work:telegram:dm:1")).toBe(id);
    expect(await second.loadHistory(id)).toEqual(exchange);
  });

  it("repairs on load what earlier versions stored: tool arguments not a JSON object, half emoji", async () => {
    const store = await openStore();
    // As versions before the repairs on receipt wrote them (appendHistory stores any shape).
    const cut = "\ud83d";
    const old: ChatMessage[] = [
      { role: "user", content: `a cut emoji ${cut}` },
      {
        role: "assistant",
        content: `thinking ${cut}`,
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: { name: "terminal", arguments: '{"command":"l' },
          },
          { id: "c2", type: "function", function: { name: "read_file", arguments: "" } },
          { id: "c3", type: "function", function: { name: "terminal", arguments: '["ls"]' } },
          {
            id: "c4",
            type: "function",
            function: { name: "terminal", arguments: `{"command":"echo ${cut}"}` },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: `out ${cut}x` },
      { role: "tool", tool_call_id: "c2", content: "ok" },
      { role: "tool", tool_call_id: "c3", content: "ok" },
      { role: "tool", tool_call_id: "c4", content: "ok" },
      { role: "assistant", content: "done 😀" },
    ];
    await store.appendHistory("s", old);
    const repaired: ChatMessage[] = [
      { role: "user", content: "a cut emoji \ufffd" },
      {
        role: "assistant",
        content: "thinking \ufffd",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "terminal", arguments: "{}" } },
          { id: "c2", type: "function", function: { name: "read_file", arguments: "{}" } },
          { id: "c3", type: "function", function: { name: "terminal", arguments: "{}" } },
          {
            id: "c4",
            type: "function",
            function: { name: "terminal", arguments: '{"command":"echo \ufffd"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "out \ufffdx" },
      { role: "tool", tool_call_id: "c2", content: "ok" },
      { role: "tool", tool_call_id: "c3", content: "ok" },
      { role: "tool", tool_call_id: "c4", content: "ok" },
      { role: "assistant", content: "done 😀" },
    ];
    expect(await store.loadHistory("s")).toEqual(repaired);
    const ids = (await store.loadConversation("s")).messages.map((m) => m.id);
    await store.saveSummary("s", {
      content: `summary ${cut}`,
      throughId: ids[0]!,
      baseThroughId: undefined,
    });
    const again = await openStore();
    const conversation = await again.loadConversation("s");
    // A summary is a text column, not JSON: both stores write the half as U+FFFD already
    // (SQLite as three of them).
    expect(conversation.summary?.content).toMatch(/^summary \ufffd+$/);
    expect(conversation.messages.map((m) => m.message)).toEqual(repaired.slice(1));
  });

  it("appends for a session key only while the key still has that id", async () => {
    const store = await openStore();
    const key = "agent:work:telegram:dm:5";
    const old = await store.currentSessionId(key);
    expect(await store.appendHistory(old, exchange, { sessionKey: key })).toBe(true);
    const fresh = await store.rotateSessionId(key);
    expect(await store.appendHistory(old, exchange, { sessionKey: key })).toBe(false);
    expect(await store.loadHistory(old)).toEqual([]);
    expect(await store.loadHistory(fresh)).toEqual([]);
    expect(await store.appendHistory(fresh, exchange, { sessionKey: key })).toBe(true);
    expect(await store.loadHistory(fresh)).toEqual(exchange);
  });

  it("gives each session key its own stable random id", async () => {
    const store = await openStore();
    const a = await store.currentSessionId("agent:work:telegram:dm:1");
    const b = await store.currentSessionId("agent:work:telegram:dm:2");
    expect(a).not.toBe(b);
    expect(await store.currentSessionId("agent:work:telegram:dm:1")).toBe(a);
  });

  it("rotates to a new id and deletes the old history on /reset", async () => {
    const store = await openStore();
    const key = "agent:work:discord:group:9:7";
    const old = await store.currentSessionId(key);
    await store.appendHistory(old, exchange);
    const other = await store.currentSessionId("agent:work:discord:group:9:8");
    await store.appendHistory(other, exchange);

    const fresh = await store.rotateSessionId(key);

    expect(fresh).not.toBe(old);
    expect(await store.currentSessionId(key)).toBe(fresh);
    expect(await store.loadHistory(old)).toEqual([]);
    expect(await store.loadHistory(fresh)).toEqual([]);
    expect(await store.loadHistory(other)).toEqual(exchange);
  });

  it("rotates a key it has never seen into a first id", async () => {
    const store = await openStore();
    const id = await store.rotateSessionId("agent:work:console:dm:local");
    expect(await store.currentSessionId("agent:work:console:dm:local")).toBe(id);
  });

  it("loads only the newest messages when given a limit, oldest first", async () => {
    const store = await openStore();
    await store.appendHistory("s", exchange);
    expect(await store.loadHistory("s", 2)).toEqual(exchange.slice(2));
    expect(await store.loadHistory("s", 0)).toEqual([]);
    expect(await store.loadHistory("s", 100)).toEqual(exchange);
  });

  it("appends in order across calls", async () => {
    const store = await openStore();
    await store.appendHistory("s", exchange.slice(0, 1));
    await store.appendHistory("s", exchange.slice(1));
    expect(await store.loadHistory("s")).toEqual(exchange);
  });

  it("writes nothing when one message of an append is invalid", async () => {
    const store = await openStore();
    const bad = [exchange[0], { role: "robot", content: "?" }] as unknown as ChatMessage[];
    await expect(store.appendHistory("s", bad)).rejects.toThrow(StateStoreError);
    expect(await store.loadHistory("s")).toEqual([]);
  });

  it("rolls back an append whose later message cannot be serialized", async () => {
    const store = await openStore();
    await store.appendHistory("s", exchange.slice(0, 1));
    const cyclic: { role: "user"; content: string; self?: unknown } = {
      role: "user",
      content: "x",
    };
    cyclic.self = cyclic;
    await expect(store.appendHistory("s", [exchange[1]!, cyclic])).rejects.toThrow(StateStoreError);
    expect(await store.loadHistory("s")).toEqual(exchange.slice(0, 1));
  });

  it("clears one session's history and keeps the others", async () => {
    const store = await openStore();
    await store.appendHistory("a", exchange);
    await store.appendHistory("b", exchange);
    await store.clearHistory("a");
    expect(await store.loadHistory("a")).toEqual([]);
    expect(await store.loadHistory("b")).toEqual(exchange);
  });

  it("refuses a corrupt row with the row id instead of handing it to a model", async () => {
    await (await openStore()).close();
    if (kind === "sqlite") {
      await backend.raw(
        "INSERT INTO messages (session_id, role, body, created_at) VALUES (?, ?, ?, ?)",
        ["s", "user", '{"role":"user"}', 0],
      );
    } else {
      await backend.raw(
        "INSERT INTO state_messages (profile, session_id, role, body, created_at) VALUES ($1, $2, $3, $4, $5)",
        [backend.profile, "s", "user", '{"role":"user"}', 0],
      );
    }
    await expect((await openStore()).loadHistory("s")).rejects.toThrow(
      /message row \d+ is not a chat message/,
    );
  });

  it("rejects calls after close with a StateStoreError naming the call", async () => {
    const store = await openStore();
    await store.close();
    const error = await store.loadHistory("s").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ operation: "loadHistory" });
    expect(String(error)).toMatch(/(database|store) is closed/);
  });

  it("can be closed twice", async () => {
    const store = await openStore();
    await store.close();
    await expect(store.close()).resolves.toBeUndefined();
  });

  describe("pairing", () => {
    const limits = { codeTtlMs: 3_600_000, maxPending: 3 };
    const guard = { maxFailed: 3, lockMs: 900_000 };
    const alice = { user: "telegram:1", userName: "alice", chatId: "1" };
    let nowMs: number;
    const clock = () => nowMs;

    beforeEach(() => {
      nowMs = 1_700_000_000_000;
    });

    it("issues one code per user and repeats it, with the same expiry, while it is pending", async () => {
      const store = await openStore(clock);
      const first = await store.requestPairing(alice, limits);
      expect(first).toMatchObject({ status: "issued", expiresAtMs: nowMs + limits.codeTtlMs });
      nowMs += 60_000;
      const again = await store.requestPairing(alice, limits);
      expect(again).toEqual({ ...first, status: "pending" });
      expect((await store.listPairing()).pending).toHaveLength(1);
    });

    it("issues a new code once the old one expired, and the old one approves nobody", async () => {
      const store = await openStore(clock);
      const first = await store.requestPairing(alice, limits);
      if (first.status !== "issued") throw new Error(first.status);
      nowMs += limits.codeTtlMs;
      expect(await store.approvePairing(first.code, "cli")).toEqual({ status: "unknown" });
      expect(await store.isPaired(alice.user)).toBe(false);
      const second = await store.requestPairing(alice, limits);
      expect(second.status).toBe("issued");
      if (second.status !== "issued") return;
      expect(second.code).not.toBe(first.code);
    });

    it("refuses a new code when the profile has maxPending codes waiting, until one expires", async () => {
      const store = await openStore(clock);
      for (let i = 0; i < limits.maxPending; i++) {
        const result = await store.requestPairing(
          { user: `telegram:${10 + i}`, chatId: "x" },
          limits,
        );
        expect(result.status).toBe("issued");
        nowMs += 1000;
      }
      const late = { user: "telegram:99", chatId: "99" };
      expect(await store.requestPairing(late, limits)).toEqual({ status: "full" });
      // A user who already has a code still gets it back when the profile is full.
      expect(
        (await store.requestPairing({ user: "telegram:10", chatId: "x" }, limits)).status,
      ).toBe("pending");
      nowMs += limits.codeTtlMs - 2000; // the first code is now expired
      expect((await store.requestPairing(late, limits)).status).toBe("issued");
    });

    it("approves the user of a code (any case or dashes typed are the caller's), once", async () => {
      const store = await openStore(clock);
      const issued = await store.requestPairing(alice, limits);
      if (issued.status !== "issued") throw new Error(issued.status);
      expect(await store.approvePairing(issued.code, "telegram:1001", guard)).toEqual({
        status: "approved",
        user: "telegram:1",
        userName: "alice",
        chatId: "1",
      });
      expect(await store.isPaired("telegram:1")).toBe(true);
      expect(await store.isPaired("telegram:2")).toBe(false);
      expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe("used");
      const list = await store.listPairing();
      expect(list.pending).toEqual([]);
      expect(list.approved).toEqual([
        {
          user: "telegram:1",
          userName: "alice",
          chatId: "1",
          approvedAtMs: nowMs,
          approvedBy: "telegram:1001",
        },
      ]);
    });

    it("answers a code approved again with who it let in, and does not count it as a wrong code", async () => {
      const store = await openStore(clock);
      const issued = await store.requestPairing(alice, limits);
      if (issued.status !== "issued") throw new Error(issued.status);
      const approvedAtMs = nowMs;
      expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe(
        "approved",
      );
      nowMs += 60_000;
      for (let i = 0; i < guard.maxFailed + 1; i++) {
        expect(await store.approvePairing(issued.code, "telegram:1002", guard)).toEqual({
          status: "used",
          user: "telegram:1",
          userName: "alice",
          approvedAtMs,
          approvedBy: "telegram:1001",
        });
      }
      expect((await store.listPairing()).lockedUntilMs).toBeUndefined();
      expect(await store.approvePairing("AAAAAAAA", "telegram:1001", guard)).toEqual({
        status: "unknown",
        attemptsLeft: guard.maxFailed - 1,
      });
      expect((await store.approvePairing(issued.code, "cli")).status).toBe("used");
      // Revoked: the code is forgotten with the approval, and is a wrong code again.
      await store.revokePairing({ user: alice.user });
      expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe(
        "unknown",
      );
    });

    it("locks chat approvals after maxFailed wrong codes, even for a right one, until lockMs passed", async () => {
      const store = await openStore(clock);
      const issued = await store.requestPairing(alice, { ...limits, codeTtlMs: 24 * 3_600_000 });
      if (issued.status !== "issued") throw new Error(issued.status);
      expect(await store.approvePairing("AAAAAAAA", "telegram:1001", guard)).toEqual({
        status: "unknown",
        attemptsLeft: 2,
      });
      expect(await store.approvePairing("AAAAAAAB", "telegram:1001", guard)).toEqual({
        status: "unknown",
        attemptsLeft: 1,
      });
      const lockedUntilMs = nowMs + guard.lockMs;
      expect(await store.approvePairing("AAAAAAAC", "telegram:1001", guard)).toEqual({
        status: "unknown",
        attemptsLeft: 0,
        lockedUntilMs,
      });
      expect(await store.approvePairing(issued.code, "telegram:1001", guard)).toEqual({
        status: "locked",
        lockedUntilMs,
      });
      expect(await store.isPaired(alice.user)).toBe(false);
      expect((await store.listPairing()).lockedUntilMs).toBe(lockedUntilMs);
      nowMs = lockedUntilMs - 1;
      expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe(
        "locked",
      );
      nowMs = lockedUntilMs;
      expect((await store.listPairing()).lockedUntilMs).toBeUndefined();
      expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe(
        "approved",
      );
    });

    it("resets the count of wrong codes after an approval", async () => {
      const store = await openStore(clock);
      for (const n of [1, 2]) {
        const issued = await store.requestPairing(
          { user: `telegram:${n}`, chatId: `${n}` },
          limits,
        );
        if (issued.status !== "issued") throw new Error(issued.status);
        await store.approvePairing("AAAAAAAA", "telegram:1001", guard);
        await store.approvePairing("AAAAAAAA", "telegram:1001", guard);
        expect((await store.approvePairing(issued.code, "telegram:1001", guard)).status).toBe(
          "approved",
        );
      }
      expect(await store.approvePairing("AAAAAAAA", "telegram:1001", guard)).toEqual({
        status: "unknown",
        attemptsLeft: 2,
      });
    });

    it("approvals without a guard (the CLI) neither count nor respect the chat lock", async () => {
      const store = await openStore(clock);
      for (let i = 0; i < guard.maxFailed; i++) await store.approvePairing("AAAAAAAA", "x", guard);
      expect((await store.listPairing()).lockedUntilMs).toBeDefined();
      const issued = await store.requestPairing(alice, limits);
      if (issued.status !== "issued") throw new Error(issued.status);
      for (let i = 0; i < 10; i++) {
        expect(await store.approvePairing("AAAAAAAA", "cli")).toEqual({ status: "unknown" });
      }
      expect((await store.approvePairing(issued.code, "cli")).status).toBe("approved");
    });

    it("revokes an approved user with their pending code, or one pending code", async () => {
      const store = await openStore(clock);
      const issued = await store.requestPairing(alice, limits);
      if (issued.status !== "issued") throw new Error(issued.status);
      await store.approvePairing(issued.code, "cli");
      const bob = await store.requestPairing({ user: "discord:2", chatId: "dm-2" }, limits);
      if (bob.status !== "issued") throw new Error(bob.status);
      expect(await store.revokePairing({ user: "telegram:1" })).toEqual({
        approved: 1,
        pending: 0,
      });
      expect(await store.isPaired("telegram:1")).toBe(false);
      expect(await store.revokePairing({ user: "telegram:1" })).toEqual({
        approved: 0,
        pending: 0,
      });
      expect(await store.revokePairing({ code: bob.code })).toEqual({ approved: 0, pending: 1 });
      expect(await store.listPairing()).toEqual({ pending: [], approved: [] });
    });

    it("keeps approvals across a reopen, and a second process sees them at once", async () => {
      const gateway = await openStore(clock);
      const cli = await openStore(clock);
      const issued = await gateway.requestPairing(alice, limits);
      if (issued.status !== "issued") throw new Error(issued.status);
      expect((await cli.listPairing()).pending.map((p) => p.code)).toEqual([issued.code]);
      expect((await cli.approvePairing(issued.code, "cli")).status).toBe("approved");
      expect(await gateway.isPaired(alice.user)).toBe(true);
      await gateway.close();
      const reopened = await openStore(clock);
      expect(await reopened.isPaired(alice.user)).toBe(true);
    });
  });
});

describe("SqliteStateStore files", () => {
  let home: string;
  let dbPath: string;
  const open: StateStore[] = [];

  async function openStore(): Promise<StateStore> {
    const store = await SqliteStateStore.open(dbPath);
    open.push(store);
    return store;
  }

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), "mg-state-"));
    dbPath = stateDbPath(join(home, "profiles", "work"));
  });

  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("runs the database in a thread named mg-state, where /proc shows names", async () => {
    const before = threadsNamed("mg-state");
    const store = await openStore();
    expect(threadsNamed("mg-state")).toBe(before + 1);
    await store.close();
    expect(threadsNamed("mg-state")).toBe(before);
  });

  it("creates the file and its parent directories in WAL mode, owner-only", async () => {
    await openStore();
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

  it("refuses a database written by a newer schema and leaves it alone", async () => {
    await (await openStore()).close();
    const newer = new Database(dbPath);
    const newerVersion = MIGRATIONS.at(-1)!.version + 1;
    newer.pragma(`user_version = ${newerVersion}`);
    newer.close();
    await expect(SqliteStateStore.open(dbPath)).rejects.toThrow(StateSchemaError);
    const check = new Database(dbPath, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(newerVersion);
    check.close();
  });

  it("reports a path it cannot open as a StateStoreError naming the path", async () => {
    const blocked = join(home, "file");
    await openStore();
    // A regular file where a directory is needed.
    new Database(blocked).close();
    const error = await SqliteStateStore.open(join(blocked, "state.db")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ operation: "open", path: join(blocked, "state.db") });
  });

  it("rejects calls after close with a StateStoreError naming the path", async () => {
    const store = await openStore();
    await store.close();
    const error = await store.loadHistory("s").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateStoreError);
    expect(error).toMatchObject({ operation: "loadHistory", path: dbPath });
    expect(String(error)).toMatch(/the database is closed/);
  });
});
