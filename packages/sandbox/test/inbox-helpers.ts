import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { InboxKind, InboxResult, InboxSaved, Sandbox } from "../src/index.js";

export const MiB = 1024 * 1024;

/** What the tests' classifier saw: the head it was given, per file name. */
export const seenHeads = new Map<string, number>();

const Png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A stand-in for `@mediagate/media`'s `classify` (which the sandbox must not import): PNG
 * magic bytes make a photo, anything else is a document. Records how many bytes it was shown.
 */
export function classify(head: Uint8Array, filename: string): InboxKind {
  seenHeads.set(filename, head.length);
  return Buffer.from(head.subarray(0, 8)).equals(Png)
    ? { kind: "photo", mime: "image/png" }
    : { kind: "document", mime: "application/octet-stream" };
}

/** `bytes` as a Node stream in 64 KiB chunks. */
export function streamOf(bytes: Buffer): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 64 * 1024)
    chunks.push(bytes.subarray(at, at + 64 * 1024));
  return Readable.from(chunks);
}

/** A random file of `size` bytes, its stream and its SHA-256. */
export function randomFile(size: number): { bytes: Buffer; sha256: string } {
  const bytes = randomBytes(size);
  return { bytes, sha256: createHash("sha256").update(bytes).digest("hex") };
}

/** A PNG-looking file: the magic bytes, then random bytes. */
export function pngFile(size: number): Buffer {
  return Buffer.concat([Png, randomBytes(size - Png.length)]);
}

/** A stream that gives `before` bytes, then fails. */
export function failingStream(before: number): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(randomBytes(before));
        return;
      }
      this.destroy(new Error("connection reset by peer"));
    },
  });
}

export function saved(result: InboxResult | undefined): InboxSaved {
  if (result?.status !== "saved") throw new Error(`not saved: ${JSON.stringify(result)}`);
  return result;
}

/** `ls -A` of a container directory, as the session sees it (`[]` when it is missing). */
export async function listIn(
  sandbox: Sandbox,
  slot: string,
  session: string,
  dir: string,
): Promise<string[]> {
  const out = await sandbox.run(slot, session, `ls -A ${dir} 2>/dev/null`);
  return out.stdout.split("\n").filter(Boolean).sort();
}
