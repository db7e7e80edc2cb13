import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelAdapter,
  type ChannelHealth,
  type ChannelStartOptions,
  type ChatTarget,
  type DeliveryReport,
  emptyEnv,
  Gateway,
  type InboundMessage,
  type OutboundReply,
  resolveConfig,
} from "@mediagate/gateway";
import type { UploadLimits } from "@mediagate/media";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Records texts and replies; injects console messages (the gateway's own interface). */
class Recorder implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly limits: UploadLimits = { maxBytes: () => 1024 };
  readonly texts: string[] = [];
  #onMessage: ((m: InboundMessage) => Promise<void>) | undefined;
  constructor(readonly profile: string) {}
  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    this.#onMessage = onMessage;
  }
  async stop(): Promise<void> {}
  async sendText(_t: ChatTarget, text: string): Promise<void> {
    this.texts.push(text);
  }
  /** The gateway's notices are recorded with their message's close and delivered as replies. */
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    this.texts.push(reply.text);
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {}
  health(): ChannelHealth {
    return { platform: this.platform, profile: this.profile, state: "up", sinceMs: 0 };
  }
  send(text: string): void {
    this.#onMessage?.({
      profile: this.profile,
      platform: "console",
      chatId: "local",
      chatType: "dm",
      userId: "local",
      messageId: String(this.texts.length),
      text,
      receiptId: randomUUID(),
    });
  }
}

describe("gateway with an unreachable Docker daemon", () => {
  const profile = `e2e-down-${randomBytes(4).toString("hex")}`;
  let home = "";
  let gateway: Gateway | undefined;
  let channel: Recorder;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "mediagate-down-"));
    const env = { ...emptyEnv(home), dockerHost: `unix://${join(home, "no-docker.sock")}` };
    const config = resolveConfig(
      {
        home,
        profiles: [
          { name: profile, sandbox: { image: "mediagate-sandbox:test", diskLimitBytes: 0 } },
        ],
      },
      { env },
    );
    channel = new Recorder(profile);
    gateway = await Gateway.create(config, { channels: [channel] });
    await gateway.start();
  });

  afterAll(async () => {
    await gateway?.stop();
    await rm(home, { recursive: true, force: true });
  });

  it("tells the chat in one line that the sandbox is unavailable, and keeps serving", async () => {
    channel.send("echo hello");
    await gateway!.idle();
    expect(channel.texts).toEqual([
      "⚠️ The sandbox is unavailable right now (Docker cannot be reached). Please try again later.",
    ]);
    channel.send("/status");
    await gateway!.idle();
    expect(channel.texts[1]).toContain("Container: unknown (Docker cannot be reached)");
    channel.send("echo again");
    await gateway!.idle();
    expect(channel.texts[2]).toBe(channel.texts[0]);
  });
});
