import { Defaults } from "./defaults.js";
import type { MediaKind, UploadLimits } from "./types.js";

/** Telegram Bot API caps (decimal megabytes, the conservative reading of "10 MB"/"50 MB"). */
export const TelegramDefaults = Defaults.telegram satisfies TelegramLimitOptions;

/** Discord's attachment cap for a guild without boosts, and for DMs. */
export const DiscordDefaults = Defaults.discord satisfies DiscordLimitOptions;

export interface TelegramLimitOptions {
  /** Cap for `sendPhoto`. Default: `Defaults.telegram.photoBytes`. */
  readonly photoBytes?: number | undefined;
  /**
   * Cap for every other upload. Default: `Defaults.telegram.otherBytes`; a local Bot API
   * server allows up to 2000 MB.
   */
  readonly otherBytes?: number | undefined;
}

export interface DiscordLimitOptions {
  /** Cap per attachment. Default: `Defaults.discord.maxBytes`; raise it for a boosted guild. */
  readonly maxBytes?: number | undefined;
}

/** Upload limits of the Telegram Bot API (docs/media.md). */
export function telegramLimits(options: TelegramLimitOptions = {}): UploadLimits {
  const photoBytes = positive(options.photoBytes, TelegramDefaults.photoBytes, "photoBytes");
  const otherBytes = positive(options.otherBytes, TelegramDefaults.otherBytes, "otherBytes");
  return { maxBytes: (kind: MediaKind) => (kind === "photo" ? photoBytes : otherBytes) };
}

/** Upload limits of Discord (docs/media.md): one cap for every kind. */
export function discordLimits(options: DiscordLimitOptions = {}): UploadLimits {
  const maxBytes = positive(options.maxBytes, DiscordDefaults.maxBytes, "maxBytes");
  return { maxBytes: () => maxBytes };
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer number of bytes, got ${value}`);
  }
  return value;
}
