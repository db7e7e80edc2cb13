import { setImmediate as settle } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import {
  type ChatTarget,
  type PreviousReaction,
  ReactionCallError,
  type ReactionStatus,
  type StatusReactions,
} from "../channels/types.js";
import { MessageReaction } from "./reactions.js";

/** A platform's reaction calls as this side sees them: recorded, failing when told to. */
class RecordingReactions implements StatusReactions {
  readonly calls: string[] = [];
  readonly failures: (ReactionCallError | undefined)[] = [];
  #gate: Promise<void> | undefined;

  /** Calls wait until the returned function is called. */
  hold(): () => void {
    let release: () => void = () => {};
    this.#gate = new Promise<void>((resolve) => {
      release = () => {
        this.#gate = undefined;
        resolve();
      };
    });
    return release;
  }

  async set(
    _target: ChatTarget,
    messageId: string,
    status: ReactionStatus | undefined,
    previous: PreviousReaction,
  ): Promise<void> {
    if (this.#gate !== undefined) await this.#gate;
    const failure = this.failures.shift();
    this.calls.push(`${messageId} ${previous}→${status ?? "none"}${failure ? " ✗" : ""}`);
    if (failure !== undefined) throw failure;
  }
}

const target: ChatTarget = { platform: "telegram", chatId: "7" };
const rateLimited = (ms: number) => new ReactionCallError(429, "Too Many Requests", ms);

describe("MessageReaction", () => {
  it("sets each status in order, naming the one it replaces", async () => {
    const platform = new RecordingReactions();
    const reaction = new MessageReaction(platform, target, "5");
    reaction.set("seen");
    await reaction.settled();
    reaction.set("working");
    await reaction.settled();
    reaction.set("done");
    await reaction.settled();
    expect(platform.calls).toEqual(["5 none→seen", "5 seen→working", "5 working→done"]);
  });

  it("sends only the latest status of those asked for while a call was under way", async () => {
    const platform = new RecordingReactions();
    const release = platform.hold();
    const reaction = new MessageReaction(platform, target, "5");
    reaction.set("seen");
    reaction.set("working");
    reaction.set("done");
    release();
    await reaction.settled();
    expect(platform.calls).toEqual(["5 none→seen", "5 seen→done"]);
  });

  it("waits out a rate limit, then sends the latest status once", async () => {
    const platform = new RecordingReactions();
    const clock = manualClock();
    const reaction = new MessageReaction(platform, target, "5", { schedule: clock.schedule });
    platform.failures.push(rateLimited(3000));
    reaction.set("seen");
    await settle();
    reaction.set("done");
    expect(clock.pending()).toEqual([3000]);
    clock.advance(3000);
    await reaction.settled();
    expect(platform.calls).toEqual(["5 none→seen ✗", "5 none→done"]);
  });

  it("gives up, telling once, on a refusal or a wait longer than it honours", async () => {
    for (const failure of [
      new ReactionCallError(400, "Bad Request: REACTION_INVALID"),
      rateLimited(60_000),
    ]) {
      const platform = new RecordingReactions();
      const problems: unknown[] = [];
      const reaction = new MessageReaction(platform, target, "5", {
        maxRetryAfterMs: 30_000,
        onProblem: (error) => problems.push(error),
      });
      platform.failures.push(failure);
      reaction.set("seen");
      await reaction.settled();
      reaction.set("done");
      await reaction.settled();
      expect(platform.calls).toEqual(["5 none→seen ✗"]);
      expect(problems).toEqual([failure]);
    }
  });

  it("gives up after a second rate limit in a row instead of retrying forever", async () => {
    const platform = new RecordingReactions();
    const clock = manualClock();
    const reaction = new MessageReaction(platform, target, "5", { schedule: clock.schedule });
    platform.failures.push(rateLimited(1000), rateLimited(1000));
    reaction.set("seen");
    await settle();
    clock.advance(1000);
    await reaction.settled();
    expect(platform.calls).toEqual(["5 none→seen ✗", "5 none→seen ✗"]);
    expect(clock.pending()).toEqual([]);
  });

  it("stops waiting when the gateway stops", async () => {
    const platform = new RecordingReactions();
    const clock = manualClock();
    const stop = new AbortController();
    const reaction = new MessageReaction(platform, target, "5", {
      schedule: clock.schedule,
      signal: stop.signal,
    });
    platform.failures.push(rateLimited(1000));
    reaction.set("seen");
    await settle();
    stop.abort();
    await reaction.settled();
    expect(clock.pending()).toEqual([]);
    expect(platform.calls).toEqual(["5 none→seen ✗"]);
  });

  it("tells the platform a recovered message may carry any status", async () => {
    const platform = new RecordingReactions();
    const reaction = new MessageReaction(platform, target, "5", { previous: "unknown" });
    reaction.set("failed");
    await reaction.settled();
    expect(platform.calls).toEqual(["5 unknown→failed"]);
  });

  describe("with afterMs", () => {
    const held = (previous?: PreviousReaction) => {
      const platform = new RecordingReactions();
      const clock = manualClock();
      const reaction = new MessageReaction(platform, target, "5", {
        afterMs: 1000,
        schedule: clock.schedule,
        previous,
      });
      return { platform, clock, reaction };
    };

    it("shows the latest passing status once afterMs passed, and the rest as before", async () => {
      const { platform, clock, reaction } = held();
      reaction.set("seen");
      reaction.set("working");
      await reaction.settled();
      expect(platform.calls).toEqual([]);
      clock.advance(1000);
      await reaction.settled();
      reaction.set("done");
      await reaction.settled();
      expect(platform.calls).toEqual(["5 none→working", "5 working→done"]);
    });

    it("sends nothing for a message done or dropped within afterMs, and leaves no timer", async () => {
      for (const end of ["done", undefined] as const) {
        const { platform, clock, reaction } = held();
        reaction.set("seen");
        reaction.set("working");
        reaction.set(end);
        await reaction.settled();
        expect(clock.pending()).toEqual([]);
        expect(platform.calls).toEqual([]);
      }
    });

    it("sends failed at once", async () => {
      const { platform, clock, reaction } = held();
      reaction.set("seen");
      reaction.set("failed");
      await reaction.settled();
      expect(clock.pending()).toEqual([]);
      expect(platform.calls).toEqual(["5 none→failed"]);
    });

    it("sets done on a recovered message, which may still show a status from before", async () => {
      const { platform, reaction } = held("unknown");
      reaction.set("seen");
      reaction.set("done");
      await reaction.settled();
      expect(platform.calls).toEqual(["5 unknown→done"]);
    });
  });
});
