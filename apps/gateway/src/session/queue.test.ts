import { describe, expect, it } from "vitest";
import { QueueClosedError, RunLater, TurnQueue } from "./queue.js";

/** A job that records its start and waits until released. */
function gated(log: string[], name: string) {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let started!: () => void;
  const startedP = new Promise<void>((r) => {
    started = r;
  });
  const job = async (signal: AbortSignal) => {
    log.push(`start ${name}`);
    started();
    await Promise.race([
      gate,
      new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true })),
    ]);
    log.push(signal.aborted ? `aborted ${name}` : `end ${name}`);
  };
  return { job, release, started: startedP };
}

describe("TurnQueue", () => {
  it("runs one turn at a time per session, in arrival order", async () => {
    const q = new TurnQueue({ concurrency: 4 });
    const log: string[] = [];
    const a1 = gated(log, "a1");
    const a2 = gated(log, "a2");
    const a3 = gated(log, "a3");
    const done = [q.enqueue("a", a1.job), q.enqueue("a", a2.job), q.enqueue("a", a3.job)];
    await a1.started;
    expect(q.queued("a")).toBe(2);
    a3.release();
    a2.release();
    a1.release();
    expect(await Promise.all(done)).toEqual(["done", "done", "done"]);
    expect(log).toEqual(["start a1", "end a1", "start a2", "end a2", "start a3", "end a3"]);
  });

  it("a turn that handed its reply over no longer counts as answering; the next still waits for it", async () => {
    const q = new TurnQueue({ concurrency: 4 });
    const log: string[] = [];
    const a1 = gated(log, "a1");
    const a2 = gated(log, "a2");
    const first = q.enqueue("a", a1.job);
    await a1.started;
    expect([q.isRunning("a"), q.isAnswering("a")]).toEqual([true, true]);
    q.replied("a");
    expect([q.isRunning("a"), q.isAnswering("a")]).toEqual([true, false]);
    const second = q.enqueue("a", a2.job);
    expect(q.queued("a")).toBe(1);
    a1.release();
    await a2.started;
    expect(q.isAnswering("a")).toBe(true); // the flag was the first turn's
    a2.release();
    await Promise.all([first, second]);
    expect(log).toEqual(["start a1", "end a1", "start a2", "end a2"]);
    q.replied("a"); // nothing runs: nothing to mark
    expect(q.isAnswering("a")).toBe(false);
  });

  it("runs different sessions in parallel up to the global cap", async () => {
    const q = new TurnQueue({ concurrency: 2 });
    const log: string[] = [];
    const jobs = ["a", "b", "c"].map((s) => gated(log, s));
    const done = jobs.map((j, i) => q.enqueue(["a", "b", "c"][i]!, j.job));
    await Promise.all([jobs[0]!.started, jobs[1]!.started]);
    expect(q.active).toBe(2);
    expect(log).toEqual(["start a", "start b"]);
    jobs[1]!.release();
    await jobs[2]!.started;
    expect(log).toEqual(["start a", "start b", "end b", "start c"]);
    jobs[0]!.release();
    jobs[2]!.release();
    await Promise.all(done);
    await q.idle();
    expect(q.active).toBe(0);
  });

  it("a turn delivering its reply leaves its place under the cap to another session's; idle waits for the delivery", async () => {
    const q = new TurnQueue({ concurrency: 1 });
    const log: string[] = [];
    const [a1, a2, b] = [gated(log, "a1"), gated(log, "a2"), gated(log, "b")];
    const done = [q.enqueue("a", a1.job), q.enqueue("a", a2.job), q.enqueue("b", b.job)];
    await a1.started;
    expect(log).toEqual(["start a1"]);
    q.replied("a");
    q.replied("a"); // once only: a second call frees no second place
    await b.started;
    expect(log).toEqual(["start a1", "start b"]);
    expect(q.active).toBe(2);
    let idle = false;
    void q.idle().then(() => {
      idle = true;
    });
    b.release();
    await done[2];
    // b ended while a1 still delivers: not idle, and a's next turn waits for a1.
    expect(idle).toBe(false);
    expect(log).toEqual(["start a1", "start b", "end b"]);
    a1.release();
    await a2.started;
    expect(log).toEqual(["start a1", "start b", "end b", "end a1", "start a2"]);
    // a2 holds the one place: a turn of a new session waits for it.
    const c = gated(log, "c");
    const third = q.enqueue("c", c.job);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(log).not.toContain("start c");
    a2.release();
    await c.started;
    c.release();
    await Promise.all([...done, third]);
    await q.idle();
    expect(idle).toBe(true);
    expect(q.active).toBe(0);
  });

  it("dropQueued drops waiting turns and abortRunning aborts the running one", async () => {
    const q = new TurnQueue({ concurrency: 1 });
    const log: string[] = [];
    const a1 = gated(log, "a1");
    const a2 = gated(log, "a2");
    const b1 = gated(log, "b1");
    const p1 = q.enqueue("a", a1.job);
    const p2 = q.enqueue("a", a2.job);
    const pb = q.enqueue("b", b1.job);
    await a1.started;
    expect(q.dropQueued("a")).toBe(1);
    expect(await p2).toBe("dropped");
    expect(q.abortRunning("a")).toBe(true);
    expect(await p1).toBe("done");
    await b1.started;
    b1.release();
    expect(await pb).toBe("done");
    expect(log).toEqual(["start a1", "aborted a1", "start b1", "end b1"]);
    expect(q.abortRunning("a")).toBe(false);
  });

  it("a failing job settles as failed, reports the error, and the session continues", async () => {
    const errors: unknown[] = [];
    const q = new TurnQueue({ onError: (_k, e) => errors.push(e) });
    const failed = q.enqueue("a", async () => {
      throw new Error("boom");
    });
    const next = q.enqueue("a", async () => {});
    expect(await failed).toBe("failed");
    expect(await next).toBe("done");
    expect(errors).toHaveLength(1);
  });

  it("refuses work after close", async () => {
    const q = new TurnQueue();
    q.close();
    await expect(q.enqueue("a", async () => {})).rejects.toBeInstanceOf(QueueClosedError);
  });

  it("runs a session's waiting job of a lower order first, and one that runs later behind it", async () => {
    const q = new TurnQueue({ concurrency: 1 });
    const log: string[] = [];
    const first = gated(log, "first");
    let tries = 0;
    const done = [
      q.enqueue("a", first.job, 5),
      // Entry 9 starts after 5, then finds that 7 must run first: it goes back behind it.
      q.enqueue(
        "a",
        async () => {
          log.push(`try 9 (${++tries})`);
          if (tries === 1) {
            void q.enqueue(
              "a",
              async () => {
                log.push("run 7");
              },
              7,
            );
            return RunLater;
          }
          log.push("run 9");
        },
        9,
      ),
      q.enqueue("a", async () => void log.push("run 8"), 8),
    ];
    await first.started;
    first.release();
    expect(await Promise.all(done)).toEqual(["done", "done", "done"]);
    expect(log).toEqual([
      "start first",
      "end first",
      "run 8",
      "try 9 (1)",
      "run 7",
      "try 9 (2)",
      "run 9",
    ]);
  });

  it("lets other sessions run while one is held back, and starts it again after", async () => {
    const q = new TurnQueue({ concurrency: 1 });
    const log: string[] = [];
    let resume!: () => void;
    const until = new Promise<void>((r) => {
      resume = r;
    });
    let tries = 0;
    const held = q.enqueue("a", async () => {
      log.push(`try a (${++tries})`);
      if (tries > 1) return;
      q.holdBack("a", until);
      return RunLater;
    });
    const other = q.enqueue("b", async () => void log.push("run b"));
    expect(await other).toBe("done");
    expect(log).toEqual(["try a (1)", "run b"]);
    expect(q.queued("a")).toBe(1);
    resume();
    expect(await held).toBe("done");
    expect(log).toEqual(["try a (1)", "run b", "try a (2)"]);
  });

  it("drops a held-back job on /stop", async () => {
    const q = new TurnQueue({ concurrency: 1 });
    const held = q.enqueue("a", async () => {
      q.holdBack("a", new Promise<void>(() => {}));
      return RunLater;
    });
    // Held back, nothing runs: the queue is idle with the job waiting in it.
    await q.idle();
    expect(q.queued("a")).toBe(1);
    expect(q.dropQueued("a")).toBe(1);
    expect(await held).toBe("dropped");
  });

  it("hold lets the running turn finish and starts none of the session's until released", async () => {
    const q = new TurnQueue({ concurrency: 4 });
    const log: string[] = [];
    const a1 = gated(log, "a1");
    const a2 = gated(log, "a2");
    const b1 = gated(log, "b1");
    const first = q.enqueue("a", a1.job);
    await a1.started;
    q.replied("a");
    const release = q.hold("a");
    const delivered = q.delivered("a").then(() => log.push("delivered a1"));
    const second = q.enqueue("a", a2.job);
    a1.release();
    expect(await first).toBe("done");
    await delivered;
    // Other sessions go on; the held one waits, its message queued.
    const other = q.enqueue("b", b1.job);
    await b1.started;
    b1.release();
    await other;
    expect(q.queued("a")).toBe(1);
    release();
    release(); // a second call does nothing
    await a2.started;
    a2.release();
    expect(await second).toBe("done");
    expect(log).toEqual([
      "start a1",
      "end a1",
      "delivered a1",
      "start b1",
      "end b1",
      "start a2",
      "end a2",
    ]);
  });

  it("delivered resolves at once when the session's turn has not handed its reply over", async () => {
    const q = new TurnQueue({ concurrency: 4 });
    const log: string[] = [];
    const a1 = gated(log, "a1");
    const first = q.enqueue("a", a1.job);
    await a1.started;
    await q.delivered("a");
    await q.delivered("nobody");
    expect(log).toEqual(["start a1"]);
    a1.release();
    await first;
  });

  it("aheadOf counts the jobs one of a given order would wait for", async () => {
    const q = new TurnQueue({ concurrency: 4 });
    const log: string[] = [];
    const running = gated(log, "a3");
    const done = [q.enqueue("a", running.job, 3)];
    await running.started;
    done.push(q.enqueue("a", gated(log, "a5").job, 5), q.enqueue("a", gated(log, "a7").job, 7));
    // The running job of order 3 may still go back behind an older one (not admitted yet).
    expect([q.aheadOf("a", 1), q.aheadOf("a", 4), q.aheadOf("a", 6), q.aheadOf("a")]).toEqual([
      0, 1, 2, 3,
    ]);
    q.admitted("a");
    expect(q.aheadOf("a", 1)).toBe(1);
    q.replied("a");
    expect([q.aheadOf("a", 1), q.aheadOf("a", 9), q.aheadOf("nobody", 2)]).toEqual([0, 2, 0]);
    q.abortAll();
    await Promise.all(done);
  });
});
