import path from "node:path";
import { unshownChars } from "@mediagate/io";
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

/**
 * What a notice's file name leaves out (@mediagate/io's `UnshownCharClass`): the agent names
 * its files, and a prompt can make it name one `report\u202etxt.exe`, which a chat shows as
 * `reportexe.txt`.
 */
const Unshown = unshownChars();

/** How many characters (code points) of a name a notice shows. */
const ShownNameChars = 120;

/**
 * How a notice names a file: its basename without control or bidi formatting characters, at
 * most 120 characters, cut between code points (half an emoji makes Telegram refuse the whole
 * message).
 */
export function displayName(p: string): string {
  const name = path.posix.basename(p).replace(Unshown, "");
  const safe = name === "" ? "file" : name;
  const chars = Array.from(safe);
  return chars.length > ShownNameChars ? `${chars.slice(0, ShownNameChars - 1).join("")}…` : safe;
}
