import { describe, expect, it } from "vitest";
import { useStateBackend } from "../../test/fixtures/state-backends.js";
import { describePairingRequest } from "../commands/approve.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import type { OutboxRecord } from "../durable/types.js";
import { createLogger } from "../log.js";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";
import type { SessionContext } from "../session/context.js";
import { LiveSessions } from "../session/live-sessions.js";
import { approvalsView } from "./approvals-source.js";
import { deliveryView } from "./deliveries-source.js";
import { LogRing } from "./log-ring.js";
import { tasksView } from "./tasks-source.js";

const env = emptyEnv();

describe("web: config", () => {
  it("is off by default, and `web: {}` listens on 127.0.0.1:8787", () => {
    expect(resolveConfig({}, { env }).web).toBeUndefined();
    expect(resolveConfig({ web: {} }, { env }).web).toEqual({ listen: "127.0.0.1:8787" });
    expect(resolveConfig({ web: { listen: "192.0.2.7:9000" } }, { env }).web).toEqual({
      listen: "192.0.2.7:9000",
    });
    expect(
      resolveConfig({ web: { listen: "0.0.0.0:9000", allowedHosts: ["gate.example"] } }, { env })
        .web,
    ).toEqual({ listen: "0.0.0.0:9000", allowedHosts: ["gate.example"] });
  });

  it("refuses a wildcard listen that names no hosts, saying what to add", () => {
    for (const listen of ["0.0.0.0:8787", "[::]:8787"]) {
      expect(() => resolveConfig({ web: { listen } }, { env }), listen).toThrow(
        /web\.allowedHosts: got nothing, with web\.listen ".*" \(every address of this host\), expected the host names browsers use to reach the console, e\.g\. allowedHosts: \["gateway\.example\.org"/,
      );
    }
    expect(
      resolveConfig({ web: { listen: "0.0.0.0:8787", allowedHosts: [] } }, { env }).web,
    ).toEqual({ listen: "0.0.0.0:8787", allowedHosts: [] });
    expect(() => resolveConfig({ web: { allowedHosts: ["gate.example:8787"] } }, { env })).toThrow(
      /web\.allowedHosts\[0\]: got "gate\.example:8787", expected a host name without port/,
    );
  });

  it("refuses a listen that is not host:port, naming the key", () => {
    expect(() => resolveConfig({ web: { listen: "8787" } }, { env })).toThrow(/web\.listen/);
    expect(() => resolveConfig({ web: { listen: "x:70000" } }, { env })).toThrow(/web\.listen/);
    expect(() => resolveConfig({ web: { port: 1 } }, { env })).toThrow(/port/);
  });
});

describe("web: the log ring", () => {
  it("keeps the logger's last lines, secrets redacted, filtered by level and session", () => {
    const ring = new LogRing(3);
    const lines: string[] = [];
    const logger = createLogger({
      level: "debug",
      secrets: ["s3cr3t-value"],
      destination: { write: (line: string) => void lines.push(line) },
      ring,
    });
    logger.debug("first");
    logger.info({ sessionKey: "agent:a:telegram:dm:1" }, "turn finished");
    logger.warn({ sessionKey: "agent:a:telegram:dm:2", detail: "s3cr3t-value" }, "slow");
    logger.error("broken");
    expect(lines).toHaveLength(4);
    expect(ring.query().map((l) => l.msg)).toEqual(["turn finished", "slow", "broken"]);
    expect(ring.query({ level: "warn" }).map((l) => l.msg)).toEqual(["slow", "broken"]);
    expect(ring.query({ session: "dm:2" }).map((l) => l.msg)).toEqual(["slow"]);
    expect(ring.query({ limit: 1 }).map((l) => l.level)).toEqual(["error"]);
    const slow = ring.query({ session: "dm:2" })[0]!;
    expect(slow.fields).not.toContain("s3cr3t-value");
    expect(ring.query({ after: slow.seq }).map((l) => l.msg)).toEqual(["broken"]);
  });
});

describe("web: live sessions", () => {
  const session = (key: string): SessionContext => ({
    profile: "p",
    platform: "telegram",
    chatId: "1",
    chatType: "dm",
    userId: "7",
    userName: "Ada",
    messageId: "m",
    sessionKey: key,
    sessionId: "id",
  });

  it("tracks a turn and what it runs, counts turns per minute, forgets the least recent past `max`", () => {
    let now = 1_000;
    const live = new LiveSessions({ max: 2, clock: { wallMs: () => now, monoMs: () => now } });
    const heard: string[] = [];
    live.listen((what) => heard.push(what));
    live.seen(session("a"), "profile:p");
    live.turnStarted("a");
    live.doing("a", "$ sleep 5");
    expect(live.get("a")).toMatchObject({
      turnStartedMs: 1_000,
      doing: "$ sleep 5",
      user: "Ada (7)",
    });
    now = 2_000;
    live.turnEnded("a");
    expect(live.get("a")).toMatchObject({ turnStartedMs: undefined, doing: undefined });
    expect(live.turnsPerMinute()).toBe(1);
    now = 70_000;
    expect(live.turnsPerMinute()).toBe(0);
    live.seen(session("b"), "s");
    live.seen(session("c"), "s");
    expect(live.list().map((s) => s.sessionKey)).toEqual(["c", "b"]);
    expect(heard).toContain("deliveries");
  });

  it("shows names and commands with their bidi overrides and controls escaped, so none can disguise what Stop stops", () => {
    const live = new LiveSessions({ max: 2 });
    // U+202E shows "Ada (admin)" for a user who is not the operator's admin Ada.
    live.seen(
      { ...session("a"), userName: "Ada \u202e)nimda(", chatName: "ops\nroom", chatType: "group" },
      "s",
    );
    live.turnStarted("a");
    live.doing("a", "$ echo \u202egnp.tac; rm -rf ~");
    expect(live.get("a")).toMatchObject({
      user: "Ada \\u202e)nimda( (7)",
      chat: "group ops\\nroom",
      doing: "$ echo \\u202egnp.tac; rm -rf ~",
    });
  });

  it("counts turns per minute on the monotonic clock: a wall clock stepped back does not keep a turn counted", () => {
    let wall = 5_000_000;
    let mono = 0;
    const live = new LiveSessions({ max: 2, clock: { wallMs: () => wall, monoMs: () => mono } });
    live.seen(session("a"), "profile:p");
    live.turnEnded("a");
    wall -= 60 * 60_000;
    mono += 61_000;
    expect(live.turnsPerMinute()).toBe(0);
    expect(live.get("a")?.lastActivityMs).toBe(5_000_000);
  });
});

describe("the Approvals and Tasks pages", () => {
  const backend = useStateBackend("sqlite", "web-views");

  it("show chat users' words with their bidi overrides and controls escaped, so none disguises what was approved or what Run now runs", async () => {
    const store = await backend.open({ now: () => 1_000 });
    const runtimes = new Map([["p", { name: "p", store } as unknown as ProfileRuntime]]);
    // U+202E shows "rm -rf ~; echo cat.png" as a harmless "echo gnp.tac…" line, reversed.
    await store.addApproval(
      {
        id: "q1",
        sessionKey: "telegram:1",
        sessionId: "s1",
        platform: "telegram",
        chatId: "1",
        requester: "telegram:1",
        approvers: "sender",
        action: "$ echo \u202egnp.tac; rm -rf ~",
        reason: "always\nforged line",
        waiter: "w",
        createdMs: 1_000,
        expiresMs: 601_000,
        status: "pending",
      },
      10,
      60_000,
    );
    await store.tasks.addTask(
      {
        id: "t1",
        owner: "telegram:1",
        ownerName: "Ada \u202e)nimda(",
        timing: { kind: "every", everyMs: 3_600_000 },
        timezone: "UTC",
        text: "grep 'a\\|b' log; report \u202eexe.pdf",
        chat: { platform: "telegram", chatId: "1", chatType: "dm" },
        catchUp: "once",
        nextDueMs: 5_000,
      },
      { maxPerUser: 5, maxPerProfile: 10 },
    );
    const { approvals } = await approvalsView(runtimes);
    expect(approvals[0]).toMatchObject({
      action: "$ echo \\u202egnp.tac; rm -rf ~",
      reason: "always\\nforged line",
    });
    const [task] = await tasksView(runtimes);
    // Backslashes as typed: the text reads as it runs.
    expect(task).toMatchObject({
      ownerName: "Ada \\u202e)nimda(",
      text: "grep 'a\\|b' log; report \\u202eexe.pdf",
    });
  });
});

describe("the Deliveries page", () => {
  it("escapes the names and paths of a reply's files, so none disguises what a download saves", async () => {
    // U+202E shows "report\u202etxt.exe" as "reportexe.txt": a download saves an .exe.
    const record = {
      id: "r1",
      profile: "p",
      platform: "telegram",
      sessionKey: "telegram:1",
      createdAtMs: 1_000,
      state: "delivered",
      attempts: 1,
      lastError: "send failed: bad\nforged line \u202e",
      text: "see the files\nbelow",
      plan: {
        version: 1,
        text: "see the files\nbelow",
        asVoice: false,
        asDocument: false,
        items: [
          {
            status: "ready",
            path: "/workspace/report\u202etxt.exe",
            kind: "document",
            filename: "report\u202etxt.exe",
            mime: "application/octet-stream",
            size: 3,
          },
          { status: "unreachable", path: "/workspace/gone\u202egnp.sh", reason: "not_found" },
        ],
      },
    } as unknown as OutboxRecord;
    const view = await deliveryView(record, async (_record, _index, path) => [
      `${path} (container: missing)`,
    ]);
    expect(view.files).toEqual([
      {
        status: "delivered",
        index: 0,
        name: "report\\u202etxt.exe",
        kind: "document",
        mime: "application/octet-stream",
        size: 3,
      },
      {
        status: "missing",
        index: 1,
        path: "/workspace/gone\\u202egnp.sh",
        tried: ["/workspace/gone\\u202egnp.sh (container: missing)"],
      },
    ]);
    expect(view.lastError).toBe("send failed: bad\\nforged line \\u202e");
    // The reply's own text as it was sent, line breaks and all.
    expect(view.text).toBe("see the files\nbelow");
  });

  it("shows the gateway's answers with pairing codes masked: the code an unknown user got, and one an admin typed", async () => {
    const answer = (id: string, text: string) =>
      ({
        id,
        profile: "p",
        platform: "telegram",
        sessionKey: "",
        createdAtMs: 1_000,
        state: "delivered",
        attempts: 1,
        text,
        plain: true,
        steps: new Map(),
      }) as unknown as OutboxRecord;
    const nothingTried = async () => [];
    const offered = await deliveryView(
      answer(
        "r2",
        describePairingRequest(
          { status: "issued", code: "K7QM3XWD", expiresAtMs: 3_600_000 },
          "telegram:123456",
          0,
        ),
      ),
      nothingTried,
    );
    expect(offered.text).not.toContain("K7QM");
    expect(offered.text).toContain("Your one-time code: ••••-••••");
    expect(offered.text).toContain("they approve you with /approve ••••-••••.");
    expect(offered.text).toContain("(You are telegram:123456.)");
    const wrong = await deliveryView(
      answer("r3", "⛔ No pending code ABCD-EFGH (mistyped, already used, revoked or expired)."),
      nothingTried,
    );
    expect(wrong.text).toBe(
      "⛔ No pending code ••••-•••• (mistyped, already used, revoked or expired).",
    );
    // An agent's reply is shown as it was sent.
    const reply = await deliveryView(
      { ...answer("r4", "the tag is ABCD-EFGH"), plain: undefined },
      nothingTried,
    );
    expect(reply.text).toBe("the tag is ABCD-EFGH");
  });
});
