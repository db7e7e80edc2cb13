import { randomHex } from "./random-hex.js";

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
 * Sent once to a fresh controller shell: {@link CommandFunction} on its first line, then
 * {@link controllerBind}'s set-up.
 */
export function controllerInit(
  sessionHash: string,
  ready: string,
  umask?: string,
  fifos?: ChannelFifos,
): string {
  return `${CommandFunction}\n${controllerBind(sessionHash, ready, umask, fifos)}`;
}

/** The FIFOs a controller makes for its channel (`shell-channel.ts`), as the container names them. */
export interface ChannelFifos {
  readonly input: string;
  readonly output: string;
  readonly errors: string;
}

function fifoWords(fifos: ChannelFifos): string {
  return [fifos.input, fifos.output, fifos.errors].map(shellQuote).join(" ");
}

/**
 * Makes the channel's FIFOs, readable and writable by the session's uid alone; says nothing
 * when it cannot (no `mkfifo` in the image, a full registry): the gateway then finds none to
 * open and the shell keeps the exec's stream.
 */
function makeFifos(fifos: ChannelFifos): string {
  const words = fifoWords(fifos);
  return `rm -f -- ${words} 2>/dev/null; mkfifo -m 0600 -- ${words} 2>/dev/null\n`;
}

/**
 * Moves the controller's stdin, stdout and stderr to the channel's FIFOs, which the gateway has
 * open, removes their names (nothing else may open them, and nothing is left behind when the
 * shell ends), and reports `ready` on both new outputs.
 */
export function channelSwitch(fifos: ChannelFifos, ready: string): string {
  const words = fifoWords(fifos);
  return `exec <${shellQuote(fifos.input)} >${shellQuote(fifos.output)} 2>${shellQuote(fifos.errors)}
rm -f -- ${words}
printf '%s\\n' ${shellQuote(ready)}; printf '%s\\n' ${shellQuote(ready)} >&2
`;
}

/** Removes the channel's FIFOs the gateway could not open (the shell keeps the exec's stream). */
export function channelDrop(fifos: ChannelFifos): string {
  return `rm -f -- ${fifoWords(fifos)} 2>/dev/null\n`;
}

/**
 * The set-up of a controller for its session, sent after {@link controllerReady} (a warm
 * container's blank controller bound to a session) or as part of {@link controllerInit}:
 * sets the umask (per-session mode), creates the session's state file from the container's
 * environment unless an earlier shell left one (so cwd and exports survive a shell restart and
 * `/stop`), empties the controller's own environment (so an `unset` in a command sticks: each
 * command's environment is exactly the state file), and reports the controller's pid after
 * `ready`.
 */
export function controllerBind(
  sessionHash: string,
  ready: string,
  umask?: string,
  fifos?: ChannelFifos,
): string {
  return `${umask === undefined ? "" : `umask ${umask}\n`}${openState(sessionHash)}
export -p >"$__mg_s.boot"
while IFS= read -r __mg_l; do case $__mg_l in "export "*=*) __mg_n=\${__mg_l#export }; unset "\${__mg_n%%=*}" 2>/dev/null;; esac; done <"$__mg_s.boot"
${fifos === undefined ? "" : makeFifos(fifos)}printf '%s %s\\n' ${shellQuote(ready)} "$$"
`;
}

/**
 * Sent once to a blank controller (a warm container's): {@link CommandFunction} on its first
 * line, then only its pid after `ready`.
 */
export function controllerReady(ready: string, fifos?: ChannelFifos): string {
  return `${CommandFunction}\n${fifos === undefined ? "" : makeFifos(fifos)}printf '%s %s\\n' ${shellQuote(ready)} "$$"\n`;
}

/**
 * `__mg_def` makes the command in `$__mg_c` the body of the function `__mg_f`, which the
 * command's subshell then calls: the command runs in that subshell, a fork of the session's
 * shell, with no `exec` of a shell of its own (which was more than half of a warm call: `pnpm
 * bench:shell-cost`, `shell_cost_fork_exec` against `shell_cost_fork_function`; bench/README.md,
 * "Sandbox"). Its errors read as they do in `sh`: busybox names a builtin that wraps the code it
 * runs in every message (`sh: eval: line 3: …`), but a function call names nothing, and the
 * definition's own `eval` is done before the command runs. busybox counts a function's lines
 * from the line the `eval` was parsed on, so this function must be the first line its shell
 * reads (line 1 of a controller, the line after the first of an `sh -c` script): the command's
 * lines then count from 1. `__mg_def` fails, saying nothing, when the command is not a whole
 * script on its own (a syntax error, an open quote, an empty command): that command runs as
 * the script of an `sh -c` instead, which reports it as `sh` does ({@link commandSubshell}).
 * So does every command where `sh` is bash: bash names a function's source in its messages
 * (`main: line 2: …`), so there the command keeps its `sh -c` (dash and busybox name nothing).
 */
