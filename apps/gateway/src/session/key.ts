import type { ChatType, Platform } from "../channels/types.js";

/** The parts of a message a session key is built from. */
export interface SessionKeyParts {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatType: ChatType;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  readonly userId: string;
}

/** Per-profile keying policy (SPEC §3). */
export interface SessionKeyPolicy {
  /** Groups without a thread: one session per member. Default true. */
  readonly groupSessionsPerUser: boolean;
  /** Threads/topics: one session per member instead of one shared by the thread. Default false. */
  readonly threadSessionsPerUser: boolean;
}

/** Default keying policy. */
export const SessionKeyDefaults = {
  groupSessionsPerUser: true,
  threadSessionsPerUser: false,
} as const satisfies SessionKeyPolicy;

/**
 * Builds the deterministic session key
 * `agent:<profile>:<platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>]`.
 *
 * - `dm`: the chat is the user; no user part.
 * - `group` without a thread: the user part when `groupSessionsPerUser`.
 * - any chat with a thread/topic: the thread part, plus the user part when
 *   `threadSessionsPerUser`.
 * - `channel` (broadcast channels, whose posts have no real author) without a thread: shared,
 *   no user part.
 */
export function buildSessionKey(
  parts: SessionKeyParts,
  policy: SessionKeyPolicy = SessionKeyDefaults,
): string {
  const segments = ["agent", parts.profile, parts.platform, parts.chatType, parts.chatId];
  const thread = parts.threadId !== undefined && parts.threadId !== "" ? parts.threadId : undefined;
  let perUser: boolean;
  if (thread !== undefined) {
    segments.push(thread);
    perUser = parts.chatType !== "dm" && policy.threadSessionsPerUser;
  } else {
    perUser = parts.chatType === "group" && policy.groupSessionsPerUser;
  }
  if (perUser) segments.push(parts.userId);
  return segments.join(":");
}
