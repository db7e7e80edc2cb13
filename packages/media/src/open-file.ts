import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readlink, realpath } from "node:fs/promises";
import { Readable } from "node:stream";
import { BufferRing, isErrorCode, readChunks } from "@mediagate/io";
import { mayRead, NotReadable } from "./access.js";
import { isWithin } from "./paths.js";
import type { DeliveryPolicy } from "./policy.js";
import type { CandidateResult, FileReader, OpenedFile } from "./types.js";

/** The buffers {@link DescriptorFile.chunks} reads into, in turn. */
export const ChunkRing = {
  /** Bytes of one read: above a socket's write high-water mark (16 KiB, 64 KiB from Node 22). */
  chunkBytes: 128 * 1024,
  buffers: 4,
} as const;

/** Read-only, never through a final symlink, never blocking on a FIFO. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** A file held through its descriptor. */
export class DescriptorFile implements OpenedFile {
  private closed: Promise<void> | undefined;

  /**
   * @param size bytes to serve: the size checked against the limits. A file that grows after
   *   the check is still served only up to it.
   * @param identity `dev:ino` of the open file, to spot two tags naming one file.
   */
  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    readonly identity: string,
  ) {}

  stream(): Readable {
    if (this.size === 0) return Readable.from([]);
    return this.handle.createReadStream({ start: 0, end: this.size - 1, autoClose: false });
  }

  /**
   * The first `size` bytes, read by position into {@link ChunkRing.buffers} buffers reused in
   * turn (`BufferRing`, whose comment has the measurements); each chunk is a view of one, valid
   * until `ChunkRing.buffers - 1` more were asked for. An upload writes each chunk to its
   * socket, and a write of a chunk above the socket's high-water mark holds the next read back
   * until it was flushed ('drain'), so at most one or two chunks are in flight; the ring leaves
   * room for more. Not for a consumer that keeps chunks (use {@link stream}).
   */
  async *chunks(): AsyncGenerator<Uint8Array> {
    const ring = new BufferRing({ buffers: ChunkRing.buffers, bufferBytes: ChunkRing.chunkBytes });
    yield* readChunks(this.handle, { ring, start: 0, size: this.size });
  }

  async read(): Promise<Buffer> {
    return this.readAt(0, this.size);
  }

  /** Up to `length` bytes from `position`, by positional reads (the file offset is unused). */
  async readAt(position: number, length: number): Promise<Buffer> {
    const buffer = Buffer.alloc(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await this.handle.read(
        buffer,
        filled,
        length - filled,
        position + filled,
      );
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  }

  close(): Promise<void> {
    this.closed ??= this.handle.close();
    return this.closed;
  }
}

/** Result of opening one candidate. */
export type OpenResult =
  | { readonly result: "ok"; readonly file: DescriptorFile; readonly realPath: string }
  | {
      readonly result: Exclude<CandidateResult, "ok">;
      readonly realPath?: string | undefined;
      readonly detail?: string | undefined;
    };

/** Test seam: runs between the checks on the real path and the open. */
export interface OpenHooks {
  beforeOpen?(realPath: string): Promise<void>;
}

/**
 * Open `candidate` for upload if its real path is a regular file inside `root` (a real path)
 * that the policy allows. The descriptor is opened with O_NOFOLLOW on the checked real path,
 * then verified through the descriptor itself: `fstat` must show a regular file, and the
 * kernel's name for the descriptor (`/proc/self/fd/N`, or a dev/ino match with the checked
 * path where /proc is absent) must still be inside `root` and allowed. A file or directory
 * swapped for a symlink after the checks is refused, and once open, swapping the path changes
 * nothing that is read.
 */
export async function openInsideRoot(
  candidate: string,
  root: string,
  policy: DeliveryPolicy,
  hooks: OpenHooks = {},
): Promise<OpenResult> {
  let realPath: string;
  try {
    realPath = await realpath(candidate);
  } catch (error) {
    const code = errnoCode(error);
    return { result: code === "ENOENT" || code === "ENOTDIR" ? "missing" : "error", detail: code };
  }
  if (!isWithin(realPath, root)) return { result: "escapes_root", realPath };
  const reason = policy.check(realPath);
  if (reason) return { result: "denied", realPath, detail: reason };
  await hooks.beforeOpen?.(realPath);
  return openChecked(realPath, realPath, root, policy);
}

/**
 * Open `at` for upload without following a final symlink and check it through the descriptor
 * (see {@link openInsideRoot}): `at` is the checked `realPath` itself, or one name under a held
 * directory (`/proc/self/fd/<dir>/<name>`). With `reader`, the file's owner, group and mode
 * must also let that user read it; otherwise it is `denied` as {@link NotReadable}.
 */
export async function openChecked(
  at: string,
  realPath: string,
  root: string,
  policy: DeliveryPolicy,
  reader?: FileReader,
): Promise<OpenResult> {
  let handle: FileHandle;
  try {
    handle = await open(at, OPEN_FLAGS);
  } catch (error) {
    const code = errnoCode(error);
    // ELOOP: the final component became a symlink after the check.
    return { result: code === "ELOOP" ? "escapes_root" : "error", realPath, detail: code };
  }
  const verdict = await verifyDescriptor(handle, realPath, root, policy);
  if (verdict.result !== "ok") {
    await handle.close();
    return { ...verdict, realPath };
  }
  if (reader !== undefined && !mayRead(verdict.stats, reader)) {
    await handle.close();
    return { result: "denied", realPath, detail: NotReadable };
  }
  return {
    result: "ok",
    file: new DescriptorFile(
      handle,
      verdict.stats.size,
      `${verdict.stats.dev}:${verdict.stats.ino}`,
    ),
    realPath,
  };
}

type Verdict =
  | { readonly result: "ok"; readonly stats: Stats }
  | {
      readonly result: "not_regular" | "escapes_root" | "denied" | "error";
      readonly detail?: string;
    };

async function verifyDescriptor(
  handle: FileHandle,
  realPath: string,
  root: string,
  policy: DeliveryPolicy,
): Promise<Verdict> {
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { result: "not_regular" };
    const opened = await descriptorPath(handle.fd);
    if (opened !== undefined) {
      if (!isWithin(opened, root)) return { result: "escapes_root", detail: opened };
      const reason = policy.check(opened);
      if (reason) return { result: "denied", detail: reason };
    } else {
      const checked = await lstat(realPath);
      if (checked.dev !== stats.dev || checked.ino !== stats.ino) {
        return { result: "escapes_root", detail: "swapped" };
      }
    }
    return { result: "ok", stats };
  } catch (error) {
    return { result: "error", detail: errnoCode(error) };
  }
}

/** The kernel's current path of a descriptor (Linux `/proc`), if it can tell. */
async function descriptorPath(fd: number): Promise<string | undefined> {
  try {
    const target = await readlink(`/proc/self/fd/${fd}`);
    return target.startsWith("/") && !target.endsWith(" (deleted)") ? target : undefined;
  } catch {
    return undefined;
  }
}

/** The errno code of a Node fs error, or `"UNKNOWN"` (also for a mediagate error's `MG_` code). */
export function errnoCode(error: unknown): string {
  if (error instanceof Error && "code" in error && typeof error.code === "string")
    return isErrorCode(error.code) ? "UNKNOWN" : error.code;
  return "UNKNOWN";
}
