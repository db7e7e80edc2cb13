import { spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { dockerHostVariable } from "../../../test-support/engine.js";

/**
 * The `mediagate` command an operator runs: the package's bin, which runs the bundled CLI that
 * `pnpm build` makes (`apps/gateway/dist/bundle/`).
 */
export const CliPath = fileURLToPath(
  new URL("../../../apps/gateway/bin/mediagate.js", import.meta.url),
);

/** How one CLI run ended: its exit code and everything it printed. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout and stderr together, for "never printed" checks. */
  readonly output: string;
}

/** A CLI process still running (e.g. `start`), with what it printed so far. */
export interface RunningCli {
  /** Everything printed to stdout so far. */
  stdout(): string;
  /** Everything printed to stderr so far. */
  stderr(): string;
  /** Its stdin, when spawned with `stdin: "pipe"` (else closed from the start). */
  readonly stdin: Writable | undefined;
  /** Sends `signal` (default SIGTERM) unless the process has ended. */
  signal(signal?: NodeJS.Signals): void;
  /** Resolves when the process has ended. */
  readonly ended: Promise<CliRun>;
}

/**
 * Runs `node apps/gateway/bin/mediagate.js <args>` with `env` on top of a minimal environment
 * (PATH, HOME pointing at `home`, and the test run's `DOCKER_HOST` when it has one, so the CLI
 * talks to the same engine as the test), stdin closed (so `start` on the console stops at once)
 * unless `stdin: "pipe"` asks for it to be written to. `stdout: "closed"` hands it a pipe whose
 * reader is gone before it starts (`mediagate … | head -1` once head has its line); a file
 * descriptor sends its stdout there (`/dev/full`: a full disk), and `stdout()` stays empty.
 * Bounded by `timeoutMs`, after which it is killed.
 */
export function spawnCli(
  args: readonly string[],
  options: {
    home: string;
    env?: Record<string, string>;
    timeoutMs?: number;
    stdin?: "ignore" | "pipe";
    stdout?: "pipe" | "closed" | number;
    /** Runs it as this user and group (the test runs as root), e.g. not the home's owner. */
    user?: { uid: number; gid: number };
  },
): RunningCli {
  const base: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: options.home,
    ...dockerHostVariable(),
  };
  const child = spawn(process.execPath, [CliPath, ...args], {
    env: { ...base, ...options.env },
    ...options.user,
    stdio: [
      options.stdin ?? "ignore",
      typeof options.stdout === "number" ? options.stdout : "pipe",
      "pipe",
    ],
  });
  if (options.stdout === "closed") child.stdout?.destroy();
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ended = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, output: stdout + stderr });
    });
  });
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    stdin: child.stdin ?? undefined,
    signal: (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    ended,
  };
}

/** Runs the CLI to its end (see {@link spawnCli}). */
export function runCli(
  args: readonly string[],
  options: {
    home: string;
    env?: Record<string, string>;
    timeoutMs?: number;
    stdout?: "pipe" | "closed" | number;
    user?: { uid: number; gid: number };
  },
): Promise<CliRun> {
  return spawnCli(args, options).ended;
}
