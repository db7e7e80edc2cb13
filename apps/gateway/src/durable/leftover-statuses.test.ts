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

/**
 * A platform's status calls, recorded; the ones named in `refuse` fail with a 400, and the
 * first `limited.times` ones named in `limited.calls` with a 429 asking to wait `limited.ms`.
 */
class RecordingStatus implements StatusMessages {
  readonly calls: string[] = [];
  readonly textLimit = { maxLength: 4096 };
  constructor(
    private readonly refuse: readonly string[] = [],
    private readonly limited: {
      readonly calls: readonly string[];
      readonly times: number;
      readonly ms: (call: string) => number;
    } = { calls: [], times: 0, ms: () => 1000 },
  ) {}
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
    const limited =
      this.limited.calls.some((prefix) => call.startsWith(prefix)) &&
      this.calls.filter((c) => c === `${call} 429`).length < this.limited.times;
    this.calls.push(refused ? `${call} ✗` : limited ? `${call} 429` : call);
    if (refused) throw new StatusCallError(operation, 400, "message to edit not found");
    if (limited) {
      throw new StatusCallError(operation, 429, "Too Many Requests", this.limited.ms(call));
    }
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

  it("waits out a rate limit and makes the call again, a bounded number of times", async () => {
    await journal.previewsShown(await leftover("1", "started"), ["p1a"]);
    await leftover("2", "done");
    await leftover("3", "started");
    await journal.release();
    // The killed process's preview edits used the chats' budget (the long suite's
    // telegram-streaming-kills saw this): the first two calls of each are refused with a 429.
    const status = new RecordingStatus([], {
      calls: ["edit chat-1/", "remove chat-1/p1a", "remove chat-2/"],
      times: 2,
      ms: () => 1000,
    });
    const waits: number[] = [];
    const results = await clearLeftoverStatuses({
      journal,
      statusFor: () => status,
      rerunInterrupted: true,
      logger: silentLogger(),
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(results).toEqual(["edited", "deleted", "edited"]);
    expect(status.calls.filter((c) => c.startsWith("edit chat-1/"))).toEqual([
      "edit chat-1/s1 ⏹ cut off by a restart; running it again 429",
      "edit chat-1/s1 ⏹ cut off by a restart; running it again 429",
      "edit chat-1/s1 ⏹ cut off by a restart; running it again",
    ]);
    expect(status.calls.filter((c) => c.startsWith("remove chat-1/p1a"))).toHaveLength(3);
    expect(status.calls.filter((c) => c.startsWith("remove chat-2/"))).toHaveLength(3);
    expect(waits).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
    expect(await journal.leftoverStatuses()).toEqual([]);
  });

  it("gives a rate-limited status up after three tries, or at once when the wait is too long", async () => {
    await leftover("1", "started");
    await leftover("2", "started");
    await journal.release();
    // chat-1 is refused every time; chat-2 asks for a minute, longer than a start should wait.
    const status = new RecordingStatus([], {
      calls: ["edit chat-1/", "edit chat-2/"],
      times: 99,
      ms: (call) => (call.startsWith("edit chat-1/") ? 1000 : 60_000),
    });
    const waits: number[] = [];
    const results = await clearLeftoverStatuses({
      journal,
      statusFor: () => status,
      rerunInterrupted: false,
      logger: silentLogger(),
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(results).toEqual(["failed", "failed"]);
    expect(status.calls.filter((c) => c.startsWith("edit chat-1/"))).toHaveLength(3);
    expect(status.calls.filter((c) => c.startsWith("edit chat-2/"))).toHaveLength(1);
    expect(waits).toEqual([1000, 1000]);
    expect(await journal.leftoverStatuses()).toEqual([]);
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
