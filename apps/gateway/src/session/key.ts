import type { ChatType, Platform } from "../channels/types.js";
import { Defaults } from "../defaults.js";

/** The parts of a message a session key is built from. */
export interface SessionKeyParts {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatType: ChatType;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  readonly userId: string;
}

/** Per-profile keying policy (docs/sessions.md). */
export interface SessionKeyPolicy {
  /** Groups without a thread: one session per member. Default true. */
  readonly groupSessionsPerUser: boolean;
  /** Threads/topics: one session per member instead of one shared by the thread. Default false. */
  readonly threadSessionsPerUser: boolean;
}

/** Default keying policy. */
export const SessionKeyDefaults = Defaults.sessions satisfies SessionKeyPolicy;

/** What a session key says, read back by {@link parseSessionKey}. */
export interface ParsedSessionKey {
  readonly profile: string;
  readonly platform: string;
  readonly chatType: string;
  readonly chatId: string;
  /** Set when the key names a thread/topic. */
  readonly threadId?: string;
  /** Set when the key is per user (a member of a group, or of a thread). */
  readonly userId?: string;
}

const Prefix = "agent";
const ThreadTag = "thread";
const UserTag = "user";

/**
 * Escapes one part so it holds no `:` (the separator): `%` → `%25`, `:` → `%3A`. An id
 * containing `:` therefore cannot add parts (forge a `thread:`/`user:` part or another chat).
 * Ids without `%` or `:` (every Telegram, Discord and console id) are unchanged.
 */
function escapePart(part: string): string {
  return part.replaceAll("%", "%25").replaceAll(":", "%3A");
}

function unescapePart(part: string): string | undefined {
  if (/%(?!25|3A)/.test(part)) return undefined;
  return part.replaceAll("%3A", ":").replaceAll("%25", "%");
}

/**
 * Builds the deterministic session key; every part is named, so no two different (chat,
 * thread, user) combinations give one key:
 * `agent:<profile>:<platform>:<chat_type>:<chat_id>[:thread:<thread_id>][:user:<user_id>]`.
 * Each value is escaped (`%` → `%25`, `:` → `%3A`), so an id holding `:` cannot forge parts.
 *
 * - `dm`: the chat is the user; no user part. A DM without a thread keeps the key of earlier
 *   versions byte for byte (`agent:<profile>:<platform>:dm:<chat_id>`).
 * - `group` without a thread: the user part when `groupSessionsPerUser`.
 * - any chat with a thread/topic: the thread part, plus the user part when
 *   `threadSessionsPerUser` (not in a DM).
 * - `channel` (broadcast channels, whose posts have no real author) without a thread: shared,
 *   no user part.
 */
export function buildSessionKey(
  parts: SessionKeyParts,
  policy: SessionKeyPolicy = SessionKeyDefaults,
): string {
  const segments = [Prefix, parts.profile, parts.platform, parts.chatType, parts.chatId].map(
    escapePart,
  );
  const thread = parts.threadId !== undefined && parts.threadId !== "" ? parts.threadId : undefined;
  let perUser: boolean;
  if (thread !== undefined) {
    segments.push(ThreadTag, escapePart(thread));
    perUser = parts.chatType !== "dm" && policy.threadSessionsPerUser;
  } else {
    perUser = parts.chatType === "group" && policy.groupSessionsPerUser;
  }
  if (perUser) segments.push(UserTag, escapePart(parts.userId));
  return segments.join(":");
}

/**
 * Reads a key {@link buildSessionKey} made; `undefined` for anything else (a key of the
 * format before parts were named is not read: see {@link upgradeLegacySessionKey}).
 */
export function parseSessionKey(key: string): ParsedSessionKey | undefined {
  const raw = key.split(":");
  if (raw[0] !== Prefix || raw.length < 5) return undefined;
  const parts = raw.map(unescapePart);
  if (parts.some((part) => part === undefined)) return undefined;
  const [, profile, platform, chatType, chatId, ...rest] = parts as string[];
  if (profile === undefined || platform === undefined || chatType === undefined) return undefined;
  if (chatId === undefined) return undefined;
  const base = { profile, platform, chatType, chatId };
  const tagged = new Map<string, string>();
  const order: string[] = [];
  for (let i = 0; i < rest.length; i += 2) {
    const tag = rest[i];
    const value = rest[i + 1];
    if (value === undefined || (tag !== ThreadTag && tag !== UserTag) || tagged.has(tag)) {
      return undefined;
    }
    tagged.set(tag, value);
    order.push(tag);
  }
  if (order.length === 2 && order[0] !== ThreadTag) return undefined;
  const threadId = tagged.get(ThreadTag);
  const userId = tagged.get(UserTag);
  return {
    ...base,
    ...(threadId === undefined ? {} : { threadId }),
    ...(userId === undefined ? {} : { userId }),
  };
}

/**
 * The key a session had in the format before parts were named
 * (`agent:<profile>:<platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>]`), written in
 * today's format when it can be read one way only; `undefined` when it cannot:
 * - no extra part: the same key (a DM, a shared group, a channel);
 * - one extra part in a `dm` or `channel`: a thread (those chats never had a user part);
 * - two extra parts: a thread and a user (only threads with `threadSessionsPerUser`);
 * - one extra part in a `group`: ambiguous (a topic of a group, or a member of it: the
 *   collision this format fixes), so `undefined`; such sessions start a new conversation.
 */
export function upgradeLegacySessionKey(key: string): string | undefined {
  const parts = key.split(":");
  const [prefix, profile, platform, chatType, chatId, ...rest] = parts;
  if (prefix !== Prefix || chatId === undefined || chatType === undefined) return undefined;
  if (profile === undefined || platform === undefined) return undefined;
  if (parts.some((part) => part.length === 0 || part.includes("%"))) return undefined;
  const base = [Prefix, profile, platform, chatType, chatId];
  if (rest.length === 0) return key;
  if (rest.length === 1 && (chatType === "dm" || chatType === "channel")) {
    return [...base, ThreadTag, rest[0]].join(":");
  }
  if (rest.length === 2 && chatType !== "dm") {
    return [...base, ThreadTag, rest[0], UserTag, rest[1]].join(":");
  }
  return undefined;
}
