import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test-support/wait.js";
import { answeredHostNames, hostNameOf, WebHostsError } from "./hosts.js";
import { LiveHub } from "./live.js";
import { LoginLimiter, limitedAddress } from "./login-limiter.js";
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

  it("leaves no token file when the disk is full, and makes one once there is room", async () => {
    home = await mkdtemp(join(tmpdir(), "mg-web-"));
    const run = promisify(execFile);
    // A one-page tmpfs as the home (root only, as on the dev machines and CI), filled.
    await run("mount", ["-t", "tmpfs", "-o", "size=4k,mode=0700", "tmpfs", home]);
    try {
      await writeFile(join(home, "filler"), Buffer.alloc(4096));
      await expect(ensureWebToken(home)).rejects.toMatchObject({ code: "ENOSPC" });
      expect(await readdir(home)).toEqual(["filler"]);

      await rm(join(home, "filler"));
      const token = await ensureWebToken(home);
      expect(await ensureWebToken(home)).toBe(token);
      expect(await readdir(home)).toEqual(["web-token"]);
    } finally {
      await run("umount", [home]);
    }
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

describe("the login limiter", () => {
  it("waits after the fifth wrong token, doubling each time up to the longest wait, and forgets", () => {
    let now = 0;
    const limiter = new LoginLimiter({
      now: () => now,
      failuresBeforeWait: 5,
      firstWaitMs: 1_000,
      maxWaitMs: 8_000,
      forgetMs: 60_000,
    });
    const waits = [];
    for (let i = 0; i < 9; i += 1) {
      waits.push(limiter.failed("10.0.0.1"));
      now += limiter.waitMs("10.0.0.1");
    }
    expect(waits).toEqual([0, 0, 0, 0, 1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(limiter.waitMs("10.0.0.2")).toBe(0);
    limiter.failed("10.0.0.1");
    expect(limiter.waitMs("10.0.0.1")).toBe(8_000);
    // Forgotten a while after the last wrong token: the next ones are free again.
    now += 60_000;
    expect(limiter.waitMs("10.0.0.1")).toBe(0);
    expect(limiter.failed("10.0.0.1")).toBe(0);
    expect(limiter.size).toBe(1);
    limiter.succeeded("10.0.0.1");
    expect(limiter.size).toBe(0);
  });

  it("counts an IPv6 /64 as one address, and an IPv4-mapped address as IPv4", () => {
    expect(limitedAddress("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(limitedAddress("2001:db8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
    expect(limitedAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(limitedAddress("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(limitedAddress("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(limitedAddress("192.0.2.7")).toBe("192.0.2.7");
    const limiter = new LoginLimiter({ failuresBeforeWait: 2 });
    limiter.failed("2001:db8:1:2::a");
    limiter.failed("2001:db8:1:2::b");
    expect(limiter.waitMs("2001:db8:1:2::c")).toBeGreaterThan(0);
    expect(limiter.waitMs("2001:db8:1:3::a")).toBe(0);
  });

  it("remembers at most maxAddresses, forgetting the oldest wrong token first", () => {
    const limiter = new LoginLimiter({ failuresBeforeWait: 1, maxAddresses: 100 });
    for (let i = 0; i < 50_000; i += 1)
      limiter.failed(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    expect(limiter.size).toBe(100);
    expect(limiter.waitMs("10.0.195.79")).toBeGreaterThan(0);
    expect(limiter.waitMs("10.0.0.1")).toBe(0);
  });
});

describe("host names", () => {
  it("reads the name of a Host header, without port, lower case", () => {
    expect(hostNameOf("Console.Example:8787")).toBe("console.example");
    expect(hostNameOf("[::1]:8787")).toBe("[::1]");
    expect(hostNameOf("127.0.0.1")).toBe("127.0.0.1");
  });

  it("answers the loopback names, the listen host unless a wildcard, and the allowed hosts", () => {
    expect([...answeredHostNames("127.0.0.1:0", "127.0.0.1", undefined)]).toEqual([
      "127.0.0.1",
      "localhost",
      "[::1]",
    ]);
    expect(answeredHostNames("192.0.2.7:8787", "192.0.2.7", undefined).has("192.0.2.7")).toBe(true);
    expect(answeredHostNames("[2001:db8::7]:1", "2001:db8::7", []).has("[2001:db8::7]")).toBe(true);
    const any = answeredHostNames("0.0.0.0:8787", "0.0.0.0", ["Gate.example", "[2001:db8::7]"]);
    expect([...any]).toEqual(["127.0.0.1", "localhost", "[::1]", "gate.example", "[2001:db8::7]"]);
    expect(() => answeredHostNames(":::8787", "::", undefined)).toThrow(WebHostsError);
    expect(() => answeredHostNames("x:1", "x", ["x:1"])).toThrow(/not a host name/);
    // The grammar of @mediagate/io's listen addresses: no empty label, no bracketed IPv4, no
    // dotted digits that are no address.
    for (const name of ["a..b", "[1.2.3.4]", "999.1.1.1"]) {
      expect(() => answeredHostNames("x:1", "x", [name]), name).toThrow(/not a host name/);
    }
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

  it("closes a stream whose client leaves too much unread, and a login's oldest past its cap", async () => {
    const sessions = Array.from({ length: 50 }, (_, i) => ({ sessionKey: `telegram:${i}` }));
    const source = {
      overview: async () => ({}),
      sessions: () => sessions,
      onChange: () => () => {},
    } as unknown as ConsoleSource;
    const hub = new LiveHub({
      source,
      every: () => () => {},
      streamsPerLogin: 2,
      backlogBytes: 4096,
    });
    // A client that never reads: nothing it is sent leaves the gateway's memory.
    const stalled = new Writable({ write: () => {} });
    const reader = new PassThrough();
    reader.resume();
    hub.add("s1", stalled as never);
    hub.add("s2", reader as never);
    for (let i = 0; i < 40 && hub.subscribers === 2; i += 1) {
      sessions.push({ sessionKey: `telegram:new${i}` });
      await hub.tick();
    }
    expect([stalled.destroyed, reader.destroyed, hub.subscribers]).toEqual([true, false, 1]);

    // A third stream of login s2 closes its oldest; other logins' streams stay.
    const second = new PassThrough().resume();
    const third = new PassThrough().resume();
    const other = new PassThrough().resume();
    hub.add("s3", other as never);
    hub.add("s2", second as never);
    expect(reader.destroyed).toBe(false);
    hub.add("s2", third as never);
    expect([reader.destroyed, second.destroyed, third.destroyed, other.destroyed]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(hub.subscribers).toBe(3);
    hub.close();
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
