import type { Duplex } from "node:stream";
import { deadline, settledWithin, sleep } from "@mediagate/io";
import type Docker from "dockerode";
import { boundedCall } from "./bounded-call.js";
import { throwIfLost } from "./container-loss.js";
import { Defaults } from "./defaults.js";
import type { ContainerLostError } from "./errors.js";
import { type ExecUser, userSpec } from "./exec-user.js";
import { readFrames, StreamType } from "./frames.js";
import { exactEntry, KillScript, type KillSelection, killArguments } from "./kill-script.js";
import { MarkerScanner, OutputBuffer } from "./output.js";
import { randomHex } from "./random-hex.js";
import { ExecMarker } from "./shell-scripts.js";
import type { ExecResult, OutputListener } from "./types.js";

/** Options of one `docker exec` round trip. */
export interface OneShotOptions {
  readonly timeoutMs?: number | undefined;
  readonly maxOutputBytes?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** See `ExecOptions.onOutput`. */
  readonly onOutput?: OutputListener | undefined;
  /**
   * Mark the exec's processes and kill them on timeout/abort (default). Off for the
   * gateway's own housekeeping (the killer itself, the uid claim): those are bounded
   * scripts, and unmarked they never match a kill aimed at user processes.
   */
  readonly killOnStop?: boolean;
  /** Who the exec runs as (`User: "uid:gid"`); default the image's user. */
  readonly user?: ExecUser | undefined;
  /**
   * Who may kill the exec's processes when its own uid cannot (the kill exec fails, e.g.
   * the uid is at its process limit): this user then kills every process of the exec's uid.
   */
  readonly rescuer?: ExecUser | undefined;
  /**
   * The command ends its output with this marker (`oneShotCommand`): the exec is over when
   * the marker came on both streams, with the exit status after it on stdout, though a job
   * it started in the background still holds the streams open. Without one, the exec is
   * over when its streams close (which the engine delays until every holder closed them or
   * it gave up waiting, 2 s after the process ended on Docker 20.10).
   */
  readonly endMarker?: string | undefined;
}

/**
 * Starts `argv` with `docker exec` and its stdin attached (Tty false): one hijacked duplex
 * stream, what is written to it the process's stdin, its stdout and stderr multiplexed in
 * Docker's frames. For the processes the sandbox talks to (a session shell's controller, a
 * warm container's uid hand-over).
 */
export async function startAttached(
  docker: Docker,
  containerId: string,
  argv: readonly string[],
  options: { readonly env?: readonly string[]; readonly user?: ExecUser | undefined } = {},
): Promise<Duplex> {
  return (await startAttachedExec(docker, containerId, argv, options)).stream;
}

/** {@link startAttached}, with the exec itself (to ask the engine how it ended). */
export async function startAttachedExec(
  docker: Docker,
  containerId: string,
  argv: readonly string[],
  options: { readonly env?: readonly string[]; readonly user?: ExecUser | undefined } = {},
): Promise<{ readonly exec: Docker.Exec; readonly stream: Duplex }> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: [...argv],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Env: [...(options.env ?? [])],
    ...(options.user === undefined ? {} : { User: userSpec(options.user) }),
  });
  const stream = (await exec.start({
    hijack: true,
    stdin: true,
    Detach: false,
    Tty: false,
  })) as Duplex;
  return { exec, stream };
}

/**
 * Runs `argv` once with `docker exec` (Tty false, stdout/stderr demultiplexed). Every
 * process it starts carries `MEDIAGATE_EXEC=<id>`: Docker has no exec-kill API, so a
 * timeout or abort kills them through a second exec running {@link KillScript} as the
 * same user (reading another uid's environment needs `CAP_SYS_PTRACE`, which no sandbox
 * process has). Errors from `exec`/`start` (404 missing container, 409 not running)
 * propagate. A stream that ends without an exit code, or with a signal's, while the
 * container is no longer running (or the engine no longer answers) throws
 * {@link ContainerLostError}: the sandbox went away, the command did not finish.
 */
