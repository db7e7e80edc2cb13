import { constants } from "node:fs";
import { type FileHandle, open, readlink } from "node:fs/promises";
import type { ContainerFileReader, TurnAttachment } from "./types.js";

/** A saved attachment's bytes, opened: its size now and a stream of them. */
export interface OpenedAttachment {
  readonly size: number;
  readonly stream: AsyncIterable<Uint8Array>;
}

/** Why an attachment's bytes were not opened. */
export type UnopenedAttachment =
  | { readonly problem: "too_large"; readonly size: number }
  | { readonly problem: "unreadable" };

/**
 * Opens a file the user sent, as saved in the session's inbox, for the agent's own use (image
 * inputs, transcription), reading at most `maxBytes`: from the host when the slot is bind-mounted
 * (`hostPath`), else from the container through `readContainer`. The host file is read only when
 * the descriptor opened is the path the inbox wrote, no link anywhere on the way: the sandbox can
 * write into its inbox, and a link it planted must never make the gateway read a host file. A
 * host path that does not qualify (a link, a home reached through a link) is read from the
 * container instead, where it can only reach what the session can.
 */
export async function openAttachment(
  attachment: TurnAttachment,
  maxBytes: number,
  readContainer: ContainerFileReader | undefined,
  signal?: AbortSignal,
): Promise<OpenedAttachment | UnopenedAttachment> {
  if (attachment.size > maxBytes) return { problem: "too_large", size: attachment.size };
  const host = attachment.hostPath === undefined ? undefined : await openExact(attachment.hostPath);
  if (host !== undefined) {
    const size = (await host.stat()).size;
    if (size > maxBytes) {
      await host.close();
      return { problem: "too_large", size };
    }
    return { size, stream: host.createReadStream({ ...(signal ? { signal } : {}) }) };
  }
  const file = await readContainer?.(attachment.containerPath, maxBytes).catch(() => undefined);
  if (file === undefined) return { problem: "unreadable" };
  if (file.size > maxBytes) {
    await file.stream[Symbol.asyncIterator]().return?.();
    return { problem: "too_large", size: file.size };
  }
  return file;
}

/** `path` opened for reading when the kernel names the opened file exactly `path`, else nothing. */
async function openExact(path: string): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const real = await readlink(`/proc/self/fd/${handle.fd}`);
    if (real === path && (await handle.stat()).isFile()) return handle;
  } catch {
    // no /proc (not Linux): the container read is the safe way
  }
  await handle.close();
  return undefined;
}

/**
 * All of an opened attachment's bytes, in memory; `undefined` when there are more than
 * `maxBytes` (a file that grew after it was opened), the rest unread.
 */
export async function readAll(
  opened: OpenedAttachment,
  maxBytes: number,
): Promise<Buffer | undefined> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of opened.stream) {
    total += chunk.length;
    if (total > maxBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
