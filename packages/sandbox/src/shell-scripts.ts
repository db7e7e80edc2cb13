import { randomBytes } from "node:crypto";

/**
 * The POSIX sh snippets the sandbox writes into containers. They use shell builtins on
 * the hot path (no fork besides the command's own subshell) and only busybox-level tools
 * elsewhere (`grep`, `mkdir`), so any image with a POSIX `sh` works.
 */

/**
 * The gateway's own directory inside the container, root-owned `0711`: nobody else can
 * create or list entries in it. `s/<session hash>/` holds a session's state, `0700` and
 * owned by the session's uid; `uid/` is the registry of claimed session uids (root only).
 */
export const RegistryDir = "/run/mediagate";
/** Directory of the per-session state directories. */
export const StateDir = `${RegistryDir}/s`;

/**
 * Single-quotes a string as one POSIX sh word. NUL bytes are dropped: no shell word can hold
 * one (C strings end there), so `sh` would cut the word or the script at it.
 */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("\0", "").replaceAll("'", "'\\''")}'`;
}

/** Env var marking every process a session started (value: the session hash). */
export const SessionMarker = "MEDIAGATE_SESSION";
/** Env var marking every process of one session-shell command. */
export const CommandMarker = "MEDIAGATE_CMD";
/** Env var marking every process of one one-shot exec. */
export const ExecMarker = "MEDIAGATE_EXEC";

/** The directory only the session's uid may enter, holding its state file. */
export function stateDirectory(sessionHash: string): string {
  return `${StateDir}/${sessionHash}`;
}

/** The session's cwd and exports, sourced by every command of the session. */
export function stateFile(sessionHash: string): string {
  return `${stateDirectory(sessionHash)}/env`;
}

/**
 * Makes `$__mg_s` name the state file and `$__mg_sh` the shell commands run in (resolved
 * once, before a command can change `PATH`), and creates the state file from the current
 * environment unless an earlier shell left one. The directory exists already in per-session mode (the
 * housekeeping made it for the uid); in root mode the shell makes it.
 */
function openState(sessionHash: string): string {
  const dir = shellQuote(stateDirectory(sessionHash));
  return `__mg_s=${shellQuote(stateFile(sessionHash))}
__mg_sh=$(command -v sh 2>/dev/null); : "\${__mg_sh:=/bin/sh}"
${RetryFunction}
[ -d ${dir} ] || (umask 077 && mkdir -p ${dir}) 2>/dev/null
if [ ! -f "$__mg_s" ]; then export PWD; export -p >"$__mg_s"; fi`;
}

/** What every command of a per-session uid starts with: group-writable files by default. */
export const SessionUmask = "002";

/**
 * Sent once to a fresh controller shell: sets the umask (per-session mode), creates the
 * session's state file from the container's environment unless an earlier shell left one
 * (so cwd and exports survive a shell restart and `/stop`), empties the controller's own environment (so an `unset` in
 * a command sticks: each command's environment is exactly the state file), and reports
 * the controller's pid after `ready`.
 */
export function controllerInit(sessionHash: string, ready: string, umask?: string): string {
  return `${umask === undefined ? "" : `umask ${umask}\n`}${openState(sessionHash)}
export -p >"$__mg_s.boot"
while IFS= read -r __mg_l; do case $__mg_l in "export "*=*) __mg_n=\${__mg_l#export }; unset "\${__mg_n%%=*}" 2>/dev/null;; esac; done <"$__mg_s.boot"
printf '%s %s\\n' ${shellQuote(ready)} "$$"
`;
}

