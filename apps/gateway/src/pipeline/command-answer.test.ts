import type { UploadLimits } from "@mediagate/media";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../../test-support/wait.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { journalBackends } from "../../test/fixtures/journal-backends.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChatTarget,
  DeliverOptions,
  DeliveryReport,
  OutboundReply,
} from "../channels/types.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Outbox } from "../durable/outbox.js";
import type { Journal } from "../durable/types.js";
import { silentLogger } from "../log.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import { BusySessions } from "../session/busy.js";
import { TurnQueue } from "../session/queue.js";
import { answerAndFinish, CommandAnswer } from "./command-answer.js";
import { handleMessage } from "./pipeline.js";
import type { MessageContext, PipelineRuntime, PipelineServices } from "./types.js";

/**
 * A Telegram-like channel of one process. `hang`: every delivery stays in flight for good, as
 * one cut off by a crash right after the answer was recorded.
 */
class AnsweringChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "work";
  readonly limits: UploadLimits = { maxBytes: () => 50 * 1024 * 1024 };
  /** Texts the chat got: sent at once, or delivered. */
  readonly said: string[] = [];
  /** Deliveries started (also those that never finish). */
  readonly attempted: string[] = [];

  constructor(private readonly hang: boolean) {}

  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async showActivity(): Promise<void> {}
  async sendText(_target: ChatTarget, text: string): Promise<void> {
    this.said.push(text);
  }
  async deliver(reply: OutboundReply, options?: DeliverOptions): Promise<DeliveryReport> {
    this.attempted.push(reply.text);
    if (this.hang) return new Promise(() => {});
    await options?.progress?.step("text:0", "sent");
    this.said.push(reply.text);
    return { outcomes: [] };
  }
}

const profile = resolveConfig(
  { profiles: [{ name: "work", admins: ["telegram:7"], agent: { kind: "shell" } }] },
  { env: emptyEnv("/tmp/mg-unit") },
).profiles[0]!;

/** A runtime whose sandbox counts `/status`'s look at the session's container. */
function runtime(statusCalls: string[]): PipelineRuntime {
  const refuse = async (): Promise<never> => {
    throw new Error("not used by /status");
  };
  return {
    profile,
    log: silentLogger(),
    agent: { kind: "shell", runTurn: refuse },
    store: {
      currentSessionId: async () => "sid-0",
      rotateSessionId: refuse,
      rotations: 0,
      now: () => 0,
      isPaired: async () => false,
      requestPairing: refuse,
      approvePairing: refuse,
      sessionModel: async () => undefined,
      setSessionModel: refuse,
      usagePeriods: refuse,
    },
    sandbox: {
      run: refuse,
      saveToInbox: refuse,
      killSession: refuse,
      killSlot: refuse,
      cleanup: refuse,
      readFile: refuse,
      status: async (slot) => {
        statusCalls.push(slot);
        return { containerId: "c0ffee", state: "running" };
      },
      slotDirectory: (slot) => `/nonexistent/${slot}`,
    },
    slotFor: () => "profile:work",
    isSharedSlot: () => true,
    pairingRefusals: { count: () => {} },
    translateContext: () => ({
      backend: "docker",
      slotDirs: [],
      volumes: [],
      allowDirs: [],
      protectedHomes: [],
      tmpDir: "/tmp",
    }),
  };
}

/** One gateway process over `journal`: its outbox sends through `channel`. */
function services(journal: Journal, channel: ChannelAdapter): PipelineServices {
  return {
    queue: new TurnQueue({ concurrency: 2 }),
    busy: new BusySessions(),
    slots: new SlotRegistry(),
    journal,
    outbox: new Outbox({
      journal,
      logger: silentLogger(),
      channelFor: () => channel,
      translateContextFor: () => runtime([]).translateContext,
    }),
    channels: () => [],
  };
}

