import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DockerObserver } from "../e2e/harness/docker-observer.js";

/**
 * What the slot-delete race tests share: the attacker (fixtures/swap-links.c, built static
 * with the host's gcc because busybox has no renameat2 applet) and a host directory it aims
 * at. The attacker keeps `race/d<i>` (a directory of files named like the victim's) and
 * `race/l<i>` (a symlink to the victim) in the slot's /workspace and swaps each pair with
 * renameat2(RENAME_EXCHANGE): a host-side path walk that listed `d<i>` as a directory and
 * then unlinks `d<i>/v<k>` after a swap unlinks the victim's `v<k>`.
 */

const here = dirname(fileURLToPath(import.meta.url));

/** Files in the victim, and in each attacker directory (same names). */
export const VictimFiles = 250;
/** Pairs: 200 × 250 hard links keep a host-side delete busy for seconds on this machine. */
export const AttackPairs = 200;
export const TestImage = "mediagate-sandbox:test";
export const MiB = 1024 * 1024;

/** The two kinds of slot directory a delete must hold for: with and without a disk ceiling. */
export const SlotModes = [
  { mode: "a loop-mounted slot (disk ceiling on)", diskLimitBytes: 256 * MiB },
  { mode: "a plain slot directory (diskLimitBytes: 0)", diskLimitBytes: 0 },
] as const;
export const docker = new DockerObserver();

export interface AttackBench {
  /** Where the attacker binary is; bind it read-only at `/opt/race`. */
  readonly helperDir: string;
  /** The host directory the attacker's links point at. */
  readonly victim: string;
  /** The attacker's command that makes the pairs (then exits). */
  readonly fill: string;
  /** The attacker's command that swaps the pairs forever (one per container), backgrounded. */
  readonly swapInBackground: string;
  /** The attacker's argv that swaps the pairs forever, for a container's own command. */
  readonly swapArgv: readonly string[];
  /** How many of the victim's files are left. */
  victimFiles(): Promise<number>;
  dispose(): Promise<void>;
}

export async function attackBench(): Promise<AttackBench> {
  const workDir = await mkdtemp(join(tmpdir(), "mg-race-"));
  const helperDir = join(workDir, "helper");
  const victim = join(workDir, "victim");
  await mkdir(helperDir);
  await mkdir(victim);
  execFileSync("gcc", [
    "-static",
    "-O2",
    "-o",
    join(helperDir, "swap-links"),
    join(here, "fixtures/swap-links.c"),
  ]);
  for (let k = 0; k < VictimFiles; k++) await writeFile(join(victim, `v${k}`), "host data\n");
  const args = [victim, String(AttackPairs), String(VictimFiles)];
  return {
    helperDir,
    victim,
    fill: ["/opt/race/swap-links", "fill", ...args].join(" "),
    swapInBackground: `${["/opt/race/swap-links", "swap", ...args].join(" ")} >/dev/null 2>&1 </dev/null &`,
    swapArgv: ["/opt/race/swap-links", "swap", ...args],
    victimFiles: async () => (await readdir(victim)).length,
    dispose: () => rm(workDir, { recursive: true, force: true }),
  };
}

/** Removes every container (slot or delete container) labelled with one of the profiles. */
export async function removeContainers(profiles: readonly string[]): Promise<void> {
  for (const profile of profiles) {
    for (const c of await docker.containers({ "mediagate.profile": profile })) {
      await docker.removeForce(c.id);
    }
  }
}

/** Mount points at or below `dir` (from /proc/self/mountinfo). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/**
 * Unmounts whatever is still mounted at or below `dir` (deepest first) and returns those
 * mount points: a test asserts there were none, and leaves none either way.
 */
export async function releaseMounts(dir: string): Promise<string[]> {
  const points = await mountsUnder(dir);
  for (const point of [...points].reverse()) execFileSync("umount", [point]);
  return points;
}

/** Loop devices whose backing file lies below `dir` (`losetup -a`). */
export function loopDevicesUnder(dir: string): string[] {
  const listed = execFileSync("losetup", ["-a"], { encoding: "utf8" });
  return listed.split("\n").filter((line) => line.includes(`${dir}/`));
}
