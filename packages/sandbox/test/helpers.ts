import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Schedule } from "@mediagate/io";
import type Docker from "dockerode";
import { expect } from "vitest";
import { testDockerHost, testShellChannel, testWarmPool } from "../../../test-support/engine.js";

export { testShellChannel };

import { waitFor, waitUntil } from "../../../test-support/wait.js";
import { dockerOf } from "../src/docker-client.js";
import {
  connectDocker,
  Defaults,
  type DockerEngine,
  installIdOf,
  LabelKeys,
  Sandbox,
  type SandboxSettings,
} from "../src/index.js";
import type { ContainerOwner } from "../src/labels.js";

export const TestImage = "mediagate-sandbox:test";

/**
 * The engine the tests run against: `DOCKER_HOST` when the test run sets one (any scheme
 * `connectDocker` takes), else the default socket. Every sandbox and raw client of the tests
 * is made from it, so a run against another engine never touches the default one.
 */
export function testEngine(): DockerEngine {
  return connectDocker({ host: testDockerHost() });
}

/** A raw client for assertions and for setting up containers the sandbox did not make. */
export const docker: Docker = dockerOf(testEngine());

/**
 * The package defaults with the test image and no disk ceiling: each slot with a ceiling
 * holds a loop device while its directory exists, and only the tests about the ceiling need
 * one (they ask for it with `diskLimitBytes`).
 */
export function testSettings(overrides: Partial<SandboxSettings> = {}): SandboxSettings {
  return { ...Defaults.settings, image: TestImage, diskLimitBytes: 0, ...overrides };
}

/** A profile name no other test run uses, so runs never see each other's containers. */
export function uniqueProfile(): string {
  return `t-${randomBytes(5).toString("hex")}`;
}

export interface Fixture {
  readonly profile: string;
  /** The root home (temp dir, or the home of the fixture given to `fixture({ home })`). */
  readonly home: string;
  /** The install id of `home`, as its sandboxes label their containers. */
  readonly install: string;
  /** Install and profile: what `containerLabels` needs to label a container as this fixture's. */
  readonly owner: ContainerOwner;
  sandbox(
    overrides?: Partial<SandboxSettings>,
    extra?: {
      now?: () => number;
      idleCleanupMs?: number;
      provisionTimeoutMs?: number;
      schedule?: Schedule;
      onWarning?: (message: string, cause?: unknown) => void;
    },
  ): Sandbox;
  /** Removes every container labelled with this fixture's profile and its temp home. */
  dispose(): Promise<void>;
}

/**
 * A unique profile in a fresh temp root home. With `home`: a profile of that install (the
 * home is then left to the fixture that made it). With `profile`: that profile name (e.g.
 * the same name in another install; disposing either removes both's containers).
 */
export async function fixture(options: { home?: string; profile?: string } = {}): Promise<Fixture> {
  const profile = options.profile ?? uniqueProfile();
  const home = options.home ?? (await mkdtemp(join(tmpdir(), "mg-sandbox-")));
  const install = installIdOf(home);
  const made: Sandbox[] = [];
  return {
    profile,
    home,
    install,
    owner: { install, profile },
    sandbox(overrides = {}, extra = {}) {
      const warmPool = testWarmPool();
      const channel = testShellChannel() === "exec" ? { shellChannel: "exec" as const } : {};
      const pooled =
        warmPool > 0
          ? { persistent: false, warmPool, ...channel, ...overrides }
          : { ...channel, ...overrides };
      const sandbox = new Sandbox({
        engine: testEngine(),
        profile,
        profileHome: join(home, "profiles", profile),
        rootHome: home,
        settings: testSettings(pooled),
        ...(extra.now === undefined ? {} : { now: extra.now }),
        ...(extra.idleCleanupMs === undefined ? {} : { idleCleanupMs: extra.idleCleanupMs }),
        ...(extra.schedule === undefined ? {} : { schedule: extra.schedule }),
        ...(extra.onWarning === undefined ? {} : { onWarning: extra.onWarning }),
        ...(extra.provisionTimeoutMs === undefined
          ? {}
          : { provisionTimeoutMs: extra.provisionTimeoutMs }),
      });
      made.push(sandbox);
      if (warmPool > 0) void sandbox.warmUp();
      return sandbox;
    },
    async dispose() {
      for (const sandbox of made) await sandbox.shutdown(5_000);
      await removeProfileContainers(profile);
      // A failed test can leave acquires in flight; sweep again once they have landed.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await removeProfileContainers(profile);
      await releaseMounts(home);
      if (options.home === undefined) await rm(home, { recursive: true, force: true });
    },
  };
}

/**
 * Unmounts every filesystem mounted at or below `dir` (slot disks a test left mounted; their
 * loop devices go with them), deepest first, once no container holds them.
 */
export async function releaseMounts(dir: string): Promise<void> {
  for (const point of (await mountsUnder(dir)).reverse()) {
    execFileSync("umount", [point]);
  }
}

/** Mount points at or below `dir`, in mount order (from /proc/self/mountinfo). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/** Loop devices whose backing file lies at or below `dir` (`losetup -a`). */
export function loopDevicesUnder(dir: string): string[] {
  const listed = execFileSync("losetup", ["-a"], { encoding: "utf8" });
  return listed.split("\n").filter((line) => line.includes(`${dir}/`));
}

