import { setImmediate as settle } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { type ChatTarget, StatusCallError, type StatusMessages } from "../channels/types.js";
import {
  describeCommand,
  formatElapsed,
  type StatusLedger,
  statusText,
  TurnProgress,
} from "./progress.js";

/** A platform's status calls as this side sees them: recorded, failing when told to. */
class RecordingStatus implements StatusMessages {
  readonly calls: string[] = [];
  readonly failures: (StatusCallError | undefined)[] = [];
  intervalMs = 1000;
  readonly textLimit = { maxLength: 4096 };
  #ids = 0;
  #gate: Promise<void> | undefined;

  /** The next calls fail with these (undefined: succeeds). */
  failNext(...errors: (StatusCallError | undefined)[]): void {
    this.failures.push(...errors);
  }

  /** Posts wait until the returned function is called. */
  holdPost(): () => void {
    let release: () => void = () => {};
    this.#gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    return release;
  }

  editIntervalMs(_target: ChatTarget): number {
    return this.intervalMs;
  }
  async post(_target: ChatTarget, text: string): Promise<string> {
    if (this.#gate !== undefined) await this.#gate;
    this.#fail(`post ${text}`);
    return String(++this.#ids);
  }
  async edit(_target: ChatTarget, id: string, text: string): Promise<void> {
    this.#fail(`edit ${id} ${text}`);
  }
  async remove(_target: ChatTarget, id: string): Promise<void> {
    this.#fail(`remove ${id}`);
  }
  #fail(call: string): void {
    const failure = this.failures.shift();
    this.calls.push(failure === undefined ? call : `${call} ✗`);
    if (failure !== undefined) throw failure;
  }
}

const target: ChatTarget = { platform: "telegram", chatId: "7" };
const serverError = () => new StatusCallError("edit", 502, "Bad Gateway");

/** A ledger that writes into the status's call list, so the order of both shows. */
function ledgerOf(status: RecordingStatus, failing = false): StatusLedger {
  const write = async (call: string) => {
    status.calls.push(failing ? `${call} ✗` : call);
    if (failing) throw new Error("disk full");
  };
  return { shown: (id) => write(`ledger shown ${id}`), gone: () => write("ledger gone") };
}

function progressOf(status: RecordingStatus, everyMs = 1000, ledger?: StatusLedger) {
  const clock = manualClock();
  const problems: string[] = [];
  const progress = new TurnProgress(status, target, {
    afterMs: 3000,
    everyMs,
    clock,
    onProblem: (what) => problems.push(what),
    ledger,
  });
  progress.start();
  /** Moves the clock on and lets the calls it fired settle. */
  const advance = async (ms: number) => {
    clock.advance(ms);
    for (let i = 0; i < 5; i++) await settle();
  };
  return { progress, clock, advance, problems };
}

describe("TurnProgress", () => {
  it("posts nothing for a turn that ends before the threshold", async () => {
    const status = new RecordingStatus();
    const { progress, advance } = progressOf(status);
    await advance(2999);
    await progress.finish();
    await advance(10_000);
    expect(status.calls).toEqual([]);
  });

  it("posts after the threshold, edits once a tick only when the text changed, deletes at the end", async () => {
    const status = new RecordingStatus();
    const { progress, advance } = progressOf(status);
    await advance(3000);
    progress.doing("$ sleep 2");
    await advance(1000);
    await advance(1000);
    progress.doing(undefined);
    progress.doing("$ sleep 2"); // the same text as shown: the elapsed time alone changes it
    await advance(500);
    await advance(500);
    await progress.finish();
    await advance(5000);
    expect(status.calls).toEqual([
      "post ⏳ working — 3s",
      "edit 1 ⏳ working — 4s\n$ sleep 2",
      "edit 1 ⏳ working — 5s\n$ sleep 2",
      "edit 1 ⏳ working — 6s\n$ sleep 2",
      "remove 1",
    ]);
    expect(progress.edits).toBe(3);
  });

  it("edits a long turn less often as it goes: 10-second steps after a minute", async () => {
    const status = new RecordingStatus();
    const { progress, advance } = progressOf(status);
    await advance(3000);
    for (let i = 0; i < 57; i++) await advance(1000); // to 60 s
    const inFirstMinute = progress.edits;
    for (let i = 0; i < 60; i++) await advance(1000); // to 120 s
    expect(inFirstMinute).toBe(57);
    expect(progress.edits - inFirstMinute).toBe(6);
    await progress.finish();
  });

  it("keeps the platform's pace: never more often than its interval for the chat", async () => {
    const status = new RecordingStatus();
    status.intervalMs = 3000;
    const { progress, advance } = progressOf(status, 1000);
    await advance(3000);
    for (let i = 0; i < 9; i++) await advance(1000);
    expect(progress.edits).toBe(3);
    await progress.finish();
  });

  it("goes on after a failed edit, pauses for a rate limit, stops after three failures in a row", async () => {
    const status = new RecordingStatus();
    const { progress, advance, problems } = progressOf(status);
    await advance(3000);
    status.failNext(serverError());
    await advance(1000); // fails
    await advance(1000); // edits
    status.failNext(new StatusCallError("edit", 429, "Too Many Requests", 5000));
    await advance(1000); // rate limited at 6 s: nothing until 11 s
    for (let i = 0; i < 4; i++) await advance(1000);
    expect(status.calls.filter((c) => c.startsWith("edit")).length).toBe(3);
    await advance(1000); // edits again
    status.failNext(serverError(), serverError(), serverError());
    for (let i = 0; i < 6; i++) await advance(1000);
    await progress.finish();
    expect(status.calls).toEqual([
      "post ⏳ working — 3s",
      "edit 1 ⏳ working — 4s ✗",
      "edit 1 ⏳ working — 5s",
      "edit 1 ⏳ working — 6s ✗",
      "edit 1 ⏳ working — 11s",
      "edit 1 ⏳ working — 12s ✗",
      "edit 1 ⏳ working — 13s ✗",
      "edit 1 ⏳ working — 14s ✗",
      "remove 1",
    ]);
    expect(problems.at(-1)).toBe("3 status edits failed in a row; no more edits");
  });

  it("marks the status ended when it cannot be deleted, and gives up quietly when that fails too", async () => {
    const status = new RecordingStatus();
    const { progress, advance, problems } = progressOf(status);
    await advance(3000);
    await advance(4000);
    status.failNext(new StatusCallError("remove", 400, "message can't be deleted"));
    await progress.finish();
    expect(status.calls.slice(-2)).toEqual(["remove 1 ✗", "edit 1 ⌛ ended after 7s"]);
    const other = new RecordingStatus();
    const second = progressOf(other);
    await second.advance(3000);
    other.failNext(serverError(), serverError());
    await expect(second.progress.finish()).resolves.toBeUndefined();
    expect(second.problems).toHaveLength(2);
    expect(problems).toHaveLength(1);
  });

  it("never posts again after a failed post, and deletes a post still in flight at the end", async () => {
    const failing = new RecordingStatus();
    failing.failNext(new StatusCallError("post", 502, "Bad Gateway"));
    const first = progressOf(failing);
    await first.advance(3000);
    for (let i = 0; i < 5; i++) await first.advance(1000);
    await first.progress.finish();
    expect(failing.calls).toEqual(["post ⏳ working — 3s ✗"]);

    const slow = new RecordingStatus();
    const release = slow.holdPost();
    const second = progressOf(slow);
    await second.advance(3000);
    const finished = second.progress.finish();
    release();
    await finished;
    await second.advance(5000);
    expect(slow.calls).toEqual(["post ⏳ working — 3s", "remove 1"]);
  });
});

describe("TurnProgress, rate limited", () => {
  it("posts the status once a rate-limited post's wait passed: the platform posted nothing", async () => {
    const status = new RecordingStatus();
    status.failNext(new StatusCallError("post", 429, "Too Many Requests", 5000));
    const { progress, advance } = progressOf(status);
    await advance(3000);
    await advance(4999);
    expect(status.calls).toEqual(["post ⏳ working — 3s ✗"]);
    await advance(1);
    expect(status.calls).toEqual(["post ⏳ working — 3s ✗", "post ⏳ working — 8s"]);
    await progress.finish();
    expect(status.calls.at(-1)).toBe("remove 1");

    const ended = new RecordingStatus();
    ended.failNext(new StatusCallError("post", 429, "Too Many Requests", 5000));
    const quick = progressOf(ended);
    await quick.advance(3000);
    await quick.progress.finish();
    await quick.advance(10_000);
    expect(ended.calls).toEqual(["post ⏳ working — 3s ✗"]);
  });
});

describe("TurnProgress's ledger", () => {
  it("records the status once posted, before any edit, and forgets it once deleted", async () => {
    const status = new RecordingStatus();
    const { progress, advance } = progressOf(status, 1000, ledgerOf(status));
    await advance(3000);
    await advance(1000);
    await progress.finish();
    expect(status.calls).toEqual([
      "post ⏳ working — 3s",
      "ledger shown 1",
      "edit 1 ⏳ working — 4s",
      "remove 1",
      "ledger gone",
    ]);
  });

  it("forgets a status marked ended, keeps one neither deleted nor marked, records none for a turn that showed none", async () => {
    const marked = new RecordingStatus();
    const first = progressOf(marked, 1000, ledgerOf(marked));
    await first.advance(3000);
    marked.failNext(new StatusCallError("remove", 400, "message can't be deleted"));
    await first.progress.finish();
    expect(marked.calls.slice(-3)).toEqual([
      "remove 1 ✗",
      "edit 1 ⌛ ended after 3s",
      "ledger gone",
    ]);

    const stuck = new RecordingStatus();
    const second = progressOf(stuck, 1000, ledgerOf(stuck));
    await second.advance(3000);
    stuck.failNext(serverError(), serverError());
    await second.progress.finish();
    expect(stuck.calls).toEqual([
      "post ⏳ working — 3s",
      "ledger shown 1",
      "remove 1 ✗",
      "edit 1 ⌛ ended after 3s ✗",
    ]);

    const quick = new RecordingStatus();
    const third = progressOf(quick, 1000, ledgerOf(quick));
    await third.advance(2000);
    await third.progress.finish();
    expect(quick.calls).toEqual([]);
  });

  it("goes on editing and deleting when the ledger cannot be written, and says so", async () => {
    const status = new RecordingStatus();
    const { progress, advance, problems } = progressOf(status, 1000, ledgerOf(status, true));
    await advance(3000);
    await advance(1000);
    await expect(progress.finish()).resolves.toBeUndefined();
    expect(status.calls).toEqual([
      "post ⏳ working — 3s",
      "ledger shown 1 ✗",
      "edit 1 ⏳ working — 4s",
      "remove 1",
      "ledger gone ✗",
    ]);
    expect(problems).toEqual([
      "could not record the status message shown",
      "could not record the status message gone",
    ]);
  });
});

describe("status text", () => {
  it.each([
    [0, "0s"],
    [59_999, "59s"],
    [60_000, "1m 00s"],
    [75_000, "1m 10s"],
    [599_999, "9m 50s"],
    [600_000, "10m"],
    [3_725_000, "62m"],
  ])("reads %i ms as %s", (ms, text) => {
    expect(formatElapsed(ms)).toBe(text);
  });

  it("shows a command's first line, cut at 120 characters", () => {
    expect(describeCommand("ls -la")).toBe("ls -la");
    expect(describeCommand("cd /x\nmake all")).toBe("cd /x …");
    const long = describeCommand("x".repeat(300));
    expect(long).toHaveLength(120);
    expect(long.endsWith("…")).toBe(true);
    expect(statusText(12_000, "$ make")).toBe("⏳ working — 12s\n$ make");
  });
});
