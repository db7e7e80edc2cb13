import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UploadLimits } from "@mediagate/media";
import { afterEach, describe, expect, it } from "vitest";
import { testEnvironment } from "../../../test-support/engine.js";
import { waitUntil } from "../../../test-support/wait.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
} from "./channels/types.js";
import { readEnv } from "./config/env.js";
import { resolveConfig } from "./config/load.js";
import { PartlyRecordedError } from "./durable/errors.js";
import { Gateway, type GatewayOptions } from "./gateway.js";

/** A direct message from Telegram user 1 to `profile`. */
function dmFromUser1(profile: string, messageId: string, text: string): InboundMessage {
  return {
    profile,
    platform: "telegram",
    chatId: "1",
    chatType: "dm",
    userId: "1",
    messageId,
    text,
    receiptId: messageId,
  };
}

class Inbox implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly limits: UploadLimits = { maxBytes: () => 1 };
  readonly texts: string[] = [];
  started = 0;
  stopped = 0;
  constructor(readonly profile = "main") {}
  onMessage: ChannelStartOptions["onMessage"] | undefined;
  recorded: ChannelStartOptions["recorded"];
  async start({ onMessage, recorded }: ChannelStartOptions): Promise<void> {
    this.started++;
    this.onMessage = onMessage;
    this.recorded = recorded;
  }
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  async stop(): Promise<void> {
    this.stopped++;
  }
  async sendText(_t: ChatTarget, text: string): Promise<void> {
    this.texts.push(text);
  }
  /** A delivered reply (a command's answer comes from the outbox too) is a text of the chat. */
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    this.texts.push(reply.text);
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {}
}

