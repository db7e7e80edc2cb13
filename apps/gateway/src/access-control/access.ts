import type { Platform } from "../channels/types.js";
import type { ProfileConfig } from "../config/types.js";

/** The console's local user: allowed and admin by construction (whoever runs the process). */
export const ConsoleUser = { platform: "console", userId: "local" } as const;

/** What a user may do in a profile. */
export interface Access {
  readonly allowed: boolean;
  readonly admin: boolean;
  /**
   * Let in by a pairing approval, not by the config: a revocation can take it back while the
   * gateway runs, so it is checked again when the message's turn starts.
   */
  readonly paired?: boolean | undefined;
}

/**
 * Access of `<platform>:<userId>` in a profile. Admins are allowed even when not listed in
 * `allowedUsers`; the console's local user is both.
 */
export function accessOf(profile: ProfileConfig, platform: Platform, userId: string): Access {
  if (platform === ConsoleUser.platform && userId === ConsoleUser.userId) {
    return { allowed: true, admin: true };
  }
  const id = `${platform}:${userId}`;
  const admin = profile.admins.includes(id);
  return { allowed: admin || profile.allowedUsers.includes(id), admin };
}
