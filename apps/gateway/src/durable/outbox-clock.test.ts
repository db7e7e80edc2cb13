import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "@mediagate/io";
import type { UploadLimits } from "@mediagate/media";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../../test-support/wait.js";
import { journalBackends } from "../../test/fixtures/journal-backends.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  DeliveryReport,
  OutboundReply,
} from "../channels/types.js";
import { Defaults } from "../defaults.js";
import { createLogger } from "../log.js";
import { Outbox, OutboxDefaults } from "./outbox.js";
import type { Journal, OutboxReply } from "./types.js";

/*
 * The outbox's ages and waits through steps of the wall clock (docs/durability.md, "Clock
 * steps"): the real journal, a channel of our own interface that records what it was asked to
 * send, and a clock whose wall and monotonic readings the test moves apart.
 */

const Minute = 60_000;
const Hour = 60 * Minute;

/** A wall clock the test steps and a monotonic one it moves on. */
class SteppedClock implements Clock {
  wall: number;
  mono = 5_000;
  constructor(wallMs: number) {
    this.wall = wallMs;
  }
  wallMs(): number {
    return this.wall;
  }
  monoMs(): number {
    return this.mono;
  }
  /** Real time passes: both clocks move on. */
  pass(ms: number): void {
    this.wall += ms;
    this.mono += ms;
  }
}

/** Records each reply and notice it is asked to deliver; the next `failing` attempts throw. */
class RecordingChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "main";
  readonly limits: UploadLimits = { maxBytes: () => 50 * 1024 * 1024 };
  readonly texts: string[] = [];
  failing = 0;
  /** What the next failing attempt reports instead of throwing (a long `retry_after`). */
  report: DeliveryReport | undefined;
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendText(): Promise<void> {}
  async showActivity(): Promise<void> {}
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    if (this.failing > 0) {
      this.failing--;
      if (this.report !== undefined) return this.report;
      throw new Error("platform down");
    }
    this.texts.push(reply.text);
    return { outcomes: [] };
  }
}

const reply: OutboxReply = {
  profile: "main",
  platform: "telegram",
  sessionKey: "agent:main:telegram:dm:7",
  slot: "profile:main",
  target: { platform: "telegram", chatId: "7" },
  text: "the answer",
};

let home: string;
let journal: Journal;
let clock: SteppedClock;
let channel: RecordingChannel;
let lines: string[];
let timers: { run: () => void; delayMs: number }[];

/** An outbox of a process with `clock`: a restart is a new one over the same journal. */
function outboxProcess(): Outbox {
  const logger = createLogger({ level: "warn", destination: { write: (l) => lines.push(l) } });
  return new Outbox({
    journal,
    logger,
    channelFor: () => channel,
    translateContextFor: () => () => ({
      backend: "docker",
      slotDirs: [],
      volumes: [],
      allowDirs: [],
      protectedHomes: [],
      tmpDir: home,
    }),
    clock,
    schedule: (run, delayMs) => {
      timers.push({ run, delayMs });
      return () => {};
    },
  });
}

/** The warnings logged so far about the wall clock. */
function clockWarnings(): Record<string, unknown>[] {
  return lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.level === 40 && String(e.msg).includes("wall clock"));
}

/** Fires the scheduled attempt `n` and waits until the reply is delivered or given up. */
async function fire(n: number, id: string): Promise<void> {
  timers[n]!.run();
  await waitUntil(
    async () => (await journal.replies({ id }))[0]?.state !== "pending",
    "the attempt to close the reply",
  );
}

/** The reply recorded by a process that then stops with it pending, scheduled for later. */
async function pendingAfterFailedAttempt(): Promise<string> {
  const first = outboxProcess();
  channel.failing = 1;
  const record = await first.record(reply, undefined);
  expect((await first.deliver(record)).result).toBe("rescheduled");
  await first.stop(1_000);
  await journal.release();
  return record.id;
}

