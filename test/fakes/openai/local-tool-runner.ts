import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { ToolRunner } from "@mediagate/gateway";
import type { ExecResult } from "@mediagate/sandbox";

const ContainerWorkspace = "/workspace";

/** Thrown for a path outside the fake's `/workspace`. */
export class OutsideWorkspaceError extends Error {
  override readonly name = "OutsideWorkspaceError";
  readonly path: string;

  constructor(path: string) {
    super(`${path} is outside ${ContainerWorkspace} of the local test runner`);
    this.path = path;
  }
}

/**
 * A {@link ToolRunner} for agent tests that need no Docker: commands run with `/bin/sh` on
 * the host in a temp directory that stands for the container's `/workspace` (every
 * `/workspace` in a command line is rewritten to it; files outside it are refused).
 * Each command runs in its own process group, killed on timeout or abort. Not a sandbox:
 * test scripts only.
 */
export class LocalToolRunner implements ToolRunner {
  /** Host directory standing for `/workspace`. */
  readonly root: string;
  /** Every command started, as the agent sent it. */
  readonly commands: string[] = [];
  /** Every result returned, in order. */
  readonly results: ExecResult[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];

  constructor(root: string) {
    this.root = root;
  }

  /** The host path for a container path (absolute under `/workspace`, or relative to it). */
  hostPath(path: string): string {
    const inside = isAbsolute(path) ? relative(ContainerWorkspace, path) : path;
    const host = resolve(this.root, inside);
    const rel = relative(this.root, host);
    if (rel.startsWith("..") || isAbsolute(rel)) throw new OutsideWorkspaceError(path);
    return host;
  }

  /** Resolves once `count` commands have started. */
  waitForCommands(count: number): Promise<void> {
    if (this.commands.length >= count) return Promise.resolve();
    return new Promise((done) => this.#waiters.push({ count, resolve: done }));
  }

  run(
    command: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<ExecResult> {
    const started = Date.now();
    this.commands.push(command);
    const child = spawn("/bin/sh", ["-c", command.split(ContainerWorkspace).join(this.root)], {
      cwd: this.root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    let aborted = false;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup();
          }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    for (const waiter of [...this.#waiters]) {
      if (this.commands.length >= waiter.count) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }

    return new Promise((done, fail) => {
      child.once("error", fail);
      child.once("close", (code, signal) => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        const result: ExecResult = {
          exitCode: code ?? (signal === null ? 1 : 128 + 9),
          stdout,
          stderr,
          truncated: false,
          timedOut,
          aborted,
          durationMs: Date.now() - started,
        };
        this.results.push(result);
        done(result);
      });
    });
  }

  async readFile(path: string, maxBytes = 256 * 1024): Promise<string> {
    const bytes = await readFile(this.hostPath(path));
    return bytes.subarray(0, maxBytes).toString("utf8");
  }

  async writeFile(path: string, content: string): Promise<void> {
    const host = this.hostPath(path);
    await mkdir(dirname(host), { recursive: true });
    await writeFile(host, content);
  }

  /** Host path of a file under the workspace, for assertions. */
  file(name: string): string {
    return join(this.root, name);
  }
}
