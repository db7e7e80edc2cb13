import type { ChatTarget, InboundMessage } from "../channels/types.js";
import type { StatusRecord } from "./types.js";

/**
 * What both journal backends store and read back the same way (journal-database.ts on SQLite,
 * postgres-journal.ts on PostgreSQL): the dedupe keys, the owner a stop hands work to, and the
 * checks a JSON column passes before it is trusted.
 */

/** The owner of what a gateway left unfinished when it stopped: the next start takes it. */
export const ReleasedOwner = "released";

/** A Discord snowflake: a decimal id that fits in 64 bits. */
export const Snowflake = /^[0-9]{1,20}$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isInboundMessage(value: unknown): value is InboundMessage {
  return (
    isRecord(value) &&
    ["profile", "platform", "chatId", "chatType", "userId", "messageId", "text", "receiptId"].every(
      (field) => typeof value[field] === "string",
    )
  );
}

export function isChatTarget(value: unknown): value is ChatTarget {
  return isRecord(value) && typeof value.platform === "string" && typeof value.chatId === "string";
}

export function isStatusRecord(value: unknown): value is StatusRecord {
  return isRecord(value) && isChatTarget(value.target) && typeof value.messageId === "string";
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function idList(ids: number | readonly number[]): readonly number[] {
  return typeof ids === "number" ? [ids] : ids;
}

/** The dedupe key of a message: `<profile>:<platform>:<receiptId>`. */
export function journalKey(message: InboundMessage): string {
  return receiptKey(message.profile, message.platform, message.receiptId);
}

export function receiptKey(profile: string, platform: string, receiptId: string): string {
  return `${profile}:${platform}:${receiptId}`;
}

/** Every receipt id a message is recorded by: `receiptId` first, then the rest of `receiptIds`. */
export function receiptIdsOf(message: InboundMessage): string[] {
  return [...new Set([message.receiptId, ...(message.receiptIds ?? [])])];
}

/** The rollover ids recorded with an entry; what does not read back is none. */
export function previewIds(text: string | null): string[] {
  const value = text === null ? [] : parseJson(text);
  return Array.isArray(value) ? value.filter((id): id is string => typeof id === "string") : [];
}
