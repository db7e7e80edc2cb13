import type { MediaOutcome, MediaPlan, UploadLimits } from "@mediagate/media";

/** Chat platforms the gateway serves. */
export type Platform = "telegram" | "discord" | "console";

/** docs/sessions.md: how the chat is keyed. Supergroups and guild text channels are `group`. */
export type ChatType = "dm" | "group" | "channel";

/** One message as the core sees it, whatever platform it came from. Ids are strings. */
export interface InboundMessage {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatId: string;
  readonly chatType: ChatType;
  readonly chatName?: string | undefined;
  /** Telegram forum topic id or Discord thread id; threads are their own sessions. */
  readonly threadId?: string | undefined;
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly messageId: string;
  readonly text: string;
}

/** Where a reply goes. Adapters put it back in the same chat (and thread/topic). */
export interface ChatTarget {
  readonly platform: Platform;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  readonly replyToMessageId?: string | undefined;
}

/**
 * A finished turn, ready to deliver. It carries session key and profile explicitly:
 * delivery must never depend on the AsyncLocalStorage context still being bound (docs/sessions.md).
 */
export interface OutboundReply {
  readonly sessionKey: string;
  readonly profile: string;
  readonly target: ChatTarget;
  /** Reply text with delivered tags removed (MediaPlan.text). */
  readonly text: string;
  readonly plan: MediaPlan;
}

/** What happened to one file the plan marked ready, after the upload was attempted. */
export type DeliveryOutcome =
  | { readonly status: "delivered"; readonly path: string; readonly kind: string }
  | { readonly status: "upload_failed"; readonly path: string; readonly error: string }
  | {
      readonly status: "rate_limited";
      readonly path: string;
      readonly retryAfterSeconds: number;
    };

export interface DeliveryReport {
  /** One entry per ready media item of the plan, in plan order. */
  readonly outcomes: readonly DeliveryOutcome[];
}

/**
 * A chat platform. The core calls `start` once with its message handler, and `deliver`
 * with each finished turn; notices for media the plan did not mark ready (unreachable,
 * denied, too large) are composed by the core and sent with `sendText`.
 */
export interface ChannelAdapter {
  readonly platform: Platform;
  /** Upload limits used when planning media for this platform. */
  readonly limits: UploadLimits;
  /**
   * Optional: the exact limits of one chat (e.g. a Discord guild's boosted limit). The core
   * plans with these when present, else with `limits`.
   */
  limitsFor?(target: ChatTarget): UploadLimits;
  /** Begin receiving; resolves once the platform connection is ready. */
  start(onMessage: (message: InboundMessage) => void): Promise<void>;
  /**
   * Stop receiving. Sending (`sendText`, `deliver`, `showActivity`) must keep working after
   * it: the core stops receiving first, then drains the turns already in flight.
   */
  stop(): Promise<void>;
  /** Send plain text, split per the platform's limits. */
  sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void>;
  /** Send reply text and every ready media item of the plan. Never throws for one bad file. */
  deliver(reply: OutboundReply, signal?: AbortSignal): Promise<DeliveryReport>;
  /** Show that the bot is working (typing). Best effort; never throws. */
  showActivity(target: ChatTarget): Promise<void>;
}

export type { MediaOutcome };
