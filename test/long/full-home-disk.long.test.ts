import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollFor } from "../../test-support/wait.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { FaultBench } from "./durability/fault-bench.js";
import { canMountLoopDisks, LoopDisk } from "./durability/loop-disk.js";
import { auditReplies, replySummary, settleReplies, textsOf } from "./durability/reply-audit.js";
import { commandMessage, sendMessage } from "./durability/traffic.js";
import { answerOf } from "./durability/waits.js";

/**
 * Issue 9, "with the home disk full, a new session's message was silently dropped (already
 * confirmed)": the root home of the real `mediagate start` is a 64 MiB loop-mounted ext4.
 * With the disk full, a user who has not written before sends a message: the chat gets a
 * clear notice (it names the disk/space/storage) and the update is not confirmed to Telegram;
 * the operator sees the cause in the log. Once space is freed the message is answered once.
 */
const Warm = 7401;
const Newcomer = 7402;
const DiskBytes = 64 * 1024 * 1024;
const root = await canMountLoopDisks();

let fake: FakeTelegram;
let disk: LoopDisk | undefined;
let bench: FaultBench | undefined;

beforeAll(async () => {
  if (!root) return;
  fake = new FakeTelegram();
  await fake.start();
  disk = await LoopDisk.create(DiskBytes);
  bench = await FaultBench.create({
    prefix: "full-disk",
    fake,
    users: [Warm, Newcomer],
    home: `${disk.mountPoint}/home`,
  });
});

afterAll(async () => {
  await bench?.dispose();
  await disk?.dispose();
  await fake?.stop();
});

describe.runIf(root)("a full home disk", () => {
  it("tells the user, keeps the update unconfirmed, and answers it once space is back", async () => {
    const b = bench as FaultBench;
    const d = disk as LoopDisk;
    await b.start();
    const warm = sendMessage(fake, commandMessage(Warm, "ok-warm", "echo ok-warm"));
    expect(await answerOf(fake, warm, 60_000), "the first message is answered").toBeDefined();

    const filled = await d.fill();
    const mark = fake.calls.length;
    const message = sendMessage(fake, commandMessage(Newcomer, "ok-newcomer", "echo ok-newcomer"));
    const toNewcomer = () =>
      fake.calls
        .slice(mark)
        .filter(
          (c) =>
            c.ok &&
            c.method.startsWith("send") &&
            c.method !== "sendChatAction" &&
            String(c.params.chat_id) === String(Newcomer),
        );
    const isAnswer = (c: (typeof fake.calls)[number]) =>
      textsOf(c).some((t) => t.split("\n").some((line) => line.trim() === message.token));
    const notice = await pollFor(() => toNewcomer().find((c) => !isAnswer(c)), 30_000);
    const heldAtNotice = fake.pendingUpdates;
    const answeredWhileFull = auditReplies(fake.calls, [message]).verdicts[0]?.replies.length ?? 0;
    const heldBeforeFreeing = fake.pendingUpdates;
    const logSaysFull = /ENOSPC|SQLITE_FULL|disk is full|no space/i.test(b.current?.output ?? "");
    await d.free();
    // The notice replies to the message; what is awaited is its answer.
    const audit = await settleReplies(fake, [message], {
      quietMs: 15_000,
      timeoutMs: 60_000,
      until: (a) => a.verdicts[0]?.outcome === "answered",
    });
    const verdict = audit.verdicts[0];
    const noticeText = notice === undefined ? "" : textsOf(notice).join(" | ");

    console.log(
      [
        `[full-home-disk] filled ${(filled / 1024 / 1024).toFixed(1)} MiB; notice while full: ${notice === undefined ? "none" : JSON.stringify(noticeText)}; updates Telegram held: ${heldAtNotice} at the notice, ${heldBeforeFreeing} before freeing; log names the full disk: ${logSaysFull}`,
        `[full-home-disk] after freeing: ${replySummary(audit)}; chat got ${toNewcomer().length} messages in all`,
      ].join("\n"),
    );
    const problems = [
      ...(notice === undefined ? ["the user got no notice while the disk was full"] : []),
      ...(notice !== undefined && !/disk|space|storage/i.test(noticeText)
        ? [`the notice does not say what is wrong: ${JSON.stringify(noticeText)}`]
        : []),
      ...(answeredWhileFull === 0 && heldBeforeFreeing === 0
        ? ["the update was confirmed to Telegram while it could not be recorded"]
        : []),
      ...(answeredWhileFull > 0
        ? ["the message was answered while the disk was full (the fill left room for the write)"]
        : []),
      ...(logSaysFull ? [] : ["the log does not name the full disk (ENOSPC / SQLITE_FULL)"]),
      ...(verdict?.outcome === "answered"
        ? []
        : [
            `after freeing space the message was ${verdict?.outcome} (replies: ${verdict?.replies.length}); gateway log tail:\n${(b.current?.output ?? "").split("\n").slice(-60).join("\n")}`,
          ]),
      ...b.exitProblems(),
    ];
    expect(problems).toEqual([]);
  });
});
