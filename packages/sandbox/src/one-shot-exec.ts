import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { FrameDecoder, StreamType } from "./frames.js";
import { OutputBuffer } from "./output.js";
import { ExecMarker, KillScript } from "./shell-scripts.js";
import type { ExecResult } from "./types.js";

/** Options of one `docker exec` round trip. */
export interface OneShotOptions {
  readonly timeoutMs?: number | undefined;
  readonly maxOutputBytes?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** Kill the process in the container on timeout/abort (off for the killer itself). */
  readonly killOnStop?: boolean;
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

/**
 * Runs `argv` once with `docker exec` (Tty false, stdout/stderr demultiplexed). Every
 * process it starts carries `MEDIAGATE_EXEC=<id>`: Docker has no exec-kill API, so a
 * timeout or abort kills them through a second exec running {@link KillScript}.
 * Errors from `exec`/`start` (404 missing container, 409 not running) propagate.
 */
export async function execOnce(
  docker: Docker,
  containerId: string,
  argv: readonly string[],
  options: OneShotOptions = {},
): Promise<ExecResult> {
  const started = performance.now();
  const cap = options.maxOutputBytes ?? Defaults.maxOutputBytes;
  const stdout = new OutputBuffer(cap);
  const stderr = new OutputBuffer(cap);
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

  const marker = `${ExecMarker}=${randomHex(8)}`;
  const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
  const container = docker.getContainer(containerId);
  const exec = await container.exec({
    Cmd: [...argv],
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Env: [...env, marker],
    ...(options.cwd === undefined ? {} : { WorkingDir: options.cwd }),
  });
  const stream = (await exec.start({
    hijack: true,
    stdin: false,
    Detach: false,
    Tty: false,
  })) as Duplex;
  const decoder = new FrameDecoder((type, payload) => {
    if (type === StreamType.stderr) stderr.push(payload);
    else stdout.push(payload);
  });
  stream.on("data", (chunk: Buffer) => decoder.push(chunk));
  const ended = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.on("error", () => resolve());
  });

  let stopReason: "timeout" | "abort" | undefined;
  let onStop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    onStop = resolve;
  });
  const stop = (reason: "timeout" | "abort") => {
    stopReason ??= reason;
    onStop();
  };
  const timer = setTimeout(() => stop("timeout"), options.timeoutMs ?? Defaults.execTimeoutMs);
  const onAbort = () => stop("abort");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) stop("abort");
  try {
    await Promise.race([ended, stopped]);
    if (stopReason !== undefined) {
      if (options.killOnStop !== false) {
        await killMarked(docker, containerId, marker).catch(() => 0);
      }
      await Promise.race([ended, delay(Defaults.killGraceMs)]);
      stream.destroy();
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
  const exitCode = await exitCodeOf(exec);
  return result(exitCode, stopReason === "timeout", stopReason === "abort");
}

/**
 * Kills every process of a group inside the container (see {@link KillScript}): those
 * whose environment holds `marker` (`NAME=value`), and the children of `parentPid`.
 * Returns how many processes were killed.
 */
export async function killMarked(
  docker: Docker,
  containerId: string,
  marker: string,
  parentPid?: number,
): Promise<number> {
  const argv = ["sh", "-c", KillScript, "mediagate-kill", marker, parentPid?.toString() ?? ""];
  const outcome = await execOnce(docker, containerId, argv, {
    timeoutMs: Defaults.operationTimeoutMs,
    killOnStop: false,
  });
  const count = Number.parseInt(outcome.stdout.trim(), 10);
  return Number.isNaN(count) ? 0 : count;
}

/** Exit code once Docker has recorded it (the stream can end a moment before). */
async function exitCodeOf(exec: Docker.Exec): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const info = await exec.inspect().catch(() => undefined);
    if (info === undefined) return -1;
    if (!info.Running && typeof info.ExitCode === "number") return info.ExitCode;
    await delay(attempt < 10 ? 2 : 20);
  }
  return -1;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
