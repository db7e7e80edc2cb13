import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { connectDocker } from "@mediagate/sandbox";
import { pollFor } from "../../test-support/wait.js";

const run = promisify(execFile);

/**
 * A Docker engine of the test's own: a second `dockerd` with its own data root, exec root
 * (and so its own containerd) and socket, so a test can SIGKILL "the engine" mid-command
 * without touching the engine everyone else's tests (and other users of this machine) run
 * on. It is killed by its pid, never by name. It runs in a network namespace of its own
 * (`unshare --net`, which execs dockerd in place, so the pid is dockerd's) with no bridge and
 * no iptables rules, so it never touches the host's network; sandbox containers run with
 * network `none` anyway.
 */
export class PrivateEngine {
  readonly dir: string;
  /** `unix://…/docker.sock`, the endpoint to hand to `connectDocker({ host })`. */
  readonly host: string;
  #daemon: ChildProcess | undefined;

  private constructor(dir: string) {
    this.dir = dir;
    this.host = `unix://${join(dir, "docker.sock")}`;
  }

  /** Starts the engine and loads `image` into it from the main engine (nothing is pulled). */
  static async start(image: string): Promise<PrivateEngine> {
    const engine = new PrivateEngine(await mkdtemp("/tmp/mg-engine-"));
    await engine.restart();
    execFileSync("sh", [
      "-c",
      `docker save "$1" | docker -H "$2" load -q`,
      "load",
      image,
      engine.host,
    ]);
    return engine;
  }

  get running(): boolean {
    return this.#daemon !== undefined;
  }

  /** Where `dockerd` records the pid of the containerd it started. */
  get #containerdPidFile(): string {
    return join(this.dir, "exec", "containerd", "containerd.pid");
  }

  /**
   * (Re)starts `dockerd` and waits until it answers (it finds its containers again). A
   * containerd pid file left by a killed engine is removed once that process has ended
   * (a zombie counts: `dockerd` would take it for a live containerd and wait for it).
   */
  async restart(): Promise<void> {
    if (this.#daemon !== undefined) return;
    const containerd = await readPid(this.#containerdPidFile);
    if (containerd !== undefined && !(await isRunning(containerd))) {
      await rm(this.#containerdPidFile, { force: true });
    }
    const log = openSync(join(this.dir, "dockerd.log"), "a");
    // Its own network namespace: a dockerd without a bridge deletes the host's `docker0`
    // at start (it takes it for a stale one of its own), which the shared engine uses.
    const daemon = spawn(
      "unshare",
      [
        "--net",
        "--",
        "dockerd",
        `--data-root=${join(this.dir, "data")}`,
        `--exec-root=${join(this.dir, "exec")}`,
        `--pidfile=${join(this.dir, "dockerd.pid")}`,
        `--host=${this.host}`,
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-masq=false",
      ],
      { stdio: ["ignore", log, log] },
    );
    closeSync(log);
    this.#daemon = daemon;
    daemon.once("exit", () => {
      if (this.#daemon === daemon) this.#daemon = undefined;
    });
    await this.#answers();
  }

  /** SIGKILLs `dockerd` (its containerd dies with it; the containers' shims live on). */
  async kill(): Promise<void> {
    const daemon = this.#daemon;
    if (daemon === undefined) return;
    const exited = once(daemon, "exit");
    daemon.kill("SIGKILL");
    await exited;
    // Its containerd gets SIGKILL when it dies; wait until that has happened too.
    const containerd = await readPid(this.#containerdPidFile);
    if (containerd !== undefined) {
      await pollFor(async () => ((await isRunning(containerd)) ? undefined : true), 10_000);
    }
  }

  /** Polls until the engine answers a ping (60 s bound, so a broken start fails the test). */
  async #answers(): Promise<void> {
    const engine = connectDocker({ host: this.host });
    let refused: unknown;
    const answered = await pollFor(
      async () => {
        if (this.#daemon === undefined) {
          throw new Error(`dockerd exited; see ${join(this.dir, "dockerd.log")}`);
        }
        try {
          await engine.ping();
          return true;
        } catch (error) {
          refused = error;
          return undefined;
        }
      },
      60_000,
      100,
    );
    if (answered === undefined) throw refused;
  }

  /** Ids of the engine's containers (carrying `label`, `key=value`, if given), any state. */
  async containers(label?: string): Promise<string[]> {
    const filter = label === undefined ? [] : ["--filter", `label=${label}`];
    const { stdout } = await run("docker", ["-H", this.host, "ps", "-aq", "--no-trunc", ...filter]);
    return stdout.split("\n").filter(Boolean);
  }

  /** Force-removes a container (a test's cleanup). */
  async remove(containerId: string): Promise<void> {
    await run("docker", ["-H", this.host, "rm", "-f", "-v", containerId]);
  }

  /** The command lines of the processes in a running container (none when it cannot run). */
  async processes(containerId: string): Promise<string[]> {
    const argv = ["-H", this.host, "exec", containerId, "ps", "-o", "args"];
    const ps = await run("docker", argv).catch(() => ({ stdout: "" }));
    return ps.stdout.split("\n").slice(1);
  }

  /**
   * Removes every container, stops the engine, ends what is left of it (the shims and
   * container processes of an engine that could not be started again, by the pids their
   * state directories record), unmounts what it mounted under its directory and deletes it.
   */
  async dispose(): Promise<void> {
    if (this.#daemon === undefined) await this.restart().catch(() => undefined);
    const daemon = this.#daemon;
    if (daemon !== undefined) {
      for (const id of await this.containers()) await this.remove(id);
      const exited = once(daemon, "exit");
      daemon.kill("SIGTERM");
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000)),
      ]);
      if (!stopped) await this.kill();
    }
    const tasks = join(this.dir, "exec", "containerd", "daemon", "io.containerd.runtime.v2.task");
    const left = await readdir(join(tasks, "moby")).catch(() => []);
    for (const id of left) {
      for (const file of ["init.pid", "shim.pid"]) {
        const pid = await readPid(join(tasks, "moby", id, file));
        if (pid !== undefined && (await isRunning(pid))) process.kill(pid, "SIGKILL");
      }
    }
    const info = await readFile("/proc/self/mountinfo", "utf8");
    const points = info
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((point) => point === this.dir || point.startsWith(`${this.dir}/`));
    for (const point of points.reverse()) execFileSync("umount", ["-l", point]);
    await rm(this.dir, { recursive: true, force: true });
  }
}

async function readPid(file: string): Promise<number | undefined> {
  const text = await readFile(file, "utf8").catch(() => "");
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Whether `pid` exists and is not a zombie (from `/proc/<pid>/stat`, which never blocks). */
async function isRunning(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  if (stat === "") return false;
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
}
