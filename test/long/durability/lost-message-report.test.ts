import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteJournal } from "@mediagate/gateway";
import { afterEach, describe, expect, it } from "vitest";
import type { RecordedCall } from "../../fakes/telegram/index.js";
import type { GatewayProcess } from "./gateway-process.js";
import { lostMessageReport } from "./lost-message-report.js";
import { auditReplies } from "./reply-audit.js";
import type { SentMessage } from "./traffic.js";

const message: SentMessage = {
  id: "u7002#003",
  userId: 7002,
  place: { type: "dm" },
  kind: "quick",
  token: "ok-u7002-n003",
  text: "echo ok-u7002-n003",
  chatId: 7002,
  updateId: 9,
  messageId: 1009,
  sentAtMs: 1_000,
};

const call = (seq: number, atMs: number, method: string, fields: Partial<RecordedCall>) =>
  ({
    seq,
    atMs,
    method,
    params: {},
    files: [],
    multipart: false,
    status: 200,
    ok: true,
    ...fields,
  }) as RecordedCall;

/** Two runs: pid 101 from 0 to 2 s, pid 102 from 3 s on. */
const runs = [
  { run: 1, pid: 101, spawnedAtMs: 0, readyAtMs: 500, exitedAtMs: 2_000, output: "" },
  {
    run: 2,
    pid: 102,
    spawnedAtMs: 3_000,
    readyAtMs: 3_500,
    exitedAtMs: undefined,
    output: `{"level":30,"entryId":1,"msg":"x"}\n{"level":30,"messageId":"7","msg":"other"}`,
  },
] as unknown as GatewayProcess[];

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("lostMessageReport", () => {
  it("names the run each getUpdates went to, the confirming offset, the journal rows and log lines", async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-lost-report-"));
    const journal = await SqliteJournal.open(join(dir, "journal.db"), {
      owner: "host/boot/101/55",
      now: () => 1_200,
    });
    await journal.record({
      profile: "p",
      platform: "telegram",
      chatId: "7002",
      chatType: "dm",
      userId: "7002",
      messageId: "1009",
      text: message.text,
      receiptId: "9",
    });
    await journal.close();
    const calls = [
      call(1, 1_100, "getUpdates", { params: { offset: 0 }, result: [{ update_id: 9 }] }),
      call(2, 2_500, "getUpdates", { params: { offset: 10 }, result: [], clientGone: true }),
    ];
    const audit = auditReplies(calls, [message]);
    const [report] = lostMessageReport(audit, { runs, home: dir, profile: "p", calls });
    expect(report?.split("\n")).toEqual([
      "lost u7002#003: update 9, message 1009 in chat 7002, sent during run 1 (pid 101, +1000 ms, serving since 500 ms)",
      "  telegram: returned by #1 getUpdates ok during run 1 (pid 101, +1100 ms, serving since 600 ms) (offset 0, 1 updates)",
      "  telegram: confirmed by #2 getUpdates ok to a closed connection after run 1 ended (offset 10)",
      "  telegram: no call named the message (no reaction, reply, draft)",
      "  journal: receipt p:telegram:9 -> entry 1",
      "  journal: entry 1 p:telegram:9: received, owner run 1; received during run 1 (pid 101, +1200 ms, serving since 700 ms); started -; finished -",
      "  journal: entry 1: no reply recorded",
      `  log: run 2: {"level":30,"entryId":1,"msg":"x"}`,
    ]);
  });
});
