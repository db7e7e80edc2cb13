import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import type { UserMode } from "./exec-user.js";
import { execOnce } from "./one-shot-exec.js";
import { sessionHash } from "./session-hash.js";
import type { SessionUsers } from "./session-users.js";
import type { SessionIdentity } from "./types.js";

/**
 * Who the session's commands run as in a container (`undefined`: the slot has no running
 * container). Per-session mode: the session's uid there, looked up and never claimed
 * (`undefined` when it never ran there; remembered by `users` once found, so a session that
 * ran there costs no exec), and the sandbox group (`Defaults.sandboxGid`, its only group).
 * Root mode: the container's user, as `id -u` and `id -G` print it (no uid and no group
 * without a container). Docker errors propagate; an `id` that fails is an `Error`.
 */
export async function sessionIdentity(
  docker: Docker,
  containerId: string | undefined,
  session: {
    readonly mode: UserMode;
    readonly users: SessionUsers;
    readonly sessionKey: string;
    readonly timeoutMs: number;
  },
): Promise<SessionIdentity> {
  const { mode, users, sessionKey, timeoutMs } = session;
  if (mode.perSession) {
    const user =
      containerId === undefined
        ? undefined
        : await users.lookUp(containerId, sessionHash(sessionKey));
    return { uid: user?.uid, gids: [Defaults.sandboxGid] };
  }
  if (containerId === undefined) return { uid: undefined, gids: [] };
  const ids = await execOnce(docker, containerId, ["sh", "-c", "id -u && id -G"], {
    timeoutMs,
    killOnStop: false,
  });
  const [uid, ...gids] = ids.stdout.trim().split(/\s+/).map(Number);
  if (ids.exitCode !== 0 || uid === undefined || ![uid, ...gids].every(Number.isSafeInteger)) {
    throw new Error(`cannot tell the container's user (id: ${ids.stderr.trim() || ids.exitCode})`);
  }
  return { uid, gids };
}
