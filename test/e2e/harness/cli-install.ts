import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CliRun, type RunningCli, spawnCli } from "./cli.js";
import { DockerObserver } from "./docker-observer.js";
import { releaseMounts, TestImage, uniqueProfileName, waitUntil } from "./gateway-home.js";
import { installOf } from "./telegram-gateway.js";

/**
 * One install driven through the real CLI, for tests that crash it: a temp work dir (the
 * config file, the processes' HOME), a root home, and one profile with a unique name whose
 * channel keys the test gives. `start()` runs `mediagate start` until its channel is up,
 * `kill()` SIGKILLs it (a crash), `dispose()` removes the install's containers and the dirs.
 */
export class CliInstall {
  readonly #docker = new DockerObserver();
  readonly #runs: RunningCli[] = [];

  private constructor(
    readonly workDir: string,
    readonly home: string,
    readonly profile: string,
    readonly configFile: string,
  ) {}

  /**
   * @param profile the profile entry (channel keys, users); its name, when absent, is a unique
   *   one; its `sandbox`, when given, is laid over the test image without a disk ceiling.
   */
  static async create(
    prefix: string,
    profile: Readonly<Record<string, unknown>>,
    settings: Readonly<Record<string, unknown>> = {},
  ): Promise<CliInstall> {
    const workDir = await mkdtemp(join(tmpdir(), `mediagate-${prefix}-`));
    const home = join(workDir, "home");
    await mkdir(home, { recursive: true, mode: 0o700 });
    // Replicas of one cluster share their profile's name (test/e2e/cluster-sessions.long.test.ts).
    const name = typeof profile.name === "string" ? profile.name : uniqueProfileName(prefix);
    const config = {
      home,
      ...settings,
      profiles: [
        {
          ...profile,
          name,
          sandbox: { image: TestImage, diskLimitBytes: 0, ...(profile.sandbox ?? {}) },
        },
      ],
    };
    const configFile = join(workDir, "mediagate.yaml");
    // JSON is YAML; the loader reads it as the config file an operator writes.
    await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    return new CliInstall(workDir, home, name, configFile);
  }

  /** Starts `mediagate start` and waits until its channel started. */
  async start(): Promise<RunningCli> {
    const run = spawnCli(["start", "-c", this.configFile], {
      home: this.workDir,
      env: { LOG_LEVEL: "debug" },
      timeoutMs: 120_000,
    });
    this.#runs.push(run);
    await waitUntil(
      () => run.stderr().includes('"msg":"channel started"'),
      "the gateway's channel to start",
    );
    return run;
  }

  /** Everything every run printed, in order. */
  output(): string {
    return this.#runs.map((run) => run.stdout() + run.stderr()).join("\n");
  }

  /**
   * Whether `path` exists in one of the install's running containers: a command that touches
   * it first is running there (its turn ran its first command).
   */
  async hasFile(path: string): Promise<boolean> {
    const running = (
      await this.#docker.containers({ "mediagate.install": installOf(this.home) })
    ).filter((c) => c.state === "running");
    for (const c of running) {
      if ((await this.#docker.exec(c.id, ["test", "-f", path])).exitCode === 0) return true;
    }
    return false;
  }

  /** SIGKILLs the running process (a crash) and waits until it is gone. */
  async kill(): Promise<CliRun | undefined> {
    const run = this.#runs.at(-1);
    run?.signal("SIGKILL");
    return run?.ended;
  }

  /** Kills what still runs, removes the install's containers, its mounts and the work dir. */
  async dispose(): Promise<void> {
    for (const run of this.#runs) run.signal("SIGKILL");
    await Promise.all(this.#runs.map((run) => run.ended));
    const leftovers = await this.#docker.containers({ "mediagate.install": installOf(this.home) });
    for (const c of leftovers) await this.#docker.removeForce(c.id);
    await releaseMounts(this.home);
    await rm(this.workDir, { recursive: true, force: true });
  }
}