describe.each(journalBackends())("a command's answer on $name", (backend) => {
  beforeAll(() => backend.beforeAll());
  afterAll(() => backend.afterAll());
  beforeEach(() => backend.beforeEach());
  afterEach(() => backend.afterEach());

  it("is recorded with the entry's close and delivered once by the next start, the command not run again", async () => {
    const first = await backend.open();
    const crashing = new AnsweringChannel(true);
    const statusCalls: string[] = [];
    const message = { ...telegramMessage("1", "/status"), profile: "work" };
    const { id: entryId } = await first.record(message);
    const ctx: MessageContext = {
      message,
      channel: crashing,
      runtime: runtime(statusCalls),
      services: services(first, crashing),
      target: { platform: "telegram", chatId: message.chatId },
      entryId,
      log: silentLogger(),
    };
    // The process dies once the answer is recorded, before anything of it is sent.
    void handleMessage(ctx);
    await waitFor(() => expect(crashing.attempted).toHaveLength(1));
    const answer = crashing.attempted[0]!;
    expect(answer).toMatch(/^Session: agent:work:telegram:dm:100$/m);
    expect(crashing.said).toEqual([]);
    expect(await backend.raw("SELECT state, outcome FROM entries")).toEqual([
      { state: "done", outcome: "command" },
    ]);
    await first.release();

    const next = await backend.open();
    const channel = new AnsweringChannel(false);
    // Nothing to run again: the message's entry was closed with its answer.
    expect(await next.takeOver()).toEqual([]);
    const pending = await next.takeOverReplies();
    expect(pending.map((r) => ({ text: r.text, plain: r.plain, entryId: r.entryId }))).toEqual([
      { text: answer, plain: true, entryId },
    ]);
    await services(next, channel).outbox.resume(pending);
    expect(channel.said).toEqual([answer]);
    expect(statusCalls).toEqual(["profile:work"]);
    expect(await next.takeOverReplies()).toEqual([]);
  });

  it("posted with buttons once recorded: delivered when posted, by steps when declined, marked `sending` while it goes", async () => {
    const journal = await backend.open();
    const channel = new AnsweringChannel(false);
    const outbox = services(journal, channel).outbox;
    const answer = async (receipt: string, text: string) => {
      const { id } = await journal.record(telegramMessage(receipt, "/reset"));
      return outbox.record(
        {
          profile: "work",
          platform: "telegram",
          sessionKey: "agent:work:telegram:dm:100",
          slot: "profile:work",
          target: { platform: "telegram", chatId: "100" },
          text,
          plain: true,
        },
        id,
        [],
        "command",
      );
    };
    const posted = await answer("3", "posted with buttons");
    expect(await outbox.sendOwnWay(posted, async () => "sent")).toBe(true);
    const [closed] = await journal.replies({ id: posted.id });
    expect(closed?.state).toBe("delivered");
    expect([...(closed?.steps ?? [])]).toEqual([["text:0", "sent"]]);

    const declined = await answer("4", "typed: send /reset confirm");
    expect(await outbox.sendOwnWay(declined, async () => "declined")).toBe(false);
    expect((await journal.replies({ id: declined.id }))[0]?.steps.size).toBe(0);
    await outbox.deliver(declined);
    expect(channel.said).toEqual(["typed: send /reset confirm"]);

    // The process dies while the post is on its way: the next start finds the mark, and its
    // delivery treats the text as a step that may have been sent (the ambiguity rule).
    const cutOff = await answer("5", "cut off mid-post");
    void outbox.sendOwnWay(cutOff, () => new Promise(() => {}));
    await waitFor(async () =>
      expect((await journal.replies({ id: cutOff.id }))[0]?.steps.get("text:0")).toBe("sending"),
    );
    await journal.release();
    const next = await backend.open();
    const [resumed, ...others] = await next.takeOverReplies();
    expect(others).toEqual([]);
    expect(resumed).toMatchObject({ id: cutOff.id, text: "cut off mid-post", plain: true });
    expect([...(resumed?.steps ?? [])]).toEqual([["text:0", "sending"]]);
  });

  it("is sent as written: a MEDIA: line in it names no file and no format applies", async () => {
    const journal = await backend.open();
    const channel = new AnsweringChannel(false);
    const outbox = services(journal, channel).outbox;
    const { id } = await journal.record(telegramMessage("2", "/tasks"));
    const text = "Your tasks:\n- a1 every day: MEDIA:/etc/passwd *now*";
    const record = await outbox.record(
      {
        profile: "work",
        platform: "telegram",
        sessionKey: "agent:work:telegram:dm:100",
        slot: "profile:work",
        target: { platform: "telegram", chatId: "100" },
        text,
        plain: true,
      },
      id,
      [],
      "command",
    );
    let format: string | undefined;
    const deliver = channel.deliver.bind(channel);
    channel.deliver = async (reply, options) => {
      format = reply.format;
      expect(reply.plan.ready()).toEqual([]);
      return deliver(reply, options);
    };
    expect((await outbox.deliver(record)).result).toBe("delivered");
    expect(channel.said).toEqual([text]);
    expect(format).toBe("verbatim");
  });

  it("goes to a slash command in place when its buttons could not be posted in the chat", async () => {
    // Discord: the bot may answer an interaction in a channel where it may not post (50013);
    // the chat would not get the answer, and the command would be told it is not allowed.
    const journal = await backend.open();
    const channel = new AnsweringChannel(false);
    const inPlace: string[] = [];
    Object.assign(channel, {
      answersInPlace: () => true,
      sendText: async (_target: ChatTarget, text: string) => {
        inPlace.push(text);
      },
    });
    const message = { ...telegramMessage("6", "/reset"), profile: "work" };
    const { id: entryId } = await journal.record(message);
    const ctx: MessageContext = {
      message,
      channel,
      runtime: runtime([]),
      services: services(journal, channel),
      target: { platform: "telegram", chatId: message.chatId, replyToMessageId: "interaction:1" },
      entryId,
      log: silentLogger(),
    };
    const answer = new CommandAnswer();
    answer.offer("Reset the shared sandbox? Send /reset confirm", async () => false);
    await answerAndFinish(ctx, "command", answer);
    expect(inPlace).toEqual(["Reset the shared sandbox? Send /reset confirm"]);
    expect(channel.attempted).toEqual([]);
    const [reply] = await journal.replies({ entryId });
    expect(reply?.state).toBe("delivered");
  });
});
