import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { join } from "node:path";
import { dockerHostVariable } from "../../../test-support/engine.js";
import { pollFor } from "../../../test-support/wait.js";
import { CliPath } from "../../e2e/harness/cli.js";

/** How a gateway process ended. */
export interface GatewayExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Options of {@link GatewayProcess.spawn}. */
export interface GatewayProcessOptions {
  readonly configFile: string;
  /** `HOME` of the process and where its log file goes (`gateway-<run>.log`). */
  readonly workDir: string;
  /** Which start this is (1, 2, …), for log names and messages. */
  readonly run: number;
  /** Variables on top of PATH, HOME, LOG_LEVEL (and DOCKER_HOST when the test has one). */
  readonly env?: Readonly<Record<string, string>>;
}

/** The line `mediagate start` prints once every channel is up. */
const ServingLine = /^mediagate: serving /m;

/**
 * One `node apps/gateway/bin/mediagate.js start --config <file>` process, run as an operator
 * runs it. Its stdout and stderr (pino JSON lines and the CLI's own lines) go to
 * `<workDir>/gateway-<run>.log` and are kept in memory for assertions and failure messages.
 */
export class GatewayProcess {
  readonly run: number;
  readonly logFile: string;
  /** Resolves when the process has ended (never rejects). */
  readonly exited: Promise<GatewayExit>;
  /** When it was spawned (epoch ms). */
  readonly spawnedAtMs = Date.now();
  /** When it printed that it serves (epoch ms), once it did. */
  readyAtMs: number | undefined;
  /** When it ended (epoch ms), once it did. */
  exitedAtMs: number | undefined;
  #output = "";
  #exit: GatewayExit | undefined;
  readonly #child: ChildProcess;
  readonly #log: WriteStream;

  private constructor(options: GatewayProcessOptions) {
    this.run = options.run;
    this.logFile = join(options.workDir, `gateway-${options.run}.log`);
    this.#log = createWriteStream(this.logFile);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: options.workDir,
      LOG_LEVEL: process.env.FAULT_LOG_LEVEL ?? "info",
      ...dockerHostVariable(),
      ...options.env,
    };
    this.#child = spawn(process.execPath, [CliPath, "start", "--config", options.configFile], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const collect = (chunk: Buffer) => {
      this.#output += chunk.toString();
      this.#log.write(chunk);
    };
    this.#child.stdout?.on("data", collect);
    this.#child.stderr?.on("data", collect);
    this.exited = new Promise((resolve) => {
      this.#child.on("error", (error) => {
        this.#output += `\n[spawn failed: ${error.message}]\n`;
      });
      this.#child.on("close", (code, signal) => {
        this.exitedAtMs = Date.now();
        this.#exit = { code, signal };
        this.#log.end();
        resolve(this.#exit);
      });
    });
  }

  /** Starts the CLI; see {@link ready} to wait until it serves. */
  static spawn(options: GatewayProcessOptions): GatewayProcess {
    return new GatewayProcess(options);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Everything it printed so far. */
  get output(): string {
    return this.#output;
  }

  /** Whether it is still running. */
  get alive(): boolean {
    return this.#exit === undefined;
  }

  /** The last `lines` lines it printed, for failure messages. */
  tail(lines = 30): string {
    return this.#output.trimEnd().split("\n").slice(-lines).join("\n");
  }

  /**
   * Resolves once the CLI printed that it serves (every channel started); rejects with its
   * output when it exits first or does not get there within `timeoutMs`.
   */
  async ready(timeoutMs = 60_000): Promise<void> {
    const serving = await pollFor(() => {
      if (ServingLine.test(this.#output)) return true;
      if (this.#exit !== undefined) {
        throw new Error(
          `gateway run ${this.run} exited (${describeExit(this.#exit)}) before serving:\n${this.tail()}`,
        );
      }
      return undefined;
    }, timeoutMs);
    if (serving === undefined) {
      throw new Error(`gateway run ${this.run} not serving after ${timeoutMs} ms:\n${this.tail()}`);
    }
    this.readyAtMs ??= Date.now();
  }

  /** Sends `signal` (no-op once it has ended). */
  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.#child.kill(signal);
  }

  /**
   * Sends `signal` and waits for the end; a process still running after `timeoutMs` is
   * SIGKILLed and the call rejects (a graceful stop that hangs is a finding, not a pass).
   */
  async stop(signal: NodeJS.Signals, timeoutMs = 90_000): Promise<GatewayExit> {
    this.signal(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const result = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (result === "timeout") {
      this.signal("SIGKILL");
      await this.exited;
      throw new Error(
        `gateway run ${this.run} did not end within ${timeoutMs} ms of ${signal}:\n${this.tail()}`,
      );
    }
    return result;
  }
}

/** `code 0`, `signal SIGKILL`, … */
export function describeExit(exit: GatewayExit): string {
  return exit.signal === null ? `code ${exit.code}` : `signal ${exit.signal}`;
}
