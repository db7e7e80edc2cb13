import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollFor } from "../../test-support/wait.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { FaultBench } from "./durability/fault-bench.js";
import { describeExit } from "./durability/gateway-process.js";
import { replySummary, settleReplies, textsOf } from "./durability/reply-audit.js";
import { commandMessage, sendMessage } from "./durability/traffic.js";
import { answerOf } from "./durability/waits.js";

/**
 * Issue 9, "SIGTERM loses work": a user's 40 s command runs and their next message waits
 * behind it when the service manager stops the real `mediagate start` (SIGTERM). The drain
 * (15 s by default) cannot finish the turn. After the restart the queued message is answered
 * once, the cut-off turn gets a notice in the chat from the new process (it is not re-run:
 * re-running is off by default), and nothing blames the drop on "/stop or /reset".
 */
const User = 7201;

let fake: FakeTelegram;
let bench: FaultBench | undefined;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  bench = await FaultBench.create({ prefix: "sigterm-turn", fake, users: [User] });
});

afterAll(async () => {
  await bench?.dispose();
  await fake?.stop();
});

describe("SIGTERM during a long turn", () => {
  it("answers the queued message after the restart and gives the cut-off turn a notice", async () => {
    const b = bench as FaultBench;
    await b.start();
    const warm = sendMessage(fake, commandMessage(User, "ok-warm", "echo ok-warm"));
    expect(await answerOf(fake, warm, 60_000), "the first message is answered").toBeDefined();
    const afterWarm = fake.calls.length;

    const long = sendMessage(
      fake,
      commandMessage(User, "ok-long", "sleep 40; echo ok-long", { kind: "long" }),
    );
    const container = await pollFor(
      async () => {
        const [c] = (await b.census()).containers;
        if (c === undefined) return undefined;
        const ps = await b.docker.processes(c.id).catch(() => []);
        return ps.some((line) => line.includes("sleep 40")) ? c.id : undefined;
      },
      30_000,
      100,
    ); // a census is a few engine calls: not every 25 ms
    expect(container, "the 40 s command runs in the profile's container").toBeDefined();
    const queued = sendMessage(fake, commandMessage(User, "ok-queued", "echo ok-queued"));
    await pollFor(() => (fake.pendingUpdates === 0 ? true : undefined), 10_000);

    const first = b.current;
    const sigtermAt = Date.now();
    const exit = await b.terminate(90_000);
    const stopMs = Date.now() - sigtermAt;
    const beforeRestart = fake.calls.length;
    const heldAtRestart = fake.pendingUpdates;
    await b.start();
    const audit = await settleReplies(fake, [warm, long, queued], {
      quietMs: 15_000,
      timeoutMs: 60_000,
    });
    const [, longVerdict, queuedVerdict] = audit.verdicts;
    const noticesAfterRestart = longVerdict?.notices.filter((c) => c.seq > beforeRestart) ?? [];
    const chat = fake.calls
      .filter((c) => c.ok && c.method.startsWith("send") && c.method !== "sendChatAction")
      .filter((c) => c.seq > afterWarm && String(c.params.chat_id) === String(User))
      .map(
        (c) =>
          `${c.seq > beforeRestart ? "after" : "before"} restart: ${JSON.stringify(textsOf(c).join(" | "))}`,
      );

    console.log(
      [
        `[sigterm-long-turn] SIGTERM → exit (${describeExit(exit)}) in ${(stopMs / 1000).toFixed(1)} s; updates Telegram still held at restart: ${heldAtRestart}`,
        `[sigterm-long-turn] ${replySummary(audit)}`,
        ...chat.map((line) => `[sigterm-long-turn] chat ${line}`),
      ].join("\n"),
    );
    const problems = [
      ...(queuedVerdict?.outcome === "answered"
        ? []
        : [
            `the queued message was ${queuedVerdict?.outcome} (replies: ${queuedVerdict?.replies.length})`,
          ]),
      ...(longVerdict?.replies.length === 0
        ? []
        : [
            `the cut-off turn's output arrived ${longVerdict?.replies.length}× (it must not be re-run by default)`,
          ]),
      ...(noticesAfterRestart.length > 0
        ? []
        : ["the cut-off turn got no notice replying to it from the restarted gateway"]),
      ...(exit.code === 0 ? [] : [`SIGTERM ended the gateway with ${describeExit(exit)}`]),
      ...((first?.output ?? "").includes("/stop or /reset")
        ? ["the shutdown's drop is logged as caused by /stop or /reset"]
        : []),
      ...b.exitProblems(),
    ];
    expect(problems).toEqual([]);
  });
});
