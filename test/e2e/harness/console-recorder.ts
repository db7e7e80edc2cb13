import { randomUUID } from "node:crypto";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
} from "@mediagate/gateway";
import type { UploadLimits } from "@mediagate/media";

/** What a chat is told when its sandbox went away mid-command (`SandboxLostError`). */
export const SandboxLostNotice =
  "⚠️ The sandbox stopped while running that command (its container was removed or Docker went away). Send the message again to start a fresh one.";

/**
 * A console channel that records every text and reply text the chat is told, in order, and
 * injects messages as the one local user (the gateway's own interface, no platform fake).
 */
export class ConsoleRecorder implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly limits: UploadLimits = { maxBytes: () => 1024 * 1024 };
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
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    this.texts.push(reply.text);
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {}
  health(): ChannelHealth {
    return { platform: this.platform, profile: this.profile, state: "up", sinceMs: 0 };
  }
  send(text: string): void {
    void this.#onMessage?.({
      profile: this.profile,
      platform: "console",
      chatId: "local",
      chatType: "dm",
      userId: "local",
      messageId: randomUUID(),
      text,
      receiptId: randomUUID(),
    });
  }
}
