import type { ChatType, Platform } from "../channels/types.js";

/**
 * Who a turn belongs to: bound to the message's pipeline context (`ctx.session`) when it
 * arrives and carried from there by value, to the agent's turn input, its tool calls and its
 * reply's record (docs/sessions.md, "Turns").
 */
export interface SessionContext {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatId: string;
  readonly chatType: ChatType;
  readonly chatName?: string | undefined;
  readonly threadId?: string | undefined;
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly messageId: string;
  readonly sessionKey: string;
  /** Changes on /reset; conversation history is keyed by it. */
  readonly sessionId: string;
}
