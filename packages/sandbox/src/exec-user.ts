import { Defaults } from "./defaults.js";
import type { SandboxSettings } from "./types.js";

/** The identity a `docker exec` runs as (Docker's `User: "uid:gid"`). */
export interface ExecUser {
  readonly uid: number;
  readonly gid: number;
}

/** Docker's `User` value of an {@link ExecUser}. */
export function userSpec(user: ExecUser): string {
  return `${user.uid}:${user.gid}`;
}

/** Root inside a per-session container: the gateway's housekeeping (CAP_CHOWN, CAP_KILL, …). */
export const RootUser: ExecUser = { uid: 0, gid: 0 };

/** Who runs `Sandbox#exec` (one-shot, no session) in per-session mode. */
export const OneShotUser: ExecUser = { uid: Defaults.sessionUidBase, gid: Defaults.sandboxGid };

/** Every uid a per-session container may run user commands as (one-shot and sessions). */
export const SandboxUids = {
  min: Defaults.sessionUidBase,
  max: Defaults.sessionUidBase + Defaults.sessionUidCount,
} as const;

/** The environment every per-session exec gets: the shared home. */
export const SessionHome = { HOME: "/root" } as const;

/** How a sandbox with these settings runs things: who housekeeps, and whether sessions get uids. */
export interface UserMode {
  readonly perSession: boolean;
  /** The user of housekeeping execs: root in per-session mode, the image's user otherwise. */
  readonly housekeeper: ExecUser | undefined;
}

export function userModeOf(settings: Pick<SandboxSettings, "user">): UserMode {
  const perSession = settings.user !== "root";
  return { perSession, housekeeper: perSession ? RootUser : undefined };
}
