import type { UploadLimits } from "@mediagate/media";
import { afterEach, describe, expect, it, vi } from "vitest";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChatTarget,
  DeliveryReport,
} from "../channels/types.js";
import { startActivity } from "./activity.js";

class CountingChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "main";
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  readonly limits: UploadLimits = { maxBytes: () => 1 };
  typing = 0;
  readonly texts: string[] = [];
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendText(_t: ChatTarget, text: string): Promise<void> {
    this.texts.push(text);
  }
  async deliver(): Promise<DeliveryReport> {
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {
    this.typing++;
  }
}

describe("startActivity", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("shows no typing for a turn that ends before typingAfterMs (default 1 s)", () => {
    vi.useFakeTimers();
    const channel = new CountingChannel();
    const stop = startActivity(channel, { platform: "telegram", chatId: "1" });
    vi.advanceTimersByTime(999);
    expect(channel.typing).toBe(0);
    stop();
    vi.advanceTimersByTime(60_000);
    expect(channel.typing).toBe(0);
  });

  it("renews typing every interval, says still working once after the threshold, and stops", () => {
    vi.useFakeTimers();
    const channel = new CountingChannel();
    const stop = startActivity(
      channel,
      { platform: "telegram", chatId: "1" },
      {
        typingAfterMs: 500,
        intervalMs: 4_000,
        stillWorkingAfterMs: 10_000,
        stillWorkingText: "still working",
      },
    );
    expect(channel.typing).toBe(0);
    vi.advanceTimersByTime(500);
    expect(channel.typing).toBe(1);
    vi.advanceTimersByTime(8_000);
    expect(channel.typing).toBe(3);
    expect(channel.texts).toEqual([]);
    vi.advanceTimersByTime(20_000);
    expect(channel.texts).toEqual(["still working"]);
    stop();
    const typed = channel.typing;
    vi.advanceTimersByTime(60_000);
    expect(channel.typing).toBe(typed);
    expect(channel.texts).toHaveLength(1);
  });
});