describe.each(journalBackends())(
  "the outbox through wall-clock steps, journal on $name",
  (backend) => {
    beforeAll(() => backend.beforeAll());
    afterAll(() => backend.afterAll());
    beforeEach(async () => {
      await backend.beforeEach();
      home = await mkdtemp(join(tmpdir(), "mg-outbox-clock-"));
      // A wall clock far from the real one: nothing here may read the real clock.
      clock = new SteppedClock(Date.UTC(2021, 4, 6, 12));
      journal = await backend.open({ now: () => clock.wallMs() });
      channel = new RecordingChannel();
      lines = [];
      timers = [];
    });
    afterEach(async () => {
      await backend.afterEach();
      await rm(home, { recursive: true, force: true });
    });

    it("a reply one minute old survives an 8 h forward step: its age counts on the monotonic clock", async () => {
      const outbox = outboxProcess();
      channel.failing = 1;
      const record = await outbox.record(reply, undefined);
      expect((await outbox.deliver(record)).result).toBe("rescheduled");
      expect(timers.map((t) => t.delayMs)).toEqual([OutboxDefaults.retryBaseMs]);

      clock.pass(Minute);
      clock.wall += 8 * Hour;
      await fire(0, record.id);
      expect(channel.texts).toEqual(["the answer"]);
      expect((await journal.replies({ id: record.id }))[0]?.state).toBe("delivered");
    });

    it("a reply is still given up once the monotonic clock says it is older than maxAgeSeconds", async () => {
      const outbox = outboxProcess();
      channel.failing = 1;
      const record = await outbox.record(reply, undefined);
      await outbox.deliver(record);

      clock.mono += OutboxDefaults.maxAgeMs + Minute;
      clock.wall -= 2 * Hour; // a backward step does not make it younger
      await fire(0, record.id);
      expect(channel.texts).toEqual([
        "⚠️ A reply could not be delivered (1 attempt(s) over 361 min): platform down",
      ]);
    });

    it("a retry is not scheduled past maxAgeSeconds by the monotonic clock, whatever the wall clock says", async () => {
      const outbox = outboxProcess();
      const record = await outbox.record(reply, undefined);
      clock.mono += OutboxDefaults.maxAgeMs - OutboxDefaults.retryBaseMs / 2;
      clock.wall -= 3 * Hour;
      channel.failing = 1;
      expect((await outbox.deliver(record)).result).toBe("given_up");
      expect(timers).toEqual([]);
    });

    it("after a restart the wall clock stepped back 1 h before, pending replies wait their own retry time, not an hour more; the step is logged once", async () => {
      const id = await pendingAfterFailedAttempt();
      const second = await pendingAfterFailedAttempt();
      clock.pass(10_000);
      clock.wall -= Hour;

      const restarted = outboxProcess();
      const taken = await journal.takeOverReplies();
      expect(taken.map((r) => r.id)).toEqual([id, second]);
      await restarted.resume(taken);
      // Counted from the replies' creation, not from a clock an hour behind it.
      expect(timers.slice(2).map((t) => t.delayMs)).toEqual([
        OutboxDefaults.retryBaseMs,
        OutboxDefaults.retryBaseMs,
      ]);
      expect(clockWarnings()).toEqual([
        expect.objectContaining({
          component: "outbox",
          stepBackMs: Hour - 10_000,
          msg: expect.stringContaining("the wall clock stepped back"),
        }),
      ]);
      clock.pass(OutboxDefaults.retryBaseMs);
      await fire(2, id);
      expect(channel.texts).toEqual(["the answer"]);
    });

    it("after a restart, a negative age counts as 0: the reply lives maxAgeSeconds from then, not an hour longer", async () => {
      const id = await pendingAfterFailedAttempt();
      clock.wall -= Hour;
      const restarted = outboxProcess();
      await restarted.resume(await journal.takeOverReplies());

      clock.mono += OutboxDefaults.maxAgeMs + Minute;
      await fire(timers.length - 1, id);
      expect(channel.texts).toEqual([
        "⚠️ A reply could not be delivered (1 attempt(s) over 361 min): platform down",
      ]);
    });

    it("after a restart, a retry time further ahead than Defaults.delivery.longestWaitMs is due at once", async () => {
      const id = await pendingAfterFailedAttempt();
      // Recorded by a wall clock running ahead, which then stepped back 1 h before the restart.
      const farAheadMs = Defaults.delivery.longestWaitMs + 5 * Minute;
      await journal.reschedule(id, clock.wall + Hour + farAheadMs, "platform down");
      clock.wall -= Hour;

      const restarted = outboxProcess();
      const scheduledBefore = timers.length;
      await restarted.resume(await journal.takeOverReplies());
      expect(timers.length).toBe(scheduledBefore);
      expect(channel.texts).toEqual(["the answer"]);
      expect(clockWarnings().map((w) => w.stepBackMs)).toEqual([Hour + 5 * Minute]);
    });

    it("after a restart, a retry time within the longest wait is kept, and nothing is logged", async () => {
      const id = await pendingAfterFailedAttempt();
      await journal.reschedule(id, clock.wall + Defaults.delivery.longestWaitMs, "rate limited");
      clock.pass(Minute);

      const restarted = outboxProcess();
      await restarted.resume(await journal.takeOverReplies());
      expect(timers.at(-1)?.delayMs).toBe(Defaults.delivery.longestWaitMs - Minute);
      expect(channel.texts).toEqual([]);
      expect(clockWarnings()).toEqual([]);
    });

    it("a retry_after longer than Defaults.delivery.maxRetryAfterMs is waited that long", async () => {
      const outbox = outboxProcess();
      const record = await outbox.record(reply, undefined);
      channel.failing = 1;
      channel.report = { outcomes: [], retryAfterSeconds: 3 * 60 * 60 };
      expect((await outbox.deliver(record)).result).toBe("rescheduled");
      expect(timers.map((t) => t.delayMs)).toEqual([Defaults.delivery.maxRetryAfterMs]);
      const [pending] = await journal.replies({ id: record.id });
      expect(pending?.notBeforeMs).toBe(clock.wall + Defaults.delivery.maxRetryAfterMs);
      await outbox.stop(1_000);
    });
  },
);
