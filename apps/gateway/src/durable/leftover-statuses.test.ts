import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { journalBackends } from "../../test/fixtures/journal-backends.js";
import {
  type ChatTarget,
  type InboundMessage,
  StatusCallError,
  type StatusMessages,
} from "../channels/types.js";
import { silentLogger } from "../log.js";
import { clearLeftoverStatuses } from "./leftover-statuses.js";
import type { Journal } from "./types.js";

/** A platform's status calls, recorded; the ones named in `refuse` fail with a 400. */
class RecordingStatus implements StatusMessages {
  readonly calls: string[] = [];
  readonly textLimit = { maxLength: 4096 };
  constructor(private readonly refuse: readonly string[] = []) {}
  editIntervalMs(): number {
    return 1000;
  }
  async post(): Promise<string> {
    throw new Error("a restart never posts a status");
  }
  async edit(target: ChatTarget, id: string, text: string): Promise<void> {
    this.#call("edit", `edit ${target.chatId}/${id} ${text}`);
  }
  async remove(target: ChatTarget, id: string): Promise<void> {
    this.#call("remove", `remove ${target.chatId}/${id}`);
  }
  #call(operation: "edit" | "remove", call: string): void {
    const refused = this.refuse.some((prefix) => call.startsWith(prefix));
    this.calls.push(refused ? `${call} ✗` : call);
    if (refused) throw new StatusCallError(operation, 400, "message to edit not found");
  }
}

let home: string;
let journal: Journal;

function message(receiptId: string, platform: "telegram" | "discord" = "telegram"): InboundMessage {
  return {
    profile: "work",
    platform,
    chatId: `chat-${receiptId}`,
    chatType: "dm",
    userId: "7",
    messageId: receiptId,
    text: "sleep 60",
    receiptId,
  };
}

/** Records a message whose turn got as far as `state` with its status `id` showing. */
async function leftover(
  receiptId: string,
  state: "received" | "started" | "done",
  platform: "telegram" | "discord" = "telegram",
): Promise<number> {
  const { id } = await journal.record(message(receiptId, platform));
  if (state !== "received") await journal.started(id);
  if (state === "done") await journal.finished(id, "failed");
  await journal.statusShown(id, {
    target: { platform, chatId: `chat-${receiptId}` },
    messageId: `s${receiptId}`,
  });
  return id;
}

describe.each(journalBackends())("clearLeftoverStatuses, journal on $name", (backend) => {
  beforeAll(() => backend.beforeAll());
  afterAll(() => backend.afterAll());
  beforeEach(async () => {
    await backend.beforeEach();
    home = mkdtempSync(join(tmpdir(), "mediagate-statuses-"));
    journal = await backend.open();
  });
  afterEach(async () => {
    await backend.afterEach();
    rmSync(home, { recursive: true, force: true });
  });

  it("says a cut-off turn's status was cut off, deletes an ended turn's, and forgets every one it tried", async () => {
    await leftover("1", "started");
    await leftover("2", "received");
    await leftover("3", "done");
    await leftover("4", "done");
    await leftover("5", "started");
    await leftover("6", "started", "discord");
    // What a stop (or a crash: its process gone) leaves for the next start.
    await journal.release();
    const status = new RecordingStatus(["remove chat-4/", "edit chat-4/", "edit chat-5/"]);
    const results = await clearLeftoverStatuses({
      journal,
      statusFor: (_profile, platform) => (platform === "telegram" ? status : undefined),
      rerunInterrupted: false,
      logger: silentLogger(),
    });
    // All at once: in any order across chats, in order within one.
    expect([...status.calls].sort()).toEqual([
      "edit chat-1/s1 ⏹ cut off by a restart",
      "edit chat-2/s2 ⏹ cut off by a restart; running it again",
      "edit chat-4/s4 ⌛ ended ✗",
      "edit chat-5/s5 ⏹ cut off by a restart ✗",
      "remove chat-3/s3",
      "remove chat-4/s4 ✗",
    ]);
    expect(status.calls.indexOf("remove chat-4/s4 ✗")).toBeLessThan(
      status.calls.indexOf("edit chat-4/s4 ⌛ ended ✗"),
    );
    expect(results).toEqual(["edited", "edited", "deleted", "failed", "failed", "failed"]);
    expect(await journal.leftoverStatuses()).toEqual([]);
  });

  it("deletes a streamed preview's rollover messages whether its turn ended or was cut off", async () => {
    await journal.previewsShown(await leftover("1", "started"), ["p1a", "p1b"]);
    await journal.previewsShown(await leftover("2", "done"), ["p2a"]);
    await journal.release();
    const status = new RecordingStatus();
    await clearLeftoverStatuses({
      journal,
      statusFor: () => status,
      rerunInterrupted: false,
      logger: silentLogger(),
    });
    expect([...status.calls].sort()).toEqual([
      "edit chat-1/s1 ⏹ cut off by a restart",
      "remove chat-1/p1a",
      "remove chat-1/p1b",
      "remove chat-2/p2a",
      "remove chat-2/s2",
    ]);
    expect(await journal.leftoverStatuses()).toEqual([]);
  });

  it("says a cut-off turn runs again when recovery.rerunInterrupted is set", async () => {
    await leftover("1", "started");
    await journal.release();
    const status = new RecordingStatus();
    await clearLeftoverStatuses({
      journal,
      statusFor: () => status,
      rerunInterrupted: true,
      logger: silentLogger(),
    });
    expect(status.calls).toEqual(["edit chat-1/s1 ⏹ cut off by a restart; running it again"]);
  });

  it("leaves the statuses of a process still running alone", async () => {
    await leftover("1", "started");
    const status = new RecordingStatus();
    expect(
      await clearLeftoverStatuses({
        journal,
        statusFor: () => status,
        rerunInterrupted: false,
        logger: silentLogger(),
      }),
    ).toEqual([]);
    expect(status.calls).toEqual([]);
  });
});
