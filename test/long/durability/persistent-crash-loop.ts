import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../../fakes/telegram/index.js";
import { runCrashLoop } from "./crash-loop.js";
import { FaultBench } from "./fault-bench.js";
import { killSummary, lastRunLosses, lostMessageLogs, startSummary } from "./figures.js";
import { describeExit } from "./gateway-process.js";
import { lostMessageReport } from "./lost-message-report.js";
import { SeededRandom } from "./prng.js";
import {
  auditStatuses,
  noticeSamples,
  replyProblems,
  replySummary,
  settleReplies,
  statusProblems,
  statusSummary,
} from "./reply-audit.js";
import { persistentSlotProblems } from "./sandbox-census.js";
import { planTraffic } from "./traffic.js";

/** One SIGKILL loop on a persistent profile (crash-loop-persistent, crash-loop-postgres). */
export interface PersistentCrashLoop {
  /** The log prefix and the seed's name (`FAULT_SEED` replays it). */
  readonly name: string;
  readonly title: string;
  /** The bench's home prefix. */
  readonly prefix: string;
  readonly users: readonly number[];
  readonly messages: number;
  readonly kills: number;
  /**
   * Turns running at once (config `concurrency`, set below the default of 16): what one kill
   * can cut off, so the bound on noticed messages stays tight.
   */
  readonly concurrency: number;
  /** More of the gateway's settings (`store:`), made before the bench starts. */
  readonly settings?: () => Promise<Readonly<Record<string, unknown>>>;
  /** Runs after the bench is gone (a database to drop). */
  readonly dispose?: () => Promise<void>;
}

/**
 * Registers the loop as a test: the real `mediagate start` is SIGKILLed `kills` times at seeded
 * random moments while `users` send `messages` (quick echoes, 3 s commands, file replies) to
 * one persistent profile through the Telegram fake, which keeps every update until a later
 * `getUpdates` offset confirms it. In the end every message has exactly one reply (or, for a
 * turn a kill cut off, a notice replying to it), no status message is left reading "⏳
 * working", and the profile has exactly one container and one slot directory.
 */
export function persistentCrashLoop(loopOf: PersistentCrashLoop): void {
  const { name, users, messages: count, kills, concurrency } = loopOf;
  let fake: FakeTelegram;
  let bench: FaultBench | undefined;

  beforeAll(async () => {
    fake = new FakeTelegram();
    await fake.start();
    const settings = (await loopOf.settings?.()) ?? {};
    bench = await FaultBench.create({
      prefix: loopOf.prefix,
      fake,
      users: [...users],
      settings: { concurrency, ...settings },
    });
  });

  afterAll(async () => {
    await bench?.dispose();
    await fake?.stop();
    await loopOf.dispose?.();
  });

  describe(loopOf.title, () => {
    it(`answers each of ${count} messages exactly once across ${kills} SIGKILLs and keeps one container`, async () => {
      const b = bench as FaultBench;
      const random = SeededRandom.fromEnv(name);
      const messages = planTraffic(random, {
        users: [...users],
        messages: count,
        longShare: 0.1,
        mediaShare: 0.15,
        longSeconds: 3,
      });
      const loop = await runCrashLoop({
        bench: b,
        fake,
        random,
        messages,
        kills,
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
          `[${name}] ${killSummary(loop.kills)}; ${startSummary(b.runs)}`,
          `[${name}] ${replySummary(audit)}; ${lastRunLosses(audit, loop)}`,
          `[${name}] ${statusSummary(statuses, loop.kills)}`,
          ...noticeSamples(audit).map((n) => `[${name}] notice ${n}`),
          `[${name}] containers while serving: ${serving.containers.length}, after SIGTERM: ${stopped.containers.length}; slot dirs: ${stopped.slotDirs.length}`,
        ].join("\n"),
      );
      const problems = [
        ...replyProblems(audit, { maxNoticed: kills * concurrency }),
        ...statusProblems(statuses, loop.kills),
        ...persistentSlotProblems(serving, b.profile).map((p) => `while serving: ${p}`),
        ...persistentSlotProblems(stopped, b.profile).map((p) => `after SIGTERM: ${p}`),
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
}
