import type { FakeTelegram, RecordedCall } from "../../fakes/telegram/index.js";
import type { FaultBench } from "./fault-bench.js";
import type { SeededRandom } from "./prng.js";
import { type PlannedMessage, type SentMessage, sendMessage } from "./traffic.js";

/**
 * When a SIGKILL lands, relative to what the gateway is doing:
 * - `timer`: a random moment of the run;
 * - `after-receipt`: right after a `getUpdates` handed it messages (before or while it records
 *   them; the window where an update is confirmed before its turn ran);
 * - `mid-turn`: a random moment after a turn began (its typing indicator);
 * - `after-send`: right after the fake answered a reply (before the gateway could note it).
 */
export type KillMoment = "timer" | "after-receipt" | "mid-turn" | "after-send";

const KillMoments: readonly KillMoment[] = ["timer", "after-receipt", "mid-turn", "after-send"];

/** Options of {@link runCrashLoop}. */
export interface CrashLoopOptions {
  readonly bench: FaultBench;
  readonly fake: FakeTelegram;
  readonly random: SeededRandom;
  /** Sent over the whole loop, in this order; what is left after the last kill goes to the last run. */
  readonly messages: readonly PlannedMessage[];
  readonly kills: number;
  /** Longest a run lives before it is killed (also the bound of every moment but `timer`). */
  readonly maxUptimeMs: number;
}

/** One SIGKILL: which run, when (ms after it served) and at what kind of moment. */
export interface KillRecord {
  readonly run: number;
  readonly moment: KillMoment;
  /** The moment awaited did not come within `maxUptimeMs`; the kill came at that bound. */
  readonly fellBack: boolean;
  readonly afterMs: number;
  /** When the SIGKILL was sent (epoch ms, as the fake's `RecordedCall.atMs`). */
  readonly atMs: number;
  /** The call whose answer the kill followed (`seq`), for `after-receipt` and `after-send`. */
  readonly after?: number | undefined;
}

/** What a crash loop did. */
export interface CrashLoopResult {
  readonly sent: SentMessage[];
  readonly kills: KillRecord[];
  /** `fake.calls.length` when the last run (the one left running) began serving. */
  readonly lastRunMark: number;
  /** How many of `sent` were sent before the last run began serving (the rest went to it). */
  readonly sentBeforeLastRun: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the gateway `kills + 1` times: each run is SIGKILLed at a seeded random moment of a
 * seeded random kind ({@link KillMoment}); the last one keeps running. Users keep writing
 * throughout, while a run serves and while none does (Telegram holds the updates): each
 * run's share of the messages is sent at random points of its life, plus some between runs.
 */
export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const { bench, fake, random } = options;
  const pending = [...options.messages];
  const sent: SentMessage[] = [];
  const kills: KillRecord[] = [];
  const send = (count: number) => {
    for (const message of pending.splice(0, count)) sent.push(sendMessage(fake, message));
  };
  const perRun = options.messages.length / (options.kills + 1);
  for (let k = 0; k < options.kills; k++) {
    await bench.start();
    const run = bench.runs.length;
    const mark = fake.calls.length;
    const startedMs = Date.now();
    const uptimeMs = random.int(150, options.maxUptimeMs);
    const moment = random.pick(KillMoments);
    const share = random.int(Math.floor(perRun * 0.5), Math.ceil(perRun * 1.2));
    const whileDown = random.int(0, 2);
    const offsets = Array.from({ length: Math.max(0, share - whileDown) }, () =>
      random.int(0, uptimeMs),
    ).sort((a, b) => a - b);
    const feeding = (async () => {
      let at = 0;
      for (const offset of offsets) {
        await pause(offset - at);
        at = offset;
        send(1);
      }
    })();
    const came = await momentOf(moment, fake, mark, random, options.maxUptimeMs);
    const killedAtMs = Date.now();
    await bench.kill();
    const fellBack = came === false;
    const after = typeof came === "number" ? came : undefined;
    kills.push({ run, moment, fellBack, afterMs: killedAtMs - startedMs, atMs: killedAtMs, after });
    await feeding;
    send(whileDown);
  }
  await bench.start();
  const lastRunMark = fake.calls.length;
  const sentBeforeLastRun = sent.length;
  while (pending.length > 0) {
    send(random.int(1, 3));
    await pause(random.int(0, 400));
  }
  return { sent, kills, lastRunMark, sentBeforeLastRun };
}

/**
 * Resolves when the moment came (`true`, or the `seq` of the call it followed) or `limitMs`
 * passed first (`false`).
 */
async function momentOf(
  moment: KillMoment,
  fake: FakeTelegram,
  mark: number,
  random: SeededRandom,
  limitMs: number,
): Promise<boolean | number> {
  const since = (call: RecordedCall) => call.seq > mark;
  switch (moment) {
    case "timer":
      await pause(random.int(150, limitMs));
      return true;
    case "after-receipt":
      return within(
        fake,
        (c) =>
          since(c) && c.method === "getUpdates" && Array.isArray(c.result) && c.result.length > 0,
        limitMs,
        random.int(0, 20),
      );
    case "mid-turn":
      return within(
        fake,
        (c) => since(c) && c.method === "sendChatAction",
        limitMs,
        random.int(0, 1500),
      );
    case "after-send":
      return within(
        fake,
        (c) => since(c) && c.ok && c.method.startsWith("send") && c.method !== "sendChatAction",
        limitMs,
        random.int(0, 20),
      );
  }
}

/** The `seq` of the first call `predicate` takes, `thenMs` after it came; `false`: none came. */
async function within(
  fake: FakeTelegram,
  predicate: (call: RecordedCall) => boolean,
  limitMs: number,
  thenMs: number,
): Promise<number | false> {
  const seen = await fake.waitFor(predicate, limitMs).then(
    (call) => call.seq,
    () => false as const,
  );
  if (seen !== false && thenMs > 0) await pause(thenMs);
  return seen;
}
