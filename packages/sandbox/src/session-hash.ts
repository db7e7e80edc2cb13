import { createHash } from "node:crypto";

/**
 * Fixed-length hash of a session key: the value of `MEDIAGATE_SESSION`, which marks every
 * process the session starts in a container (and names its state file there).
 */
export function sessionHash(sessionKey: string): string {
  return createHash("sha256").update(sessionKey).digest("hex").slice(0, 16);
}
