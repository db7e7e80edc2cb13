import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { runCrashLoop } from "./durability/crash-loop.js";
import { FaultBench } from "./durability/fault-bench.js";
import { killSummary, lastRunLosses, lostMessageLogs, startSummary } from "./durability/figures.js";
import { describeExit } from "./durability/gateway-process.js";
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
import { persistentSlotProblems } from "./durability/sandbox-census.js";
import { planTraffic } from "./durability/traffic.js";

/**
 * Issue 9, "crashes lose messages", as measured there: the real `mediagate start` process is
 * SIGKILLed 30 times at seeded random moments while 5 users send 150 messages (quick echoes,
 * 3 s commands, file replies) to one persistent profile. Telegram is the local fake, which
 * keeps every update until a later `getUpdates` offset confirms it. In the end every message
 * has exactly one reply (or, for a turn a kill cut off, a notice replying to it), no status
 * message is left reading "⏳ working", and the profile has exactly one container and one
 * slot directory.
 */
const Users = [7001, 7002, 7003, 7004, 7005];
const Messages = 150;
/**
 * Turns running at once (config `concurrency`, set here below the default of 16): what one
 * kill can cut off, so the bound on noticed messages stays tight.
 */
const Concurrency = 4;
const Kills = 30;

let fake: FakeTelegram;
let bench: FaultBench | undefined;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  bench = await FaultBench.create({
    prefix: "crash-persistent",
    fake,
    users: Users,
    settings: { concurrency: Concurrency },
  });
});

afterAll(async () => {
  await bench?.dispose();
  await fake?.stop();
});

describe("SIGKILL loop on a persistent profile", () => {
  it(`answers each of ${Messages} messages exactly once across ${Kills} SIGKILLs and keeps one container`, async () => {
    const b = bench as FaultBench;
    const random = SeededRandom.fromEnv("crash-loop-persistent");
    const messages = planTraffic(random, {
      users: Users,
      messages: Messages,
      longShare: 0.1,
      mediaShare: 0.15,
      longSeconds: 3,
    });
    const loop = await runCrashLoop({
      bench: b,
      fake,
      random,
      messages,
      kills: Kills,
      maxUptimeMs: 3_000,
    });
    const audit = await settleReplies(fake, loop.sent, { quietMs: 10_000, timeoutMs: 120_000 });
    const serving = await b.census();
    const exit = await b.terminate();
    const stopped = await b.census();
    // What every chat shows once the last process stopped.
    const statuses = auditStatuses(fake, loop.sent);

    console.log(
      [
        `[crash-loop-persistent] ${killSummary(loop.kills)}; ${startSummary(b.runs)}`,
        `[crash-loop-persistent] ${replySummary(audit)}; ${lastRunLosses(audit, loop)}`,
        `[crash-loop-persistent] ${statusSummary(statuses)}`,
        ...noticeSamples(audit).map((n) => `[crash-loop-persistent] notice ${n}`),
        `[crash-loop-persistent] containers while serving: ${serving.containers.length}, after SIGTERM: ${stopped.containers.length}; slot dirs: ${stopped.slotDirs.length}`,
      ].join("\n"),
    );
    const problems = [
      ...replyProblems(audit, { maxNoticed: Kills * Concurrency }),
      ...statusProblems(statuses),
      ...persistentSlotProblems(serving, b.profile).map((p) => `while serving: ${p}`),
      ...persistentSlotProblems(stopped, b.profile).map((p) => `after SIGTERM: ${p}`),
      ...b.exitProblems(),
      ...lostMessageLogs(audit, b),
      ...(exit.code === 0 ? [] : [`the last run ended with ${describeExit(exit)} on SIGTERM`]),
    ];
    expect(problems).toEqual([]);
  });
});
