import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { deflateSync } from "node:zlib";
import {
  DescriptorFile,
  type MediaKind,
  type MediaPlan,
  type OpenedFile,
  type ReadyMedia,
} from "@mediagate/media";
import { type Logger, pino } from "pino";

/** A scratch directory, removed by the returned cleanup. */
export async function scratchDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "mediagate-tg-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Writes `bytes` to `dir/name` and holds it open as packages/media does (its own
 * `DescriptorFile`): every `stream()` or `chunks()` reads from byte 0 of the same descriptor.
 */
export async function openTempFile(dir: string, name: string, bytes: Buffer): Promise<OpenedFile> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const handle = await open(path, "r");
  const { dev, ino } = await handle.stat();
  return new DescriptorFile(handle, bytes.length, `${dev}:${ino}`);
}

/** A ready plan item for a real temp file. */
export async function readyItem(
  dir: string,
  kind: MediaKind,
  filename: string,
  bytes: Buffer,
): Promise<ReadyMedia> {
  const file = await openTempFile(dir, filename, bytes);
  return {
    status: "ready",
    path: `/workspace/${filename}`,
    kind,
    filename: basename(filename),
    mime: "application/octet-stream",
    size: bytes.length,
    file,
    candidates: [],
  };
}

/** A MediaPlan holding exactly these ready items. */
export function planOf(text: string, items: readonly ReadyMedia[]): MediaPlan {
  return {
    text,
    asVoice: false,
    asDocument: false,
    outcomes: items,
    ready: () => [...items],
    dispose: async () => {
      await Promise.all(items.map((item) => item.file.close()));
    },
  };
}

/** A 1×1 RGB PNG, valid enough for magic-byte classification. */
export function tinyPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (data: Buffer): number => {
    let c = 0xffffffff;
    for (const byte of data) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer): Buffer => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.from([0, 255, 0, 0]))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A plain pino logger (no redaction of its own) writing JSON lines into memory. */
export function captureLogs(): { logger: Logger; lines: string[]; text: () => string } {
  const lines: string[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(line) });
  return { logger, lines, text: () => lines.join("") };
}
