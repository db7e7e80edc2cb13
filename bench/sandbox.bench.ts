/**
 * Sandbox benchmark (not a test): prints one JSON line per figure,
 * `{"bench": name, "p50_ms": …, "p90_ms": …, "n": …}`. Run from the root with
 * `pnpm bench:sandbox` after `pnpm --filter @mediagate/sandbox build`.
 * Env: MEDIAGATE_BENCH_IMAGE (default `mediagate-sandbox:test`).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { connectDocker, Defaults, Sandbox, type SandboxSettings } from "@mediagate/sandbox";
import { testDockerHost } from "../test-support/engine.js";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const image = process.env.MEDIAGATE_BENCH_IMAGE ?? "mediagate-sandbox:test";
const profile = `bench-${randomBytes(4).toString("hex")}`;

function report(bench: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
  const round = (ms: number) => Math.round(ms * 10_000) / 10_000;
  const line = { bench, p50_ms: round(at(0.5)), p90_ms: round(at(0.9)), n: sorted.length };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function time(n: number, fn: (i: number) => Promise<unknown>, warmup = 3): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fn(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

/**
 * A new session's first command in per-session mode (`persistent: false`): `acquire` of a new
 * `session:` slot (create and start, or the claim of a warm container) and the session's first
 * `run` (its uid claimed, its shell opened, `echo hi`). With a pool, each session comes after the
 * pool refilled (not timed): one new user at a time.
 */
async function firstReplies(
  home: string,
  engine: ReturnType<typeof connectDocker>,
  settings: SandboxSettings & { warmPool: number },
): Promise<void> {
  const name = `${profile}-ps${settings.warmPool}`;
  const sandbox = new Sandbox({
    engine,
    profile: name,
    profileHome: join(home, "profiles", name),
    rootHome: home,
    settings: { ...settings, persistent: false, orphanReaper: false },
  });
  const acquire: number[] = [];
  const firstRun: number[] = [];
  const total: number[] = [];
  try {
    for (let i = -1; i < 10; i++) {
      await sandbox.warmUp();
      const slot = `session:bench-${i + 1}`;
      const started = performance.now();
      await sandbox.acquire(slot);
      const acquired = performance.now();
      await sandbox.run(slot, `s${i}`, "echo hi");
      const ended = performance.now();
      if (i >= 0) {
        acquire.push(acquired - started);
        firstRun.push(ended - acquired);
        total.push(ended - started);
      }
      await sandbox.cleanup(slot, { force: true, deleteDirs: true });
    }
    const tag = `pool${settings.warmPool}_disk${settings.diskLimitBytes > 0 ? "on" : "off"}`;
    report(`first_reply_acquire_${tag}`, acquire);
    report(`first_reply_first_run_${tag}`, firstRun);
    report(`first_reply_${tag}`, total);
  } finally {
    await sandbox.shutdown();
    const leftovers = await sandbox.list().catch(() => []);
    for (const c of leftovers) await sandbox.remove(c.id).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const home = await mkdtemp(join(tmpdir(), "mg-bench-"));
  const profileHome = join(home, "profiles", profile);
  const engine = connectDocker({ host: testDockerHost() });
  await engine.ping();
  const settings = { ...Defaults.settings, image };
  const sandbox = new Sandbox({ engine, profile, profileHome, rootHome: home, settings });
  const coldSlots: string[] = [];
  try {
    const { containerId } = await sandbox.acquire("bench");

    const command = "echo hi";
    const cpuBefore = process.cpuUsage();
    report("shell_warm_call", await time(500, () => sandbox.run("bench", "s", command), 20));
    // This process's side of a warm call (the engine's and the container's are not in it).
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMsPerCall = Math.round(((cpu.user + cpu.system) / 520) * 10) / 10_000;
    process.stdout.write(
      `${JSON.stringify({ bench: "shell_warm_call_process_cpu", ms_per_call: cpuMsPerCall, n: 520 })}\n`,
    );
    report("exec_one_shot_api", await time(40, () => sandbox.exec("bench", command)));
    report(
      "exec_docker_cli",
      await time(40, () => run("docker", ["exec", containerId, "sh", "-c", command])),
    );

    report("acquire_warm_in_process", await time(2000, () => sandbox.acquire("bench"), 10));

    const child = join(here, "sandbox-acquire-child.mjs");
    const reused: number[] = [];
    for (let i = 0; i < 15; i++) {
      const args = [child, profile, profileHome, home, image, "bench", testDockerHost() ?? ""];
      const { stdout } = await run(process.execPath, args, { cwd: here });
      const parsed = JSON.parse(stdout) as { ms: number; containerId: string };
      if (parsed.containerId !== containerId)
        throw new Error("the other process got another container");
      reused.push(parsed.ms);
    }
    report("acquire_reused_other_process", reused);

    const cold = await time(
      10,
      async (i) => {
        coldSlots.push(`cold-${i}`);
        await sandbox.acquire(`cold-${i}`);
      },
      1,
    );
    report("acquire_cold", cold);

    for (const [pool, disk] of [
      [0, 0],
      [2, 0],
      [0, Defaults.settings.diskLimitBytes],
      [2, Defaults.settings.diskLimitBytes],
    ] as const) {
      await firstReplies(home, engine, { ...settings, warmPool: pool, diskLimitBytes: disk });
    }
  } finally {
    await sandbox.shutdown();
    // Deleting the slots also unmounts their disks (diskLimitBytes), freeing the loop devices.
    for (const slot of ["bench", ...coldSlots]) {
      await sandbox.cleanup(slot, { force: true, deleteDirs: true }).catch(() => undefined);
    }
    const leftovers = await sandbox.list().catch(() => []);
    for (const c of leftovers) await sandbox.remove(c.id).catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  }
}

await main();
