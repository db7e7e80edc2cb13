/**
 * The script that kills a group of processes of a container, and how to ask for one. It
 * runs inside the container (`killProcesses`, a `docker exec`) or beside it in its PID
 * namespace (`killFromOutside`, for a container at its pids limit). It uses shell builtins
 * for the process table (`read` of `/proc/<pid>/stat` and `/proc/<pid>/status`); only the
 * environment scan forks (one `grep`), which inside a full container fails, so a kill that
 * must work there runs from outside. A process may rename itself to anything, newlines and
 * `) ` included, so `stat` is read whole and cut after its last `) `.
 */

/**
 * Kills every process of uid `$1` in the PID namespace at once: it runs as that uid and sends
 * SIGKILL to pid -1, which the kernel delivers to every process the sender may signal (its
 * uid's) but PID 1 and the sender, in one pass under the process table's lock that a fork
 * in flight cannot slip past (the fork is cancelled). No round of stopping and re-scanning
 * can promise that against a process that forks a child and exits faster than a round. It
 * counts the uid's processes (by `/proc/<pid>/status`, shell builtins only, nothing forks)
 * before the kill and prints that count.
 */
export const UidKillScript = `me=$$; n=0
for d in /proc/[0-9]*; do
  [ "\${d#/proc/}" = "$me" ] && continue
  { while read -r k r _; do [ "$k" = Uid: ] && { [ "$r" = "$1" ] && n=$((n + 1)); break; }; done <"$d/status"; } 2>/dev/null
done
kill -KILL -1 2>/dev/null
echo $n
`;

/** Which processes a kill selects: the union of the given criteria. */
export interface KillSelection {
  /**
   * Processes with an environment entry matching this extended regular expression (e.g.
   * `^MEDIAGATE_CMD=0123abcd$`). Only environments the killer may read count: its own uid's,
   * or every one for a killer with `CAP_SYS_PTRACE` (which the sandbox never has).
   */
  readonly environ?: string | undefined;
  /** Children of this pid (the pid itself is spared), e.g. a session's controller shell. */
  readonly childrenOf?: number | undefined;
  /** Processes whose real uid lies in this inclusive range. */
  readonly uids?: { readonly min: number; readonly max: number } | undefined;
}

/** An ERE that matches exactly the environment entry `name=value`. */
export function exactEntry(name: string, value: string): string {
  return `^${escapeRegExp(name)}=${escapeRegExp(value)}$`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}

/** Arguments of {@link KillScript} for a selection (after `sh -c <script> <name>`). */
export function killArguments(selection: KillSelection): string[] {
  return [
    selection.environ ?? "",
    selection.childrenOf?.toString() ?? "",
    selection.uids?.min.toString() ?? "",
    selection.uids?.max.toString() ?? "",
  ];
}

/**
 * Kills a group of processes: every process whose environment matches the ERE `$1`, every
 * child of pid `$2` (which itself is spared), every process whose real uid is in `$3…$4`,
 * and, transitively, their children and the members of process groups they lead. PID 1,
 * zombies and the killer itself are never selected. Candidates are stopped first and
 * re-scanned until the set is stable (a stopped process cannot fork, and a fork racing the
 * stop is cancelled by the kernel), so a forking loop cannot outrun it; then the whole set
 * is killed with SIGKILL. Prints how many were killed.
 */
export const KillScript = `m=$1; parent=$2; umin=$3; umax=$4; me=$$; nl='
'
snapshot() {
  table=""
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$me" ] && continue
    l=""
    { while IFS= read -r x || [ -n "$x" ]; do l="$l$x "; done <"$d/stat"; } 2>/dev/null
    [ -n "$l" ] || continue
    l=\${l##*) }
    set -- $l
    [ "$1" = Z ] && continue
    u=-
    if [ -n "$umin" ]; then
      { while read -r k v _; do [ "$k" = Uid: ] && u=$v && break; done <"$d/status"; } 2>/dev/null
    fi
    table="$table$p $2 $3 $u$nl"
  done
}
grow() {
  if [ -n "$m" ]; then
    IFS=$nl
    for f in $(grep -lzE "$m" /proc/[0-9]*/environ 2>/dev/null); do
      p=\${f#/proc/}; p=\${p%/environ}
      case "$sel" in *" $p "*) continue ;; esac
      [ "$p" = "$me" ] || [ "$p" = 1 ] || [ "$p" = "$parent" ] || sel="$sel$p "
    done
  fi
  changed=1
  while [ -n "$changed" ]; do
    changed=
    IFS=$nl
    for row in $table; do
      IFS=' '
      set -- $row
      case "$sel" in *" $1 "*) continue ;; esac
      [ "$1" = 1 ] || [ "$1" = "$parent" ] || [ "$1" = "$me" ] && continue
      if [ -n "$umin" ] && [ "$4" != - ] && [ "$4" -ge "$umin" ] && [ "$4" -le "$umax" ]; then
        sel="$sel$1 "; changed=1; continue
      fi
      if [ -n "$parent" ] && [ "$2" = "$parent" ]; then sel="$sel$1 "; changed=1; continue; fi
      case "$sel" in *" $2 "*|*" $3 "*) sel="$sel$1 "; changed=1 ;; esac
    done
    IFS=' '
  done
}
sel=" "
snapshot; grow
if [ "$sel" = " " ]; then echo 0; exit 0; fi
round=0
while [ $round -lt 20 ]; do
  before=$sel
  kill -STOP $sel 2>/dev/null
  snapshot; grow
  [ "$sel" = "$before" ] && break
  round=$((round + 1))
done
kill -KILL $sel 2>/dev/null
kill -CONT $sel 2>/dev/null
set -- $sel
echo $#
`;
