import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollFor } from "../../test-support/wait.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { FaultBench } from "./durability/fault-bench.js";
import { describeExit } from "./durability/gateway-process.js";
import { replySummary, settleReplies } from "./durability/reply-audit.js";
import { profileSlotOf, slotDirNameOf } from "./durability/sandbox-census.js";
import { commandMessage, sendMessage } from "./durability/traffic.js";
import { answerOf } from "./durability/waits.js";

/**
 * Issue 9, "a 40 MB upload in progress is cut off with no notice": the real `mediagate start`
 * is uploading a 40 MiB file over a slow link (the fake reads uploads at 512 KiB/s, so it
 * takes 80 s) when it gets SIGTERM. The drain cannot finish it; the upload is aborted, the
 * reply stays in the outbox, and the restarted gateway (on a fast link again) uploads it:
 * the file arrives exactly once, byte for byte, with its caption once.
 */
const User = 7301;
const FileBytes = 40 * 1024 * 1024;
const SlowLinkBytesPerSecond = 512 * 1024;

let fake: FakeTelegram;
let bench: FaultBench | undefined;

beforeAll(async () => {
  fake = new FakeTelegram();
  await fake.start();
  bench = await FaultBench.create({ prefix: "sigterm-upload", fake, users: [User] });
});

afterAll(async () => {
  await bench?.dispose();
  await fake?.stop();
});

describe("SIGTERM during a large upload", () => {
  it("resumes the upload after the restart and the file arrives exactly once", async () => {
    const b = bench as FaultBench;
    await b.start();
    const warm = sendMessage(fake, commandMessage(User, "ok-warm", "echo ok-warm"));
    expect(await answerOf(fake, warm, 60_000), "the first message is answered").toBeDefined();

    fake.throttleUploads(SlowLinkBytesPerSecond);
    const file = { name: "big.bin", content: "" };
    const big = sendMessage(
      fake,
      commandMessage(
        User,
        "ok-big",
        `head -c ${FileBytes} /dev/urandom > /workspace/${file.name}; echo ok-big; echo MEDIA:/workspace/${file.name}`,
        { kind: "media", file },
      ),
    );
    const underWay = await pollFor(
      () => fake.uploadsInProgress.find((u) => u.receivedBytes > 1024 * 1024),
      60_000,
    );
    expect(underWay, "the upload is under way").toBeDefined();

    const sigtermAt = Date.now();
    const exit = await b.terminate(90_000);
    const stopMs = Date.now() - sigtermAt;
    // The fake still holds what the killed upload had put on the wire; read it at full speed
    // to see where the upload was cut off.
    fake.throttleUploads(undefined);
    await pollFor(() => (fake.uploadsInProgress.length === 0 ? true : undefined), 30_000);
    const cutOff = [...fake.cutOffUploads];
    const beforeRestart = fake.calls.length;
    await b.start();
    const audit = await settleReplies(fake, [warm, big], { quietMs: 15_000, timeoutMs: 90_000 });
    const verdict = audit.verdicts[1];
    const expected = await readFile(
      join(
        b.profileHome,
        "sandboxes",
        "docker",
        slotDirNameOf(profileSlotOf(b.profile)),
        "workspace",
        file.name,
      ),
    );
    const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex").slice(0, 16);
    const arrived = (verdict?.files ?? []).flatMap((call) =>
      call.files.filter((f) => f.filename === file.name).map((f) => f.bytes),
    );

    console.log(
      [
        `[sigterm-upload] SIGTERM → exit (${describeExit(exit)}) in ${(stopMs / 1000).toFixed(1)} s; uploads cut off: ${cutOff.map((u) => `${u.method} at ${(u.receivedBytes / 1024 / 1024).toFixed(1)} MiB`).join(", ") || "none"}`,
        `[sigterm-upload] ${replySummary(audit)}; file arrived ${arrived.length}× (${arrived.filter((a) => a.length === FileBytes).length} complete), ${verdict?.files.filter((c) => c.seq > beforeRestart).length ?? 0} of them after the restart`,
      ].join("\n"),
    );
    const problems = [
      ...(arrived.length === 1
        ? []
        : [`the file arrived ${arrived.length}× (expected exactly once)`]),
      ...arrived
        .filter((bytes) => !bytes.equals(expected))
        .map(
          (bytes) =>
            `a copy differs from the file: ${bytes.length} bytes, sha ${sha(bytes)} vs ${expected.length} bytes, sha ${sha(expected)}`,
        ),
      ...(verdict?.replies.length === 1 ? [] : [`the caption arrived ${verdict?.replies.length}×`]),
      ...(exit.code === 0 ? [] : [`SIGTERM ended the gateway with ${describeExit(exit)}`]),
      ...b.exitProblems(),
    ];
    expect(problems).toEqual([]);
  });
});