export const CommandFunction = `if [ -n "\${BASH_VERSION-}" ]; then __mg_def() { return 1; }; else __mg_def() { command eval "__mg_f() { $__mg_c
}" 2>/dev/null; }; fi`;

/**
 * Makes every later command of the controller run as the script of its own `sh -c`, which
 * carries the session's marker in its environment from its `exec` on. For a blank controller
 * bound to a session in root mode: it was started before its session was known, so its own
 * environment, which a command's subshell and every process that subshell forks without an
 * `exec` shows in `/proc/<pid>/environ`, holds no session marker, and root mode finds a
 * session's processes by that marker alone (`/stop`); per-session mode finds them by their uid.
 */
export const CommandsAsScripts = "__mg_def() { return 1; }";

export interface CommandSpec {
  readonly command: string;
  readonly sessionHash: string;
  readonly commandId: string;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
}

const EnvName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Longest command (UTF-8 bytes) that {@link commandSubshell} may hand to an `sh -c` when it is
 * not a whole script on its own. Linux caps one exec argument at 128 KiB (`MAX_ARG_STRLEN`);
 * a longer one (a model writing a big file with a here-document) is evaluated in the subshell
 * instead, where no such cap applies.
 */
export const MaxScriptArgumentBytes = 100_000;

/**
 * One command in its own subshell: restore the session's exports and cwd, mark the
 * processes, run the command with stdin from /dev/null, and on any exit (including the
 * command's own `exit`) save cwd and exports back. Per-call `env` is not saved.
 * Expects `$__mg_s` to name the state file, `$__mg_sh` the shell and the shell to have run
 * {@link CommandFunction} on its first line.
 *
 * The command is the body of a function the subshell calls ({@link CommandFunction}), after
 * the trap that saves the state: its errors read as if the user had typed the command into
 * `sh` (`sh: foo: not found`, line numbers counted from the command's first line), never as
 * the gateway's wrapper (`sh: eval: line 40: …`), and nothing is exec'd for it. A command that
 * is not a whole script on its own (a syntax error) runs as the script of an `sh -c` instead,
 * so that `sh` reports it, after running the lines before it, as it would have; one over
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
  // The state file by its path, not `$__mg_s`: a command's `unset` must not stop the save.
  const save = `__mg_rc=$?; ${unset}export PWD; export -p >${shellQuote(stateFile(spec.sessionHash))}; exit $__mg_rc`;
  const trap = `trap ${shellQuote(save)} EXIT`;
  const fallback =
    Buffer.byteLength(spec.command) > MaxScriptArgumentBytes
      ? [trap, 'eval "$__mg_c"']
      : [
          FindSh,
          // No command name after the script: busybox would then add a `line 0:` to every
          // message. A failure goes to `__mg_retry` (E2BIG, see there).
          `"$__mg_x" -c ${shellQuote(`${trap}; `)}"$__mg_c" || __mg_retry "$?" ${shellQuote(save)}`,
        ];
  return [
    "(",
    ...head,
    `__mg_c=${shellQuote(spec.command)}`,
    `if __mg_def; then unset __mg_c; ${trap}; __mg_f; exit; fi`,
    ...fallback,
    ") </dev/null",
  ].join("\n");
}

/**
 * Found as plain `sh`, so a command's messages say `sh:`; the shell resolved at start when the
 * session's PATH no longer finds one.
 */
const FindSh = "command -v sh >/dev/null 2>&1 && __mg_x=sh || __mg_x=$__mg_sh";

/**
 * Defined once per controller ({@link openState}), called in a command's subshell when the
 * `sh -c` of a command that is not a whole script on its own failed: `__mg_retry <status>
 * <save>`. A 126 that `sh -c :` gets too means no exec can start with the session's
 * environment (an exported value over Linux's 128 KiB per string: E2BIG): the command never
 * ran, and it is evaluated in the subshell instead (saving the state with `save` on exit, with
 * no positional parameters, as `sh -c` would have run it), so its syntax error is still
 * reported. Any other status is returned as it is.
 */
const RetryFunction = `__mg_retry() {
  [ "$1" -eq 126 ] || return "$1"
  "$__mg_x" -c : 2>/dev/null && return 126
  __mg_t=$2
  set --
  trap "$__mg_t" EXIT
  eval "$__mg_c"
}`;

/** A fresh marker for {@link controllerCommand} and {@link oneShotCommand}. */
export function commandEndMarker(): string {
  return `__mediagate_end_${randomHex(12)}__`;
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
  // `sh -c` counts its script's first line as line 0: the function goes on line 1.
  return `
${CommandFunction}
${umask === undefined ? "" : `umask ${umask}\n`}${openState(spec.sessionHash)}
${commandSubshell(spec)}
${endMarkers(end)}`;
}
