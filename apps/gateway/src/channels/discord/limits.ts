import { DiscordDefaults, type MediaKind, type UploadLimits } from "@mediagate/media";

const MiB = 1024 * 1024;

/** Discord's upload limit outside boosted guilds (DMs, guilds below boost level 2). */
export const DiscordDefaultUploadBytes = DiscordDefaults.maxBytes;

/**
 * The upload limit a guild's boost level grants (bots share the guild's limit):
 * level 2 → 50 MiB, level 3 → 100 MiB, otherwise the 10 MiB default.
 */
export function guildUploadBytes(premiumTier: number): number {
  if (premiumTier >= 3) return 100 * MiB;
  if (premiumTier === 2) return 50 * MiB;
  return DiscordDefaultUploadBytes;
}

/**
 * The limit for one chat (docs/media.md). A configured `maxBytes` is an absolute override (for when
 * the operator knows better than the boost table: changed Discord limits, a compatible server);
 * otherwise 10 MiB, raised to the guild's boost-level limit when that is larger. DMs have no
 * guild (`premiumTier` undefined) and get the default.
 */
export function uploadLimitFor(configured: number | undefined, premiumTier?: number): number {
  if (configured !== undefined) return configured;
  return premiumTier === undefined ? DiscordDefaultUploadBytes : guildUploadBytes(premiumTier);
}

/** The same limit for every kind: Discord has one attachment limit. */
export function flatLimits(bytes: () => number): UploadLimits {
  return { maxBytes: (_kind: MediaKind) => bytes() };
}
