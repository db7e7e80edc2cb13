import path from "node:path";
import { NotReadable } from "./access.js";
import type { MediaOutcome } from "./types.js";

/**
 * The chat-facing notice for an outcome that was not delivered, or `undefined` for a ready
 * file. A denied outcome never names its path (the path itself can reveal what was asked
 * for), nor, for a file its session could not read, whose it is; the others name the file by
 * its basename only.
 */
export function noticeFor(outcome: MediaOutcome): string | undefined {
  switch (outcome.status) {
    case "ready":
      return undefined;
    case "unreachable":
      return `⚠️ Couldn't deliver ${displayName(outcome.path)}`;
    case "denied":
      return outcome.reason === NotReadable
        ? "⚠️ An attachment was withheld: this session cannot read that file in the sandbox."
        : "⚠️ An attachment was withheld: the delivery policy does not allow sending that file.";
    case "too_large":
      return `⚠️ Couldn't deliver ${displayName(outcome.path)}: it is ${formatBytes(outcome.size)}, over the ${formatBytes(outcome.limit)} limit for a ${outcome.kind}.`;
  }
}

/** Bytes as a short human figure: `900 B`, `12.5 KB`, `10 MB` (decimal units). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = "B";
  for (const next of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  const rounded = value >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
  return `${rounded} ${unit}`;
}

/** How a notice names a file: its basename without control characters, at most 120 characters. */
export function displayName(p: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  const name = path.posix.basename(p).replace(/[\u0000-\u001f\u007f]/g, "");
  const safe = name === "" ? "file" : name;
  return safe.length > 120 ? `${safe.slice(0, 119)}…` : safe;
}
