import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pollFor } from "../../../test-support/wait.js";
import { DockerObserver } from "../../e2e/harness/docker-observer.js";
import { releaseMounts, TestImage, uniqueProfileName } from "../../e2e/harness/gateway-home.js";
import { installOf } from "../../e2e/harness/telegram-gateway.js";
import type { FakeTelegram } from "../../fakes/telegram/index.js";
import { describeExit, type GatewayExit, GatewayProcess } from "./gateway-process.js";
import { type SandboxCensus, takeCensus } from "./sandbox-census.js";

/** Options of {@link FaultBench.create}. */
export interface FaultBenchOptions {
  /** Names the temp dirs and the profile (`<prefix>-<8 hex>`). */
  readonly prefix: string;
  /** The Bot API the gateway talks to; it lives in the test process and outlives every run. */
  readonly fake: FakeTelegram;
  /** Telegram user ids allowed to use the bot. */
  readonly users: readonly number[];
  /** Root home; default `<work dir>/home` (give one on a special filesystem). */
  readonly home?: string;
  /** Extra `sandbox` keys (the test image and `diskLimitBytes: 0` are always set). */
  readonly sandbox?: Readonly<Record<string, unknown>>;
  /** Extra `telegram` keys (the token and API root are the fake's). */
  readonly telegram?: Readonly<Record<string, unknown>>;
  /** Other keys of the profile entry. */
  readonly profileSettings?: Readonly<Record<string, unknown>>;
  /** Top-level config keys (e.g. `concurrency`). */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Environment of every run, on top of the defaults of {@link GatewayProcess}. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * One install of the gateway driven through its CLI: a temp work dir (config file, logs, the
 * processes' HOME), a root home, one profile with a unique name served on Telegram by the
 * test's {@link FakeTelegram}. Starts, kills and restarts `mediagate start` processes one at a
 * time; `dispose()` removes every container of the install and the temp dirs.
 */
export class FaultBench {
  readonly docker = new DockerObserver();
  /** Every process started, in order. */
  readonly runs: GatewayProcess[] = [];
  /** Runs that ended without being told to (crashed, exited on their own). */
  readonly unexpectedExits: { run: number; exit: GatewayExit; tail: string }[] = [];
  readonly #expectedEnd = new Set<GatewayProcess>();

  private constructor(
    readonly workDir: string,
    readonly home: string,
    readonly profile: string,
    readonly configFile: string,
    private readonly env: Readonly<Record<string, string>>,
  ) {}

  static async create(options: FaultBenchOptions): Promise<FaultBench> {
    const workDir = await mkdtemp(join(tmpdir(), `mediagate-${options.prefix}-`));
    const home = options.home ?? join(workDir, "home");
    const profile = uniqueProfileName(options.prefix);
    const config = {
      home,
      ...options.settings,
      profiles: [
        {
          // Every message of the traffic is to be answered or told it was cut off: a backlog
          // that piles up while the gateway is down (or slow on a loaded machine) must not
          // meet the per-session queue cap (10 by default), whose overflow is one notice for
          // the burst and its messages not run (docs/sessions.md, "Busy sessions").
          maxQueuedMessages: 1000,
          ...options.profileSettings,
          name: profile,
          telegram: {
            // The traffic's group messages are plain commands for the bot.
            groups: { requireMention: false },
            ...options.telegram,
            token: options.fake.token,
            apiRoot: options.fake.apiRoot,
          },
          allowedUsers: options.users.map((id) => `telegram:${id}`),
          sandbox: { image: TestImage, diskLimitBytes: 0, ...options.sandbox },
        },
      ],
    };
    await mkdir(home, { recursive: true, mode: 0o700 });
    const configFile = join(workDir, "mediagate.yaml");
    // JSON is YAML; the loader reads it as the config file an operator writes.
    await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    return new FaultBench(workDir, home, profile, configFile, options.env ?? {});
  }

  /** The profile's home (a named profile lives under `<root>/profiles/<name>`). */
  get profileHome(): string {
    return join(this.home, "profiles", this.profile);
  }

  /** The install label value of this home (docs/security.md: from the root home's real path). */
  get install(): string {
    return installOf(this.home);
  }

  /** The process running now, if any. */
  get current(): GatewayProcess | undefined {
    const last = this.runs.at(-1);
    return last?.alive === true ? last : undefined;
  }

  /** Starts the next `mediagate start` and waits until it serves. */
  async start(): Promise<GatewayProcess> {
    if (this.current !== undefined) throw new Error("a gateway process is still running");
    const process = GatewayProcess.spawn({
      configFile: this.configFile,
      workDir: this.workDir,
      run: this.runs.length + 1,
      env: this.env,
    });
    this.runs.push(process);
    void process.exited.then((exit) => {
      if (!this.#expectedEnd.has(process)) {
        this.unexpectedExits.push({ run: process.run, exit, tail: process.tail() });
      }
    });
    await process.ready();
    return process;
  }

  /** SIGKILLs the running process (a crash, a power cut) and waits until it is gone. */
  async kill(): Promise<void> {
    const process = this.current;
    if (process === undefined) return;
    this.#expectedEnd.add(process);
    process.signal("SIGKILL");
    await process.exited;
  }

  /** SIGTERMs the running process (a service manager's stop) and waits for its end. */
  async terminate(timeoutMs?: number): Promise<GatewayExit> {
    const process = this.current;
    if (process === undefined) throw new Error("no gateway process is running");
    this.#expectedEnd.add(process);
    return process.stop("SIGTERM", timeoutMs);
  }

  /** Problems with how the processes ended: any that ended without being told to. */
  exitProblems(): string[] {
    return this.unexpectedExits.map(
      (e) => `gateway run ${e.run} ended on its own (${describeExit(e.exit)}):\n${e.tail}`,
    );
  }

  /** The profile's containers (as the engine lists them) and slot directories (on disk). */
  census(): Promise<SandboxCensus> {
    return takeCensus(this.docker, {
      install: this.install,
      profile: this.profile,
      profileHome: this.profileHome,
    });
  }

  /**
   * Takes a census every 250 ms until `done` holds for it or `timeoutMs` passed, and returns
   * the last one either way (the caller asserts on it, with its figures).
   */
  async censusUntil(
    done: (census: SandboxCensus) => boolean,
    timeoutMs: number,
  ): Promise<SandboxCensus> {
    let last: SandboxCensus | undefined;
    const found = await pollFor(
      async () => {
        last = await this.census();
        return done(last) ? last : undefined;
      },
      timeoutMs,
      250,
    );
    return found ?? last ?? this.census();
  }

  /** Every log line of every run, in order. */
  allOutput(): string {
    return this.runs.map((r) => `--- run ${r.run} ---\n${r.output}`).join("\n");
  }

  /**
   * Kills a process still running, removes every container carrying this install's label
   * (slot containers and slot-delete helpers alike), unmounts what is mounted below the home
   * and deletes the work dir. A home given from outside is left to its owner.
   */
  async dispose(): Promise<void> {
    await this.kill();
    const leftovers = await this.docker.containers({ "mediagate.install": this.install });
    for (const c of leftovers) await this.docker.removeForce(c.id);
    await releaseMounts(this.home);
    if (process.env.FAULT_KEEP_LOGS === undefined)
      await rm(this.workDir, { recursive: true, force: true });
  }
}
