import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test-support/wait.js";
import { LiveHub } from "./live.js";
import { LoginSessions, sameSecret } from "./sessions.js";
import type { ConsoleSource } from "./source.js";
import { ensureWebToken, WebTokenError } from "./token.js";
import type { ChangeKind } from "./types.js";

describe("the console token", () => {
  let home = "";
  afterEach(async () => {
    if (home !== "") await rm(home, { recursive: true, force: true });
  });

  it("is made once, owner-only, and read back the same", async () => {
    home = await mkdtemp(join(tmpdir(), "mg-web-"));
    const first = await ensureWebToken(home);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await stat(join(home, "web-token"))).mode & 0o777).toBe(0o600);
    expect(await ensureWebToken(home)).toBe(first);
  });

  it("is refused from a file other users can read, or when too short", async () => {
    home = await mkdtemp(join(tmpdir(), "mg-web-"));
    await writeFile(join(home, "web-token"), `${"a".repeat(40)}\n`, { mode: 0o644 });
    await expect(ensureWebToken(home)).rejects.toThrow(/readable by other users.*chmod 600/);
    await rm(join(home, "web-token"));
    await writeFile(join(home, "web-token"), "short\n", { mode: 0o600 });
    await expect(ensureWebToken(home)).rejects.toBeInstanceOf(WebTokenError);
  });
});

describe("login sessions", () => {
  it("end after the idle time, the maximum age, or at logout", () => {
    let now = 0;
    const sessions = new LoginSessions({ now: () => now, idleMs: 100, maxMs: 250 });
    const a = sessions.create("127.0.0.1");
    expect(a.actor).toMatch(/^web:[0-9a-f]{8}$/);
    expect(a.actor).not.toContain(a.id);
    now = 90;
    expect(sessions.touch(a.id)).toBe(a);
    now = 180;
    expect(sessions.touch(a.id)).toBe(a);
    now = 260;
    expect(sessions.touch(a.id)).toBeUndefined();
    const b = sessions.create("127.0.0.1");
    now = 400;
    expect(sessions.touch(b.id)).toBeUndefined();
    const c = sessions.create("127.0.0.1");
    expect(sessions.valid(c.id)).toBe(true);
    sessions.end(c.id);
    expect(sessions.valid(c.id)).toBe(false);
    expect(sessions.touch(c.id)).toBeUndefined();
    expect(sessions.touch("made-up")).toBeUndefined();
  });

  it("keeps at most `max`, the oldest going first", () => {
    const sessions = new LoginSessions({ max: 2 });
    const [a, b, c] = [sessions.create("x"), sessions.create("x"), sessions.create("x")];
    expect(sessions.touch(a.id)).toBeUndefined();
    expect(sessions.touch(b.id)).toBe(b);
    expect(sessions.touch(c.id)).toBe(c);
  });

  it("compares secrets of any length", () => {
    expect(sameSecret("abc", "abc")).toBe(true);
    expect(sameSecret("abc", "abcd")).toBe(false);
    expect(sameSecret("", "abc")).toBe(false);
  });
});

describe("live updates", () => {
  function countingSource(): { source: ConsoleSource; listeners: number[]; calls: string[] } {
    const calls: string[] = [];
    const listeners: number[] = [];
    let count = 0;
    const source = {
      overview: async () => {
        calls.push("overview");
        return {} as never;
      },
      sessions: () => {
        calls.push("sessions");
        return [];
      },
      onChange: (_listener: (what: ChangeKind) => void) => {
        count += 1;
        listeners.push(count);
        return () => {
          count -= 1;
          listeners.push(count);
        };
      },
    } as unknown as ConsoleSource;
    return { source, listeners, calls };
  }

  it("does nothing while nobody watches, and stops when the last one leaves", async () => {
    const { source, listeners, calls } = countingSource();
    const timers = new Set<() => void>();
    const every = (run: () => void) => {
      timers.add(run);
      return () => timers.delete(run);
    };
    const hub = new LiveHub({ source, every });
    await hub.tick();
    expect([hub.ticks, timers.size, calls, listeners]).toEqual([0, 0, [], []]);

    const written: string[] = [];
    const response = new PassThrough();
    response.on("data", (chunk: Buffer) => written.push(chunk.toString()));
    hub.add("s1", response as never);
    // One timer for the updates, one for the keep-alive; one listener on the source.
    expect([hub.subscribers, timers.size, listeners]).toEqual([1, 2, [1]]);
    await waitFor(() => expect(written.join("")).toContain("event: sessions\ndata: []"));
    for (const run of timers) run();
    await waitFor(() => expect(written.join("")).toContain(": keep-alive"));

    response.emit("close");
    expect([hub.subscribers, timers.size, listeners]).toEqual([0, 0, [1, 0]]);
    const ticks = hub.ticks;
    await hub.tick();
    expect(hub.ticks).toBe(ticks);
  });

  it("closes the stream of a login session that ended", async () => {
    const { source } = countingSource();
    let valid = true;
    const hub = new LiveHub({ source, every: () => () => {}, valid: () => valid });
    const response = new PassThrough();
    let ended = false;
    response.on("finish", () => {
      ended = true;
      response.emit("close");
    });
    hub.add("s1", response as never);
    await hub.tick();
    expect(ended).toBe(false);
    valid = false;
    await hub.tick();
    await waitFor(() => expect([ended, hub.subscribers]).toEqual([true, 0]));
  });
});
