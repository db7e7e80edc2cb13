/**
 * Every default of @mediagate/media, each written once; `limits.ts` and `plan.ts` export
 * their sections (`TelegramDefaults`, `DiscordDefaults`, `PlanDefaults`) and merge them with
 * their options once.
 */
export const Defaults = {
  /** Telegram Bot API caps (decimal megabytes, the conservative reading of "10 MB"/"50 MB"). */
  telegram: { photoBytes: 10_000_000, otherBytes: 50_000_000 },
  /** Discord's attachment cap for a guild without boosts, and for DMs. */
  discord: { maxBytes: 10 * 1024 * 1024 },
  /** Files one reply may deliver. */
  plan: { maxFiles: 20 },
  /** Bytes from the start of a file handed to the classifier (file-type reads up to 4100). */
  sniffBytes: 4100,
} as const satisfies {
  readonly telegram: { readonly photoBytes: number; readonly otherBytes: number };
  readonly discord: { readonly maxBytes: number };
  readonly plan: { readonly maxFiles: number };
  readonly sniffBytes: number;
};
