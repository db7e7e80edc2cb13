import type { UploadLimits } from "@mediagate/media";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { journalBackends } from "../../test/fixtures/journal-backends.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  DeliveryProgress,
  DeliveryReport,
  OutboundReply,
  StepResult,
} from "../channels/types.js";
import { createLogger } from "../log.js";
import { TextUnconfirmedText } from "./notices.js";
import { Outbox } from "./outbox.js";
import type { Journal, OutboxRecord, OutboxReply } from "./types.js";

/*
 * A notice a crash cut off mid-send (its chunk left `sending`) on the next start: the notices
 * that say the reply is missing or may be are sent again (docs/durability.md). The real
 * journal; a channel of our own interface that, like Telegram's under `at-most-once`, never
 * sends a step its progress already has, and records what it sends.
 */

/** Sends the steps its progress does not have yet; records each delivery and what it sent. */
class StepChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "main";
  readonly limits: UploadLimits = { maxBytes: () => 50 * 1024 * 1024 };
  readonly sent: string[] = [];
  /** The steps each delivery started from. */
  readonly startedFrom: [string, [string, StepResult][]][] = [];
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendText(): Promise<void> {}
  async showActivity(): Promise<void> {}
  async deliver(
    reply: OutboundReply,
    options: { progress?: DeliveryProgress } = {},
  ): Promise<DeliveryReport> {
    const done = options.progress?.done ?? new Map();
    this.startedFrom.push([reply.text, [...done]]);
    if (!done.has("text:0")) {
      this.sent.push(reply.text);
      await options.progress?.step("text:0", "sent");
    }
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

let journal: Journal;
let channel: StepChannel;

function outboxProcess(): Outbox {
  return new Outbox({
    journal,
    logger: createLogger({ level: "silent" }),
    channelFor: () => channel,
    translateContextFor: () => () => ({
      backend: "docker",
      slotDirs: [],
      volumes: [],
      allowDirs: [],
      protectedHomes: [],
      tmpDir: "/nonexistent",
    }),
    schedule: () => () => {},
  });
}

/** A reply recorded with `steps`, as a killed process left it, read back as the next start does. */
async function leftWith(steps: readonly [string, StepResult][]): Promise<OutboxRecord> {
  const record = await outboxProcess().record(reply, undefined);
  for (const [key, result] of steps) await journal.step(record.id, key, result);
  const [read] = await journal.replies({ id: record.id });
  if (read === undefined) throw new Error("the reply did not read back");
  return read;
}

async function stepsOf(id: string): Promise<Record<string, StepResult>> {
  const [read] = await journal.replies({ id });
  return Object.fromEntries(read?.steps ?? []);
}

describe.each(journalBackends())("notices cut off mid-send, journal on $name", (backend) => {
  beforeAll(() => backend.beforeAll());
  afterAll(() => backend.afterAll());
  beforeEach(async () => {
    await backend.beforeEach();
    journal = await backend.open();
    channel = new StepChannel();
  });
  afterEach(() => backend.afterEach());

  it("sends again the may-not-have-arrived notice of a reply whose text was cut off too", async () => {
    const record = await leftWith([
      ["text:0", "unconfirmed"],
      ["notices:delivery/text:0", "sending"],
    ]);
    expect((await outboxProcess().deliver(record)).result).toBe("delivered");
    // The reply itself is not sent again; no step of the notice reaches the channel as begun.
    expect(channel.sent).toEqual([TextUnconfirmedText]);
    expect(channel.startedFrom).toEqual([
      ["the answer", [["text:0", "unconfirmed"]]],
      [TextUnconfirmedText, []],
    ]);
    expect(await stepsOf(record.id)).toEqual({
      "text:0": "unconfirmed",
      "notices:delivery/text:0": "sent",
      "notices:delivery": "sent",
    });
  });

  it("sends again the give-up notice a crash cut off", async () => {
    const record = await leftWith([
      ["given_up", "failed"],
      ["notices:given_up/text:0", "sending"],
    ]);
    expect((await outboxProcess().deliver(record)).result).toBe("given_up");
    expect(channel.sent).toEqual([expect.stringContaining("A reply could not be delivered")]);
    expect((await stepsOf(record.id))["notices:given_up/text:0"]).toBe("sent");
  });

  it("leaves the files-withheld notice cut off mid-send to the channel's at-most-once", async () => {
    const record = await leftWith([
      ["text:0", "sent"],
      ["notices:plan/text:0", "sending"],
    ]);
    expect((await outboxProcess().deliver(record)).result).toBe("delivered");
    expect(channel.sent).toEqual([]);
    expect(channel.startedFrom).toEqual([
      [
        "the answer",
        [
          ["text:0", "sent"],
          ["notices:plan/text:0", "sending"],
        ],
      ],
    ]);
  });
});
