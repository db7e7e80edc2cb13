import path from "node:path";
import { fileTypeFromBuffer } from "file-type";
import { Defaults } from "./defaults.js";
import type { MediaKind } from "./types.js";

/** Bytes read from the start of a file for content sniffing (`Defaults.sniffBytes`). */
export const SNIFF_BYTES = Defaults.sniffBytes;

/** What a file is and how it will be sent. */
export interface Classification {
  readonly kind: MediaKind;
  readonly mime: string;
}

/** Directives of the reply that change the kind. */
export interface KindDirectives {
  readonly asVoice: boolean;
  readonly asDocument: boolean;
}

const PHOTO_MIMES = new Set(["image/jpeg", "image/png", "image/webp"]);
const VIDEO_MIMES = new Set(["video/mp4", "video/quicktime", "video/webm", "video/x-matroska"]);

const BY_EXTENSION: Readonly<Record<string, Classification>> = {
  jpg: { kind: "photo", mime: "image/jpeg" },
  jpeg: { kind: "photo", mime: "image/jpeg" },
  png: { kind: "photo", mime: "image/png" },
  webp: { kind: "photo", mime: "image/webp" },
  gif: { kind: "animation", mime: "image/gif" },
  mp4: { kind: "video", mime: "video/mp4" },
  mov: { kind: "video", mime: "video/quicktime" },
  webm: { kind: "video", mime: "video/webm" },
  mkv: { kind: "video", mime: "video/x-matroska" },
  mp3: { kind: "audio", mime: "audio/mpeg" },
  m4a: { kind: "audio", mime: "audio/mp4" },
  aac: { kind: "audio", mime: "audio/aac" },
  flac: { kind: "audio", mime: "audio/flac" },
  wav: { kind: "audio", mime: "audio/wav" },
  ogg: { kind: "audio", mime: "audio/ogg" },
  oga: { kind: "audio", mime: "audio/ogg" },
  opus: { kind: "audio", mime: "audio/ogg; codecs=opus" },
  txt: { kind: "document", mime: "text/plain" },
  md: { kind: "document", mime: "text/markdown" },
  csv: { kind: "document", mime: "text/csv" },
  json: { kind: "document", mime: "application/json" },
  html: { kind: "document", mime: "text/html" },
  svg: { kind: "document", mime: "image/svg+xml" },
  pdf: { kind: "document", mime: "application/pdf" },
};

/**
 * Classify by content first (file-type's magic-byte sniffing of `head`), by the extension of
 * `filename` only when the content is not recognised. JPEG/PNG/WebP are photos, GIF is an
 * animation, MP4/MOV/WebM/MKV are videos, `audio/*` is audio — or a voice note when the reply
 * said `[[audio_as_voice]]` and the file is Ogg (Opus); everything else is a document, and
 * `[[as_document]]` makes everything a document (the sniffed MIME type is kept).
 */
export async function classify(
  head: Uint8Array,
  filename: string,
  directives: KindDirectives,
): Promise<Classification> {
  const sniffed = await fileTypeFromBuffer(head);
  const base = sniffed
    ? { kind: kindOfMime(sniffed.mime), mime: sniffed.mime }
    : (BY_EXTENSION[extensionOf(filename)] ?? {
        kind: "document" as const,
        mime: "application/octet-stream",
      });
  if (directives.asDocument) return { kind: "document", mime: base.mime };
  if (directives.asVoice && base.kind === "audio" && isOgg(base.mime)) {
    return { kind: "voice", mime: base.mime };
  }
  return base;
}

function kindOfMime(mime: string): MediaKind {
  if (PHOTO_MIMES.has(mime)) return "photo";
  if (mime === "image/gif") return "animation";
  if (VIDEO_MIMES.has(mime)) return "video";
  if (mime.startsWith("audio/")) return "audio";
  return "document";
}

function isOgg(mime: string): boolean {
  return mime.startsWith("audio/ogg") || mime === "audio/opus";
}

function extensionOf(filename: string): string {
  return path.extname(filename).slice(1).toLowerCase();
}
