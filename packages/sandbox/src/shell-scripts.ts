/**
 * The POSIX sh snippets the sandbox writes into containers. They use shell builtins on
 * the hot path (no fork besides the command's own subshell) and only busybox-level tools
 * elsewhere (`grep`, `mkdir`), so any image with a POSIX `sh` works.
 */

/** Directory inside the container holding one state file per session (cwd + exports). */
export const StateDir = "/tmp/.mediagate";

/** Single-quotes a string for sh. NUL bytes cannot reach a shell and are dropped. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("\0", "").replaceAll("'", "'\\''")}'`;
}

/** Env var marking every process a session started (value: the session hash). */
export const SessionMarker = "MEDIAGATE_SESSION";
/** Env var marking every process of one session-shell command. */
export const CommandMarker = "MEDIAGATE_CMD";
/** Env var marking every process of one one-shot exec. */
export const ExecMarker = "MEDIAGATE_EXEC";

export function stateFile(sessionHash: string): string {
  return `${StateDir}/${sessionHash}.env`;
}

/**
 * Sent once to a fresh controller shell: creates the session's state file from the
 * container's environment unless an earlier shell left one (so cwd and exports survive a
 * shell restart and `/stop`), empties the controller's own environment (so an `unset` in
 * a command sticks: each command's environment is exactly the state file), and reports
 * the controller's pid after `ready`.
 */
export function controllerInit(sessionHash: string, ready: string): string {
  return `__mg_s=${shellQuote(stateFile(sessionHash))}
mkdir -p ${StateDir} 2>/dev/null
if [ ! -f "$__mg_s" ]; then export PWD; export -p >"$__mg_s"; fi
export -p >"$__mg_s.boot"
while IFS= read -r __mg_l; do case $__mg_l in "export "*=*) __mg_n=\${__mg_l#export }; unset "\${__mg_n%%=*}" 2>/dev/null;; esac; done <"$__mg_s.boot"
printf '%s %s\\n' ${shellQuote(ready)} "$$"
`;
}

export interface CommandSpec {
  readonly command: string;
  readonly sessionHash: string;
  readonly commandId: string;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
}

const EnvName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * One command in its own subshell: restore the session's exports and cwd, mark the
 * processes, run the command with stdin from /dev/null, and on any exit (including the
 * command's own `exit`) save cwd and exports back. Per-call `env` is not saved.
 * Expects `$__mg_s` to name the state file.
 */
export function commandSubshell(spec: CommandSpec): string {
  const lines = [
    `__mg_c=${shellQuote(spec.command)}`,
    "(",
    '. "$__mg_s" 2>/dev/null',
    'cd -- "$PWD" 2>/dev/null',
    `export ${SessionMarker}=${spec.sessionHash} ${CommandMarker}=${spec.commandId}`,
  ];
  if (spec.cwd !== undefined) lines.push(`cd -- ${shellQuote(spec.cwd)} || exit 1`);
  const names: string[] = [];
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (!EnvName.test(name)) continue;
    names.push(name);
    lines.push(`export ${name}=${shellQuote(value)}`);
  }
  const unset = names.length > 0 ? `unset ${names.join(" ")}; ` : "";
  lines.push(
    `trap '__mg_rc=$?; ${unset}export PWD; export -p >"$__mg_s"; exit $__mg_rc' EXIT`,
    'eval "$__mg_c"',
    ") </dev/null",
  );
  return lines.join("\n");
}

/** What the controller shell receives for one command: the subshell, then both end markers. */
export function controllerCommand(spec: CommandSpec, end: string): string {
  const marker = shellQuote(end);
  return `${commandSubshell(spec)}
printf '%s%s\\n' ${marker} "$?"; printf '%s\\n' ${marker} >&2
`;
}

/** The same command as a one-shot `sh -c` script (fallback when the shell is unusable). */
export function oneShotCommand(spec: CommandSpec): string {
  return `__mg_s=${shellQuote(stateFile(spec.sessionHash))}
mkdir -p ${StateDir} 2>/dev/null
if [ ! -f "$__mg_s" ]; then export PWD; export -p >"$__mg_s"; fi
${commandSubshell(spec)}`;
}

/**
 * Kills a group of processes: every process whose environment holds `$1` (a marker such
 * as `MEDIAGATE_CMD=<id>`), every child of pid `$2` (the session's controller shell, which
 * itself is spared), and, transitively, their children and the members of process groups
 * they lead. Candidates are stopped first and re-scanned until the set is stable, so a
 * forking loop cannot outrun it, then killed with SIGKILL. Prints how many were killed.
 */
export const KillScript = `m=$1; parent=$2; me=$$; nl='
'
snapshot() {
  table=""
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$me" ] && continue
    { read -r l <"$d/stat"; } 2>/dev/null || continue
    l=\${l##*) }
    set -- $l
    table="$table$p $2 $3$nl"
  done
}
grow() {
  for f in $(grep -lzxF "$m" /proc/[0-9]*/environ 2>/dev/null); do
    p=\${f#/proc/}; p=\${p%/environ}
    case "$sel" in *" $p "*) continue ;; esac
    [ "$p" = "$me" ] || [ "$p" = 1 ] || [ "$p" = "$parent" ] || sel="$sel$p "
  done
  changed=1
  while [ -n "$changed" ]; do
    changed=
    IFS=$nl
    for row in $table; do
      IFS=' '
      set -- $row
      case "$sel" in *" $1 "*) continue ;; esac
      [ "$1" = 1 ] || [ "$1" = "$parent" ] || [ "$1" = "$me" ] && continue
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
while [ $round -lt 5 ]; do
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
