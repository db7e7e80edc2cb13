import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { runCrashLoop } from "./durability/crash-loop.js";
import { FaultBench } from "./durability/fault-bench.js";
import { killSummary, lastRunLosses, lostMessageLogs, startSummary } from "./durability/figures.js";
import { describeExit } from "./durability/gateway-process.js";
import { lostMessageReport } from "./durability/lost-message-report.js";
import { SeededRandom } from "./durability/prng.js";
import {
  auditStatuses,
  noticeSamples,
  replyProblems,
  replySummary,
  settleReplies,
  statusProblems,
  statusSummary,
} from "./durability/reply-audit.js";
import { describe as describeContainers, orphansOf } from "./durability/sandbox-census.js";
import { planTraffic, sessionKeyOf } from "./durability/traffic.js";

/**
 * Issue 9, "crashes lose messages" with per-session containers (`sandbox.persistent: false`):
 * the real `mediagate start` is SIGKILLed 10 times at seeded random moments while 5 users send
 * 150 messages. Each user moves on to a new conversation (their private chat, then groups:
 * a session per member) every 6 messages, so most sessions are left behind by a process that
 * is then killed, the way chats go quiet. In the end every message is answered exactly once,
 * no status message is left reading "⏳ working", the last process has removed every
 * per-session container and slot directory of the dead ones (running or exited), and after
 * its SIGTERM none is left at all.
 */
const Users = [7101, 7102, 7103, 7104, 7105];
const Messages = 150;
/**
 * Turns running at once (config `concurrency`, set here below the default of 16): what one
 * kill can cut off, so the bound on noticed messages stays tight.
 */
const Concurrency = 4;
const Kills = 10;

let fake: FakeTelegram;
let bench: FaultBench | undefined;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  bench = await FaultBench.create({
    prefix: "crash-sessions",
    fake,
    users: Users,
    sandbox: { persistent: false },
    settings: { concurrency: Concurrency },
  });
});

afterAll(async () => {
  await bench?.dispose();
  await fake?.stop();
});

describe("SIGKILL loop with per-session containers", () => {
  it(`answers each of ${Messages} messages exactly once across ${Kills} SIGKILLs and leaves no orphaned sandbox`, async () => {
    const b = bench as FaultBench;
    const random = SeededRandom.fromEnv("crash-loop-per-session");
    const messages = planTraffic(random, {
      users: Users,
      messages: Messages,
      longShare: 0.1,
      mediaShare: 0.15,
      longSeconds: 3,
      conversationLength: 6,
    });
    const loop = await runCrashLoop({
      bench: b,
      fake,
      random,
      messages,
      kills: Kills,
      maxUptimeMs: 4_000,
    });
    const audit = await settleReplies(fake, loop.sent, { quietMs: 10_000, timeoutMs: 120_000 });
    // The sessions the last run answered in: their containers may live on (until idle).
    const live = new Set(
      audit.verdicts
        .filter((v) =>
          [...v.replies, ...v.files, ...v.notices].some((c) => c.seq > loop.lastRunMark),
        )
        .map((v) => sessionKeyOf(b.profile, v.message)),
    );
    const sessions = new Set(loop.sent.map((m) => sessionKeyOf(b.profile, m)));
    const livePid = b.current?.pid;
    const serving = await b.censusUntil((c) => {
      const orphans = orphansOf(c, live, livePid);
      return orphans.containers.length === 0 && orphans.slotDirs.length === 0;
    }, 30_000);
    const orphans = orphansOf(serving, live, livePid);
    const exit = await b.terminate();
    const stopped = await b.census();
    // What every chat shows once the last process stopped.
    const statuses = auditStatuses(fake, loop.sent);
    const leftContainers = stopped.containers.filter((c) => !c.persistent);
    const leftDirs = stopped.slotDirs.filter((d) => d.startsWith("session"));

    console.log(
      [
        `[crash-loop-per-session] ${killSummary(loop.kills)}; ${startSummary(b.runs)}`,
        `[crash-loop-per-session] ${replySummary(audit)}; ${lastRunLosses(audit, loop)}`,
        `[crash-loop-per-session] ${statusSummary(statuses, loop.kills)}`,
        ...noticeSamples(audit).map((n) => `[crash-loop-per-session] notice ${n}`),
        `[crash-loop-per-session] ${sessions.size} sessions, ${live.size} served by the last run; while it serves: ${serving.containers.length} containers, ${orphans.containers.length} orphaned (${orphans.containers.filter((c) => c.state === "running").length} running), ${orphans.slotDirs.length} orphaned slot dirs; after SIGTERM: ${leftContainers.length} per-session containers, ${leftDirs.length} session slot dirs`,
      ].join("\n"),
    );
    const problems = [
      ...replyProblems(audit, { maxNoticed: Kills * Concurrency }),
      ...statusProblems(statuses, loop.kills),
      ...(orphans.containers.length === 0
        ? []
        : [
            `while the last run serves: ${orphans.containers.length} per-session containers of sessions it did not serve: ${describeContainers(orphans.containers)}`,
          ]),
      ...(orphans.slotDirs.length === 0
        ? []
        : [
            `while the last run serves: ${orphans.slotDirs.length} session slot dirs of sessions it did not serve: ${orphans.slotDirs.slice(0, 5).join(", ")}`,
          ]),
      ...(leftContainers.length === 0
        ? []
        : [
            `after SIGTERM: ${leftContainers.length} per-session containers left: ${describeContainers(leftContainers)}`,
          ]),
      ...(leftDirs.length === 0
        ? []
        : [
            `after SIGTERM: ${leftDirs.length} session slot dirs left: ${leftDirs.slice(0, 5).join(", ")}`,
          ]),
      ...b.exitProblems(),
      ...lostMessageReport(audit, {
        runs: b.runs,
        home: b.home,
        profile: b.profile,
        calls: fake.calls,
      }),
      ...lostMessageLogs(audit, b),
      ...(exit.code === 0 ? [] : [`the last run ended with ${describeExit(exit)} on SIGTERM`]),
    ];
    expect(problems).toEqual([]);
  });
});