export async function execOnce(
  docker: Docker,
  containerId: string,
  argv: readonly string[],
  options: OneShotOptions = {},
): Promise<ExecResult> {
  const started = performance.now();
  const cap = options.maxOutputBytes ?? Defaults.maxOutputBytes;
  const listener = options.onOutput;
  const stdout = new OutputBuffer(cap, listener && ((chunk) => listener(chunk, "stdout")));
  const stderr = new OutputBuffer(cap, listener && ((chunk) => listener(chunk, "stderr")));
  const result = (exitCode: number, timedOut: boolean, aborted: boolean): ExecResult => ({
    exitCode,
    stdout: stdout.text(),
    stderr: stderr.text(),
    truncated: stdout.truncated || stderr.truncated,
    timedOut,
    aborted,
    durationMs: performance.now() - started,
  });
  if (options.signal?.aborted) return result(-1, false, true);

  const killOnStop = options.killOnStop !== false;
  const markerId = randomHex(8);
  const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
  const container = docker.getContainer(containerId);
  const exec = await container.exec({
    Cmd: [...argv],
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Env: killOnStop ? [...env, `${ExecMarker}=${markerId}`] : env,
    ...(options.cwd === undefined ? {} : { WorkingDir: options.cwd }),
    ...(options.user === undefined ? {} : { User: userSpec(options.user) }),
  });
  const stream = (await exec.start({
    hijack: true,
    stdin: false,
    Detach: false,
    Tty: false,
  })) as Duplex;
  const out = new Sink(options.endMarker, stdout);
  const err = new Sink(options.endMarker, stderr);
  let reported = () => {};
  const marked = new Promise<void>((resolve) => (reported = resolve));
  const streamed = readFrames(stream, (type, payload) => {
    (type === StreamType.stderr ? err : out).push(payload);
    if (out.done && err.done) reported();
  });
  const ended = Promise.race([streamed, marked]);

  let stopReason: "timeout" | "abort" | undefined;
  const timeoutMs = options.timeoutMs ?? Defaults.execTimeoutMs;
  try {
    await deadline(ended, { timeoutMs, what: "exec", signal: options.signal });
  } catch {
    // The caller's signal decides: its reason may be a DeadlineError of its own (a turn's).
    const reason = options.signal?.aborted ? "abort" : "timeout";
    // One that ended as its time ran out (its end marker came, or its kill found nothing of
    // it left and then its streams closed) is reported as it ended, not as stopped.
    let stopped = !out.done;
    if (stopped && killOnStop) {
      const killed = await killExec(docker, containerId, markerId, options);
      stopped = !(await settledWithin(ended, Defaults.killGraceMs)) || killed > 0;
    } else await settledWithin(ended, Defaults.killGraceMs);
    if (stopped) stopReason = reason;
  }
  stream.destroy();
  out.flush();
  err.flush();
  const exitCode = out.status ?? (await exitCodeOf(exec));
  // No exit code, or death by a signal: that is also what a removed or stopped container
  // (or a killed engine) leaves. Only the container's state tells them apart.
  if (stopReason === undefined && (exitCode < 0 || exitCode > 128)) {
    await throwIfLost(docker, containerId);
  }
  return result(exitCode, stopReason === "timeout", stopReason === "abort");
}

/** One stream of an exec into its buffer, up to the end marker when the command has one. */
class Sink {
  readonly #scanner: MarkerScanner | undefined;
  readonly #buffer: OutputBuffer;

  constructor(endMarker: string | undefined, buffer: OutputBuffer) {
    this.#buffer = buffer;
    this.#scanner =
      endMarker === undefined ? undefined : new MarkerScanner(endMarker, (c) => buffer.push(c));
  }

  push(payload: Buffer): void {
    if (this.#scanner === undefined) this.#buffer.push(payload);
    else this.#scanner.push(payload);
  }

  /** The marker came (never without one). */
  get done(): boolean {
    return this.#scanner?.done === true;
  }

  /** The exit status the marker's line carried, if it came with one. */
  get status(): number | undefined {
    const code = Number.parseInt(this.#scanner?.trailer ?? "", 10);
    return Number.isNaN(code) ? undefined : code;
  }

  /** Passes on what was held back as a possible start of the marker (the stream ended). */
  flush(): void {
    this.#scanner?.flush();
  }
}

/**
 * Kills a stopped one-shot exec's processes: by its marker, else every process of its uid.
 * Returns how many were killed, a kill that failed counting as one.
 */
async function killExec(
  docker: Docker,
  containerId: string,
  markerId: string,
  options: OneShotOptions,
): Promise<number> {
  const marked = { environ: exactEntry(ExecMarker, markerId) };
  try {
    return await killProcesses(docker, containerId, marked, options.user);
  } catch {
    const uid = options.user?.uid;
    if (uid === undefined || uid === 0 || options.rescuer === undefined) return 1;
    return await killProcesses(
      docker,
      containerId,
      { uids: { min: uid, max: uid } },
      options.rescuer,
    ).catch(() => 1);
  }
}

/**
 * Kills every process of a selection inside the container (see {@link KillScript}),
 * running the killer as `user` (default the image's user). Returns how many processes were
 * killed; throws when the killer could not run to its end (so the caller can try another
 * way, e.g. as root when the session's uid is at its process limit).
 */
export async function killProcesses(
  docker: Docker,
  containerId: string,
  selection: KillSelection,
  user?: ExecUser,
): Promise<number> {
  const argv = ["sh", "-c", KillScript, "mediagate-kill", ...killArguments(selection)];
  const outcome = await execOnce(docker, containerId, argv, {
    timeoutMs: Defaults.operationTimeoutMs,
    killOnStop: false,
    user,
  });
  const answer = outcome.stdout.trim();
  if (outcome.exitCode !== 0 || !/^\d+$/.test(answer)) {
    throw new Error(
      `the kill exec failed (exit code ${outcome.exitCode}): ${outcome.stderr.trim().slice(0, 200)}`,
    );
  }
  return Number.parseInt(answer, 10);
}

/**
 * Exit code once Docker has recorded it (the stream can end a moment before); -1 when the
 * engine does not say (the exec is gone with its container, or the engine is).
 */
export async function exitCodeOf(exec: Docker.Exec): Promise<number> {
  const bound = { timeoutMs: Defaults.operationTimeoutMs };
  for (let attempt = 0; attempt < 50; attempt++) {
    const info = await boundedCall("exec inspect", bound, (abortSignal) =>
      exec.inspect({ abortSignal }),
    ).catch(() => undefined);
    if (info === undefined) return -1;
    if (!info.Running && typeof info.ExitCode === "number") return info.ExitCode;
    await sleep(attempt < 10 ? 2 : 20);
  }
  return -1;
}
