import { createHash, randomBytes } from "node:crypto";
import type { ReadyMedia } from "@mediagate/media";
import { type RawFile, type REST, Routes } from "discord.js";

/** A file made in memory (a long reply's `reply.txt`), attached like a planned one. */
export interface MemoryFile {
  readonly filename: string;
  readonly mime: string;
  readonly bytes: Buffer;
}

/** One message to create: text, attachments, or both. */
export interface MessageDraft {
  readonly content?: string | undefined;
  readonly files?: readonly ReadyMedia[] | undefined;
  /** Attached after `files`. */
  readonly memoryFiles?: readonly MemoryFile[] | undefined;
  /** Makes the message a reply; a deleted original does not fail the send. */
  readonly replyTo?: string | undefined;
}

/**
 * A nonce for `enforce_nonce`: 16 url-safe characters (Discord allows 25). One per message,
 * reused by every attempt to create it.
 */
export function newNonce(): string {
  return randomBytes(12).toString("base64url");
}

/** Discord's longest nonce. */
const MaxNonceLength = 25;

/**
 * The nonce of one step of a reply: the same reply id and step key always give the same 25
 * url-safe characters (SHA-256, base64url, cut to Discord's limit). A create repeated by a
 * restarted process therefore carries the nonce of the first attempt, and Discord answers it
 * with the message already created (within its nonce window, a few minutes).
 */
export function stepNonce(replyId: string, stepKey: string): string {
  return createHash("sha256")
    .update(`${replyId}\n${stepKey}`)
    .digest("base64url")
    .slice(0, MaxNonceLength);
}

/**
 * One attempt at `POST /channels/:id/messages`. The nonce with `enforce_nonce: true` makes
 * Discord return the already-created message when an attempt is repeated (after a 5xx that
 * happened after the write, a timeout, a dropped connection), so no retry posts twice.
 * Files are read again from byte 0 of their open descriptor on each attempt. Mentions in the
 * text never ping anyone (`allowed_mentions.parse: []`): the agent's output must not be able
 * to reach `@everyone`.
 */
export async function createMessageAttempt(
  rest: REST,
  channelId: string,
  draft: MessageDraft,
  nonce: string,
  signal?: AbortSignal,
): Promise<{ id: string }> {
  const files: RawFile[] = [
    ...(await Promise.all(
      (draft.files ?? []).map(async (item) => ({
        name: item.filename,
        contentType: item.mime,
        data: await item.file.read(),
      })),
    )),
    ...(draft.memoryFiles ?? []).map((file) => ({
      name: file.filename,
      contentType: file.mime,
      data: file.bytes,
    })),
  ];
  const body = {
    ...(draft.content ? { content: draft.content } : {}),
    nonce,
    enforce_nonce: true,
    allowed_mentions: { parse: [], replied_user: false },
    ...(draft.replyTo === undefined
      ? {}
      : { message_reference: { message_id: draft.replyTo, fail_if_not_exists: false } }),
    ...(files.length === 0
      ? {}
      : { attachments: files.map((file, index) => ({ id: index, filename: file.name })) }),
  };
  const created = (await rest.post(Routes.channelMessages(channelId), {
    body,
    files: files.length === 0 ? undefined : files,
    signal,
  })) as { id: string };
  return { id: created.id };
}
