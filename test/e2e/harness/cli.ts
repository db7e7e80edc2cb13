import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built CLI (`pnpm build` makes it), run the way an operator runs it. */
export const CliPath = fileURLToPath(new URL("../../../apps/gateway/dist/cli.js", import.meta.url));

/** How one CLI run ended: its exit code and everything it printed. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout and stderr together, for "never printed" checks. */
  readonly output: string;
}

/**
 * Runs `node apps/gateway/dist/cli.js <args>` with `env` on top of a minimal environment
 * (PATH, HOME pointing at `home`, and the test run's `DOCKER_HOST` when it has one, so the CLI
 * talks to the same engine as the test), stdin closed (so `start` on the console stops at once).
 * Bounded by `timeoutMs`, after which it is killed.
 */
export function runCli(
  args: readonly string[],
  options: { home: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CliPath, ...args], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: options.home,
        ...(process.env.DOCKER_HOST === undefined ? {} : { DOCKER_HOST: process.env.DOCKER_HOST }),
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, output: stdout + stderr });
    });
  });
}
