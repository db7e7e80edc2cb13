import { MediagateError } from "@mediagate/io";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { type ExecUser, RootUser, SandboxUids } from "./exec-user.js";
import { execOnce } from "./one-shot-exec.js";
import { RegistryDir, StateDir } from "./shell-scripts.js";

/**
 * The session's first candidate uid: derived from its hash, so the same session asks for
 * the same uid in every container (RLIMIT_NPROC counts a uid across the whole host, so two
 * sessions should rarely share one anywhere) and gets it unless another session took it.
 */
export function firstCandidateUid(sessionHash: string): number {
  const n = Number.parseInt(sessionHash.slice(0, 8), 16);
  return Defaults.sessionUidBase + 1 + (n % Defaults.sessionUidCount);
}

/** The claim failed for a reason other than Docker itself (e.g. a container without the caps). */
export class SessionUserError extends MediagateError {
  override readonly name = "SessionUserError";
  readonly code = "MG_SANDBOX_SESSION_USER";
  readonly containerId: string;

  constructor(containerId: string, detail: string) {
    super(
      `could not set up the session's user in container ${containerId.slice(0, 12)} (${detail}); ` +
        'a container made before per-session users (or with user: "root") has to be replaced: ' +
        "/reset, or `mediagate sandbox rm <slot>`",
    );
    this.containerId = containerId;
  }
}

/**
 * Run as root in the container. Makes the registry (`/run/mediagate`, root-owned `0711`,
 * refusing one that is a link or owned by someone else), then walks the session's candidate
 * uids from `$2` (wrapping inside `$3…$4`), or from the uid `h/<hash>` names when a warm
 * container's uid was handed to the session (`HandOverScript`: that uid was claimed before
 * the session was known, so it is not on the session's own walk): a candidate whose
 * `uid/<n>` link names the session is its uid; a free one is claimed with `ln -s` (atomic:
 * exactly one claimer wins); one claimed by another session is skipped. Claims are never
 * released while the container lives, so the walk always ends at the same uid for the same
 * session. With `$6` = 1 it then makes `s/<hash>/` owned by the uid (group `$5`), mode
 * `0700`; with 0 it only looks and prints `none` when the session has no uid yet. Prints the
 * uid.
 */
export const ClaimScript = `h=$1; u=$2; min=$3; max=$4; gid=$5; claim=$6
R=${RegistryDir}; S=${StateDir}
umask 077
[ -d /run ] || mkdir -m 0755 /run || exit 3
for d in "$R" "$S" "$R/uid"; do
  [ -L "$d" ] && { echo "$d is a link" >&2; exit 3; }
  [ -d "$d" ] || mkdir "$d" || exit 3
  set -- $(ls -ldn "$d")
  [ "$3" = 0 ] || { echo "$d is not owned by root" >&2; exit 3; }
done
chmod 0711 "$R" "$S" && chmod 0700 "$R/uid" || exit 3
if [ -L "$R/h/$h" ]; then
  v=$(readlink "$R/h/$h")
  case $v in ''|*[!0-9]*) ;; *) [ "$v" -ge "$min" ] && [ "$v" -le "$max" ] && u=$v;; esac
fi
n=0
while :; do
  o=$(readlink "$R/uid/$u" 2>/dev/null)
  [ "$o" = "$h" ] && break
  if [ -z "$o" ] && [ ! -e "$R/uid/$u" ]; then
    [ "$claim" = 1 ] || { echo none; exit 0; }
    ln -sn "$h" "$R/uid/$u" 2>/dev/null && break
    [ "$(readlink "$R/uid/$u" 2>/dev/null)" = "$h" ] && break
  fi
  n=$((n + 1))
  [ $n -lt 4096 ] || { echo "no free session uid" >&2; exit 4; }
  u=$((u + 1)); [ $u -le $max ] || u=$min
done
if [ "$claim" = 1 ]; then
  s="$S/$h"
  [ -L "$s" ] && { echo "$s is a link" >&2; exit 3; }
  [ -d "$s" ] || mkdir "$s" || exit 3
  chown "$u:$gid" "$s" && chmod 0700 "$s" || exit 3
fi
echo "$u"
`;

/**
 * The session's uid in the container (a root housekeeping exec, ≈ one `docker exec`; the
 * sandbox asks through its `SessionUsers`, which remembers the answer):
 * claimed and its state directory prepared when `claim` is true; looked up only (and
 * `undefined` when the session never ran there) otherwise. Docker errors propagate; any
 * other failure is a {@link SessionUserError}.
 */
export async function sessionUser(
  docker: Docker,
  containerId: string,
  sessionHash: string,
  claim: true,
): Promise<ExecUser>;
export async function sessionUser(
  docker: Docker,
  containerId: string,
  sessionHash: string,
  claim: false,
): Promise<ExecUser | undefined>;
export async function sessionUser(
  docker: Docker,
  containerId: string,
  sessionHash: string,
  claim: boolean,
): Promise<ExecUser | undefined> {
  const argv = [
    "sh",
    "-c",
    ClaimScript,
    "mediagate-claim",
    sessionHash,
    String(firstCandidateUid(sessionHash)),
    String(SandboxUids.min + 1),
    String(SandboxUids.max),
    String(Defaults.sandboxGid),
    claim ? "1" : "0",
  ];
  const result = await execOnce(docker, containerId, argv, {
    timeoutMs: Defaults.operationTimeoutMs,
    killOnStop: false,
    user: RootUser,
  });
  const answer = result.stdout.trim();
  if (result.exitCode === 0 && answer === "none" && !claim) return undefined;
  const uid = Number.parseInt(answer, 10);
  if (result.exitCode !== 0 || !/^\d+$/.test(answer) || uid <= SandboxUids.min) {
    const detail = result.stderr.trim() || `exit code ${result.exitCode}`;
    throw new SessionUserError(containerId, detail.slice(0, 200));
  }
  return { uid, gid: Defaults.sandboxGid };
}