/** Sent once to a blank controller (a warm container's): only reports its pid after `ready`. */
export function controllerReady(ready: string): string {
  return `printf '%s %s\\n' ${shellQuote(ready)} "$$"\n`;
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
 * Longest command (UTF-8 bytes) run as its own shell's script. Linux caps one exec argument
 * at 128 KiB (`MAX_ARG_STRLEN`); a longer command (a model writing a big file with a
 * here-document) is evaluated in the subshell instead, where no such cap applies.
 */
export const MaxScriptArgumentBytes = 100_000;

/**
 * One command in its own subshell: restore the session's exports and cwd, mark the
 * processes, run the command with stdin from /dev/null, and on any exit (including the
 * command's own `exit`) save cwd and exports back. Per-call `env` is not saved.
 * Expects `$__mg_s` to name the state file and `$__mg_sh` the shell.
 *
 * The command is the script of a shell of its own (`sh -c '<command>'`), which sets the
 * trap that saves the state on the same line: its errors read as if the user had typed the
 * command into `sh` (`sh: foo: not found`, line numbers counted from the command's first
 * line), never as the gateway's wrapper (`sh: eval: line 40: …`). Only a command over
 * {@link MaxScriptArgumentBytes} is `eval`ed in the subshell.
 */
export function commandSubshell(spec: CommandSpec): string {
  const head = [
    // `command .`: a state file cut short (saved while /run/mediagate was full) is a syntax
    // error, which a plain `.` turns into the subshell's exit before the command runs, on
    // every later call. Read so, it restores what it holds and the command's save mends it.
    'command . "$__mg_s" 2>/dev/null',
    'cd -- "$PWD" 2>/dev/null',
    `export ${SessionMarker}=${spec.sessionHash} ${CommandMarker}=${spec.commandId}`,
  ];
  if (spec.cwd !== undefined) head.push(`cd -- ${shellQuote(spec.cwd)} || exit 1`);
  const names: string[] = [];
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (!EnvName.test(name)) continue;
    names.push(name);
    head.push(`export ${name}=${shellQuote(value)}`);
  }
  const unset = names.length > 0 ? `unset ${names.join(" ")}; ` : "";
  const save = (file: string) =>
    `__mg_rc=$?; ${unset}export PWD; export -p >${file}; exit $__mg_rc`;
  const evaluated = [
    `__mg_c=${shellQuote(spec.command)}`,
    `trap '${save('"$__mg_s"')}' EXIT`,
    'eval "$__mg_c"',
  ];
  if (Buffer.byteLength(spec.command) > MaxScriptArgumentBytes) {
    return ["(", ...head, ...evaluated, ") </dev/null"].join("\n");
  }
  const script = `trap ${shellQuote(save(shellQuote(stateFile(spec.sessionHash))))} EXIT; ${spec.command}`;
  // No command name after the script: busybox would then add a `line 0:` to every message.
  // The `sh -c` is the subshell's last command (so it is the one the subshell execs, and
  // `$PPID` is the session's shell); a failure goes to `__mg_retry` (E2BIG, see there).
  return [
    "(",
    ...head,
    FindSh,
    `"$__mg_x" -c ${shellQuote(script)}`,
    `) </dev/null || __mg_retry "$?" ${shellQuote(head.join("\n"))} ${shellQuote(spec.command)} ${shellQuote(save('"$__mg_s"'))}`,
  ].join("\n");
}

/**
 * Found as plain `sh`, so a command's messages say `sh:`; the shell resolved at start when the
 * session's PATH no longer finds one.
 */
const FindSh = "command -v sh >/dev/null 2>&1 && __mg_x=sh || __mg_x=$__mg_sh";

/**
 * Defined once per controller ({@link openState}), called when a command's subshell failed:
 * `__mg_retry <status> <head> <command> <save>`. A 126 that `sh -c :` gets too means no exec
 * can start with the session's environment (an exported value over Linux's 128 KiB per
 * string: E2BIG): the command never ran, and it is evaluated in a subshell instead (after the
 * same `head`, saving the state with `save` on exit, with no positional parameters, as `sh -c`
 * would have run it), where builtins (`unset`) still work. Any other status is returned as it is. A function, so the per-command text carries three quoted
 * words for this rare case, not a second copy of the subshell for the shell to parse: that
 * copy cost a warm call 0.04–0.14 ms (`pnpm bench:shell-cost`, `shell_cost_whole`).
 */
const RetryFunction = `__mg_retry() {
  [ "$1" -eq 126 ] || return "$1"
  (
    __mg_h=$2 __mg_c=$3 __mg_t=$4
    set --
    eval "$__mg_h"
    ${FindSh}
    "$__mg_x" -c : 2>/dev/null && exit 126
    trap "$__mg_t" EXIT
    eval "$__mg_c"
  ) </dev/null
}`;

/** A fresh marker for {@link controllerCommand} and {@link oneShotCommand}. */
export function commandEndMarker(): string {
  return `__mediagate_end_${randomBytes(12).toString("hex")}__`;
}

/**
 * Ends a command's output: `end` and the subshell's exit status on stdout, `end` on stderr.
 * The reader knows the command is over when both came, without waiting for the streams to
 * close, which a job the command left running in the background holds open.
 */
function endMarkers(end: string): string {
  const marker = shellQuote(end);
  return `printf '%s%s\\n' ${marker} "$?"; printf '%s\\n' ${marker} >&2\n`;
}

/** What the controller shell receives for one command: the subshell, then both end markers. */
export function controllerCommand(spec: CommandSpec, end: string): string {
  return `${commandSubshell(spec)}\n${endMarkers(end)}`;
}

/**
 * The same command as a one-shot `sh -c` script (fallback when the shell is unusable),
 * ending with the same markers as {@link controllerCommand} (`OneShotOptions.endMarker`).
 */
export function oneShotCommand(spec: CommandSpec, end: string, umask?: string): string {
  return `${umask === undefined ? "" : `umask ${umask}\n`}${openState(spec.sessionHash)}
${commandSubshell(spec)}
${endMarkers(end)}`;
}
