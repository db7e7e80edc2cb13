import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, mkdir, open, unlink } from "node:fs/promises";
import path from "node:path";
import { DescriptorFile, errnoCode } from "./open-file.js";
import type { ContainerFileSource } from "./types.js";

/** Open read-write, create, fail if it exists, never through a symlink; owner-only. */
const SPOOL_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** What the container fallback produced. */
export type SpoolResult =
  | { readonly result: "ok"; readonly file: DescriptorFile }
  | { readonly result: "missing" }
  | { readonly result: "link"; readonly target: string }
  | { readonly result: "too_large"; readonly size: number }
  | { readonly result: "error"; readonly detail: string };

/**
 * Copy `containerPath` out of the live container into a descriptor-backed spool file.
 *
 * The spool is created in `tmpDir` (made, mode 0700, if missing) with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 under a random
 * name, and unlinked right after opening: nothing else can open it, nothing is left on disk
 * whatever happens next, and the upload reads it through the descriptor like a host file.
 * The stream is copied with a running byte count and abandoned (destroyed) as soon as it
 * passes `maxBytes`.
 */
export async function spoolFromContainer(
  source: ContainerFileSource,
  containerPath: string,
  maxBytes: number,
  tmpDir: string,
): Promise<SpoolResult> {
  let found: Awaited<ReturnType<ContainerFileSource["read"]>>;
  try {
    found = await source.read(containerPath, maxBytes);
  } catch (error) {
    return { result: "error", detail: error instanceof Error ? error.message : String(error) };
  }
  if (!found) return { result: "missing" };
  if ("linkTarget" in found) return { result: "link", target: found.linkTarget };
  if (found.size > maxBytes) {
    destroy(found.stream);
    return { result: "too_large", size: found.size };
  }
  let handle: FileHandle;
  try {
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const spool = path.join(tmpDir, `mediagate-spool-${randomUUID()}`);
    handle = await open(spool, SPOOL_FLAGS, 0o600);
    await unlink(spool);
  } catch (error) {
    destroy(found.stream);
    return { result: "error", detail: errnoCode(error) };
  }
  try {
    let written = 0;
    for await (const chunk of found.stream) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      if (written + bytes.length > maxBytes) {
        await handle.close();
        return { result: "too_large", size: written + bytes.length };
      }
      await handle.write(bytes, 0, bytes.length, written);
      written += bytes.length;
    }
    const stats = await handle.stat();
    return { result: "ok", file: new DescriptorFile(handle, written, `${stats.dev}:${stats.ino}`) };
  } catch (error) {
    await handle.close();
    return { result: "error", detail: error instanceof Error ? error.message : String(error) };
  }
}

function destroy(stream: NodeJS.ReadableStream): void {
  if ("destroy" in stream && typeof stream.destroy === "function") stream.destroy();
}