/**
 * Waits until no loop device is backed by a file at or below `dir`. A slot disk's loop device
 * is set to clear itself when its mount goes (`mount -o loop`), but the kernel detaches it a
 * moment after `umount` returns (the release runs on a workqueue): `losetup -a` read at once
 * may still list it. Rejects with the last listing when one is still there after the wait.
 */
export async function loopDevicesGone(dir: string): Promise<void> {
  await waitFor(() => expect(loopDevicesUnder(dir)).toEqual([]));
}

/** Removes every container labelled with the profile: its slots' and its delete containers. */
export async function removeProfileContainers(profile: string): Promise<void> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${LabelKeys.profile}=${profile}`] },
  });
  await Promise.all(
    found.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
}

export async function containersOf(profile: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({
    all: true,
    filters: { label: [`${LabelKeys.profile}=${profile}`] },
  });
}

/** Runs argv in a container with the raw client and waits until it has finished; stdout+stderr. */
export async function execIn(containerId: string, argv: string[]): Promise<string> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: argv,
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  await new Promise((resolve) => stream.on("end", resolve));
  return demux(Buffer.concat(chunks));
}

/**
 * What `action` returned and the command line of every `docker exec` created in the container
 * while it ran (the engine's `exec_create` events: `sh` for a session shell, `sh -c …` for the
 * rest). Read live from an event stream (a `since` query replays the engine's last 256 events
 * only) between two sentinel execs: the engine answers the stream's request before it has
 * subscribed it to events, so the action starts only once the first sentinel's event came.
 */
export async function execsDuring<T>(
  containerId: string,
  action: () => Promise<T>,
): Promise<[T, string[]]> {
  const stream = (await docker.getEvents({
    filters: { container: [containerId], event: ["exec_create"] },
  })) as Readable;
  const tag = randomBytes(4).toString("hex");
  const [start, end] = [`echo mg-start-${tag}`, `echo mg-end-${tag}`];
  const commands: string[] = [];
  let pending = "";
  stream.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() === "") continue;
      const { Action } = JSON.parse(line) as { Action: string };
      commands.push(Action.replace(/^exec_create: /, "").trimEnd());
    }
  });
  try {
    // The subscription may start after the first sentinel's exec: make it again until seen.
    await waitUntil(async () => {
      await execIn(containerId, start.split(" "));
      return commands.includes(start);
    }, "the event stream to start");
    const result = await action();
    await execIn(containerId, end.split(" "));
    await waitUntil(() => commands.includes(end), "the closing sentinel's event");
    return [result, commands.slice(commands.lastIndexOf(start) + 1, commands.indexOf(end))];
  } finally {
    stream.destroy();
  }
}

/** Command lines of the processes running in a container, via `ps` (busybox). */
export async function processList(containerId: string): Promise<string[]> {
  const out = await execIn(containerId, ["ps", "-o", "pid,args"]);
  return out.split("\n").slice(1).filter(Boolean);
}

function demux(buffer: Buffer): string {
  let out = "";
  let rest = buffer;
  while (rest.length >= 8) {
    const length = rest.readUInt32BE(4);
    out += rest.subarray(8, 8 + length).toString("utf8");
    rest = rest.subarray(8 + length);
  }
  return out;
}

/** Timers a test fires by hand (`SandboxOptions.schedule`): nothing waits on the clock. */
export interface ManualTimers {
  readonly schedule: Schedule;
  /** The delays of the timers armed and neither fired nor cancelled, in the order made. */
  pending(): number[];
  /** Runs every armed timer now (each once), as if its delay had passed. */
  fireAll(): void;
}

export function manualTimers(): ManualTimers {
  const armed = new Map<number, { run: () => void; delayMs: number }>();
  let made = 0;
  return {
    schedule(run, delayMs) {
      const id = made++;
      armed.set(id, { run, delayMs });
      return () => armed.delete(id);
    },
    pending: () => [...armed.values()].map((timer) => timer.delayMs),
    fireAll() {
      const due = [...armed.values()];
      armed.clear();
      for (const timer of due) timer.run();
    },
  };
}

/** Whether `path` exists on the host. */
export const pathExists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** Whether the engine still knows container `id` (any state). */
export const containerExists = (id: string): Promise<boolean> =>
  docker
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );

/** Whether container `id` exists and is running. */
export const containerRunning = (id: string): Promise<boolean> =>
  docker
    .getContainer(id)
    .inspect()
    .then(
      (info) => info.State.Running,
      () => false,
    );

/**
 * Command lines of the container's processes as the engine lists them from the host
 * (`docker top`): nothing runs inside, so it answers when the container is at its pids limit.
 */
export async function hostProcessList(containerId: string): Promise<string[]> {
  const listed = (await docker.getContainer(containerId).top({ ps_args: "-o pid,args" })) as {
    Titles: string[];
    Processes: string[][] | null;
  };
  const args = listed.Titles.indexOf("COMMAND");
  return (listed.Processes ?? []).map((row) => row.slice(args).join(" "));
}

/** How many processes the container holds now (the engine's stats), against its pids limit. */
export async function pidsOf(containerId: string): Promise<number> {
  const stats = await docker.getContainer(containerId).stats({ stream: false });
  return stats.pids_stats?.current ?? 0;
}

/** The `ps` lines of the container that contain `needle`. */
export async function processesMatching(containerId: string, needle: string): Promise<string[]> {
  return (await processList(containerId)).filter((line) => line.includes(needle));
}
