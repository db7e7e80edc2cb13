import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../test-support/postgres.js";
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
 * crash-loop-persistent's SIGKILL loop (issue 9) with `store: { kind: postgres }` (issue 28):
 * the journal, outbox and state of the real `mediagate start` live in a database of the test
 * cluster, not in SQLite files. Same traffic and the same checks (every message exactly one
 * reply or a notice, no status left "working", one container), fewer messages and kills so it
 * runs beside the SQLite loop in the long suite.
 */
const Users = [7201, 7202, 7203, 7204, 7205];
const Messages = 60;
/**
 * Turns running at once (config `concurrency`, set here below the default of 16): what one
 * kill can cut off, so the bound on noticed messages stays tight.
 */
const Concurrency = 4;
const Kills = 12;

let fake: FakeTelegram;
let bench: FaultBench | undefined;
let db: TestDatabase | undefined;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  db = await freshPostgresDatabase("crash_loop");
  bench = await FaultBench.create({
    prefix: "crash-pg",
    fake,
    users: Users,
    settings: { concurrency: Concurrency, store: { kind: "postgres", url: db.url } },
  });
});

afterAll(async () => {
  await bench?.dispose();
  await fake?.stop();
  await db?.drop();
});

describe("SIGKILL loop on a persistent profile, store PostgreSQL", () => {
  it(`answers each of ${Messages} messages exactly once across ${Kills} SIGKILLs and keeps one container`, async () => {
    const b = bench as FaultBench;
    const random = SeededRandom.fromEnv("crash-loop-postgres");
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
        `[crash-loop-postgres] ${killSummary(loop.kills)}; ${startSummary(b.runs)}`,
        `[crash-loop-postgres] ${replySummary(audit)}; ${lastRunLosses(audit, loop)}`,
        `[crash-loop-postgres] ${statusSummary(statuses)}`,
        ...noticeSamples(audit).map((n) => `[crash-loop-postgres] notice ${n}`),
        `[crash-loop-postgres] containers while serving: ${serving.containers.length}, after SIGTERM: ${stopped.containers.length}; slot dirs: ${stopped.slotDirs.length}`,
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