describe("Gateway", () => {
  const homes: string[] = [];
  afterEach(async () => {
    for (const home of homes.splice(0)) await rm(home, { recursive: true, force: true });
  });

  async function gatewayFor(
    profiles: unknown[],
    channel: Inbox,
    options: Omit<GatewayOptions, "channels"> = {},
  ) {
    const home = await mkdtemp(join(tmpdir(), "mg-gateway-"));
    homes.push(home);
    const config = resolveConfig({ home, profiles }, { env: readEnv(testEnvironment(home)) });
    return Gateway.create(config, { ...options, channels: [channel] });
  }

  it("warns at start-up about each profile with a channel where nobody is allowed", async () => {
    const gateway = await gatewayFor(
      [
        { name: "open", telegram: { token: "1:a" } },
        { name: "ok", telegram: { token: "2:b" }, allowedUsers: ["telegram:5"] },
        { name: "paired", telegram: { token: "3:c" }, access: "pairing" },
      ],
      new Inbox(),
    );
    expect(gateway.warnings).toEqual([
      "profile open: nobody is allowed (allowedUsers and admins are empty); every message will be ignored",
      "profile paired: no admins and no allowedUsers: only users approved with `mediagate pairing approve CODE` may use it",
    ]);
    await gateway.stop();
  });

  it("starts and stops its channels once, and ignores messages once stopping", async () => {
    const inbox = new Inbox();
    const gateway = await gatewayFor([{ name: "solo", allowedUsers: ["telegram:1"] }], inbox);
    await gateway.start();
    await Promise.all([gateway.stop(), gateway.stop()]);
    expect([inbox.started, inbox.stopped]).toEqual([1, 1]);
    inbox.onMessage?.(dmFromUser1("solo", "1", "/status"));
    await gateway.idle();
    expect(inbox.texts).toEqual([]);
  });

  it("ignores a message for a profile it does not serve", async () => {
    const inbox = new Inbox("solo");
    const gateway = await gatewayFor([{ name: "solo", allowedUsers: ["telegram:1"] }], inbox);
    await gateway.start();
    inbox.onMessage?.(dmFromUser1("other", "1", "/status"));
    await gateway.idle();
    expect(inbox.texts).toEqual([]);
    inbox.onMessage?.(dmFromUser1("solo", "2", "/status"));
    await gateway.idle();
    expect(inbox.texts).toEqual(["⛔ /status is for admins only; nothing was done."]);
    await gateway.stop();
  });

  it("records a merged message by its receipts; one sharing only some of them is refused unrecorded", async () => {
    const inbox = new Inbox("solo");
    const gateway = await gatewayFor([{ name: "solo", allowedUsers: ["telegram:1"] }], inbox);
    await gateway.start();
    const runs = () => inbox.texts.length;
    await inbox.onMessage?.({ ...dmFromUser1("solo", "10", "/status"), receiptIds: ["10", "11"] });
    await gateway.idle();
    expect(runs()).toBe(1);
    expect(await inbox.recorded?.(["10", "11", "12"])).toEqual(new Set(["10", "11"]));

    // Its second item alone: recorded before, not run again.
    await inbox.onMessage?.(dmFromUser1("solo", "11", "/status"));
    // Its second item with a new one: not recorded (nothing confirmed), not run.
    const refused = await inbox
      .onMessage?.({ ...dmFromUser1("solo", "11", "/status"), receiptIds: ["11", "12"] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PartlyRecordedError);
    expect(refused).toMatchObject({ unrecorded: ["12"] });
    await gateway.idle();
    expect(runs()).toBe(1);
    expect((await gateway.health()).journal.writable).toBe(true);
    // The new item handed on alone runs.
    await inbox.onMessage?.(dmFromUser1("solo", "12", "/status"));
    await gateway.idle();
    expect(runs()).toBe(2);
    await gateway.stop();
  });

  it("records a message handed on after another at once, and runs it only once that one was handed on", async () => {
    const inbox = new Inbox("solo");
    const gateway = await gatewayFor([{ name: "solo", allowedUsers: ["telegram:1"] }], inbox);
    await gateway.start();
    let handOn: (handed: boolean) => void = () => {};
    const ahead = new Promise<boolean>((resolve) => {
      handOn = resolve;
    });
    let done = false;
    const receiving = inbox
      .onMessage?.(dmFromUser1("solo", "20", "/status"), { after: ahead })
      .then(() => {
        done = true;
      });
    await waitUntil(
      async () => (await inbox.recorded?.(["20"]))?.has("20") === true,
      "the message recorded",
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    expect(inbox.texts).toEqual([]);
    handOn(true);
    await receiving;
    await gateway.idle();
    expect(inbox.texts).toEqual(["⛔ /status is for admins only; nothing was done."]);

    // The one ahead never handed on in this process: recorded, not run, and the next start
    // runs it.
    await inbox.onMessage?.(dmFromUser1("solo", "21", "/status"), {
      after: Promise.resolve(false),
    });
    await gateway.idle();
    expect(await inbox.recorded?.(["21"])).toEqual(new Set(["21"]));
    expect(inbox.texts).toHaveLength(1);
    await gateway.stop();
    const next = new Inbox("solo");
    const again = await Gateway.create(gateway.config, { channels: [next] });
    await again.start();
    await again.idle();
    expect(next.texts).toEqual(["⛔ /status is for admins only; nothing was done."]);
    await again.stop();
  });

  it("stop() lets a running turn drain, then aborts it once the drain bound passes", async () => {
    const inbox = new Inbox();
    const aborted: unknown[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const gateway = await gatewayFor([{ name: "solo", allowedUsers: ["telegram:1"] }], inbox, {
      drainTimeoutMs: 50,
      agent: () => ({
        kind: "shell",
        runTurn: (input) =>
          new Promise((_resolve, reject) => {
            started();
            input.signal.addEventListener("abort", () => {
              aborted.push(input.signal.reason);
              reject(new Error("aborted"));
            });
          }),
      }),
    });
    await gateway.start();
    inbox.onMessage?.(dmFromUser1("solo", "1", "never ends"));
    await running;
    await gateway.stop();
    expect(aborted).toHaveLength(1);
    expect(inbox.texts).toEqual([]);
    await gateway.idle();
  });
});
