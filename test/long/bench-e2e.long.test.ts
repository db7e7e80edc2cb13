import { type ChildProcess, execFile, spawn } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { dockerHostVariable } from "../../test-support/engine.js";
import { waitUntil } from "../e2e/harness/gateway-home.js";

/**
 * `pnpm bench:e2e` (bench/e2e.bench.ts) with tiny counts, so the benchmark cannot rot unseen:
 * every figure line it documents comes out with numbers of the right shape, no bot token is
 * printed, and its container and home are gone afterwards, also after a Ctrl-C mid-run.
 * Nothing is asserted about how fast anything was.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const Tsx = join(RepoRoot, "bench/node_modules/.bin/tsx");
const Bench = join(RepoRoot, "bench/e2e.bench.ts");
const Tiny = [
  "--rounds",
  "1",
  "--messages",
  "3",
  "--users",
  "2,3",
  "--windows",
  "1",
  "--window-ms",
  // Long enough for a closed loop of 2 users to see answers on a loaded machine (a 200 ms
  // window saw none under the full suite, and msg_per_s was 0).
  "1000",
  "--warm-windows",
  "1",
  "--upload-mib",
  "1",
  "--uploads",
  "1",
  "--exec-cli",
  "1",
  "--rtt",
  "3",
  "--first-replies",
  "2",
  "--text-only-users",
  "2",
];
const TokenPattern = /\d+:AA[0-9a-f]{24}/;
const run = promisify(execFile);
const made: string[] = [];

afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

interface BenchRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  ended: Promise<number | null>;
}

/** The bench in a process group of its own (as a shell runs a foreground job). */
function startBench(args: readonly string[]): BenchRun {
  const child = spawn(Tsx, [Bench, ...args], {
    cwd: join(RepoRoot, "bench"),
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      ...dockerHostVariable(),
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ended = new Promise<number | null>((resolve) =>
    child.once("close", (code) => resolve(code)),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, ended };
}

const lines = (stdout: string): Record<string, unknown>[] =>
  stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function containersOf(profile: string): Promise<string[]> {
  const { stdout } = await run(
    "docker",
    ["ps", "-aq", "--filter", `label=mediagate.profile=${profile}`],
    {
      env: { ...process.env, ...dockerHostVariable() },
    },
  );
  return stdout.split("\n").filter(Boolean);
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

const latency = {
  n: expect.any(Number),
  p50_ms: expect.any(Number),
  p90_ms: expect.any(Number),
  p99_ms: expect.any(Number),
};

describe("pnpm bench:e2e", () => {
  it("prints every figure as a JSON line, profiles the gateway, and leaves nothing behind", async () => {
    const profiles = await mkdtemp(join(tmpdir(), "mg-bench-e2e-prof-"));
    made.push(profiles);
    const bench = startBench([...Tiny, "--cpu-prof", profiles]);
    const code = await bench.ended;
    expect(code, bench.stderr()).toBe(0);
    const out = lines(bench.stdout());
    const byFigure = (figure: string) => out.filter((line) => line.figure === figure);
    expect(out.map((line) => line.figure)).toEqual([
      "setup",
      "floor_fake_round_trip",
      "context_fsync",
      "floor_bot_text",
      "floor_bot_file_100k",
      "floor_open_shell",
      "floor_docker_exec_cli",
      "text_reply",
      "file_100k",
      "first_reply_per_session_pool_default",
      "first_reply_per_session_pool_off",
      "floor_bot_upload",
      "upload",
      "floor_bot_throughput",
      "floor_bot_throughput",
      "floor_text_only_throughput",
      "floor_text_only_db_threads_throughput",
      "throughput_text_only",
      "throughput",
      "throughput",
      "cpu_profile",
      "cpu_profile_text_only",
      "cpu_profile_floor_text_only_throughput",
      "cpu_profile_floor_text_only_db_threads_throughput",
      "done",
    ]);
    for (const figure of [
      "floor_fake_round_trip",
      "context_fsync",
      "floor_bot_text",
      "floor_open_shell",
      "text_reply",
      "file_100k",
      "first_reply_per_session_pool_default",
      "first_reply_per_session_pool_off",
    ]) {
      const [line] = byFigure(figure);
      expect(line).toMatchObject(latency);
      const { p50_ms, p90_ms, p99_ms } = line as { p50_ms: number; p90_ms: number; p99_ms: number };
      expect(p50_ms).toBeGreaterThan(0);
      expect(p50_ms).toBeLessThanOrEqual(p90_ms);
      expect(p90_ms).toBeLessThanOrEqual(p99_ms);
    }
    expect(byFigure("text_reply")[0]).toMatchObject({
      n: 3,
      ratio: expect.any(Number),
      queued_notices: 0,
    });
    expect(byFigure("file_100k")[0]).toMatchObject({ n: 3, ratio: expect.any(Number) });
    for (const figure of ["pool_default", "pool_off"]) {
      expect(byFigure(`first_reply_per_session_${figure}`)[0]).toMatchObject({
        n: 2,
        floor_text_reply_p50_ms: expect.any(Number),
        vs_text_reply: expect.any(Number),
      });
    }
    expect(byFigure("upload")[0]).toMatchObject({
      mib: 1,
      runs: [
        {
          ms: expect.any(Number),
          rss_growth_mb: expect.any(Number),
          rss_growth_sampled_mb: expect.any(Number),
        },
      ],
      ratio: expect.any(Number),
    });
    expect(byFigure("throughput").map((line) => [line.users, line.concurrency])).toEqual([
      [2, 16],
      [3, 16],
    ]);
    for (const line of byFigure("throughput")) {
      expect(line.msg_per_s).toBeGreaterThan(0);
      expect(line.ratio).toBeGreaterThan(0);
      expect(line.gateway_cpu_ms_per_msg).toBeGreaterThan(0);
      // Where the machine's CPU went: the sandbox container's share is read from its cgroup.
      const cpu = line.cpu_ms_per_msg as Record<string, number>;
      expect(cpu.machine).toBeGreaterThan(0);
      expect(cpu.container).toBeGreaterThan(0);
      expect(cpu.gateway).toBe(line.gateway_cpu_ms_per_msg);
      // Its threads are parts of the gateway, the database threads told by the names the
      // gateway gives them (read in 10 ms ticks: a short loop may show 0).
      for (const part of [
        "gateway_main_thread",
        "gateway_journal_thread",
        "gateway_state_threads",
      ]) {
        expect(cpu[part]).toBeGreaterThanOrEqual(0);
        expect(cpu[part]).toBeLessThanOrEqual(cpu.gateway!);
      }
      expect(cpu.gateway_other_threads).toBeLessThanOrEqual(cpu.gateway!);
      expect(Object.keys(cpu).sort()).toEqual(
        [
          "bench",
          "container",
          "engine",
          "gateway",
          "gateway_journal_thread",
          "gateway_main_thread",
          "gateway_other_threads",
          "gateway_state_threads",
          "machine",
          "other",
        ].sort(),
      );
    }
    // The floors: each answered, and its process's CPU per answer (read in 10 ms ticks: a short
    // loop of the bare floor bot may show 0), the main thread's part of it.
    const floors = [
      ...byFigure("floor_bot_throughput"),
      ...byFigure("floor_text_only_throughput"),
      ...byFigure("floor_text_only_db_threads_throughput"),
    ];
    expect(floors).toHaveLength(4);
    for (const line of floors) {
      expect(line.msg_per_s).toBeGreaterThan(0);
      expect(line.cpu_ms_per_msg).toBeGreaterThanOrEqual(0);
      expect(line.main_thread_cpu_ms_per_msg).toBeLessThanOrEqual(line.cpu_ms_per_msg as number);
    }
    for (const figure of ["floor_text_only_throughput", "floor_text_only_db_threads_throughput"]) {
      expect(byFigure(figure)[0]).toMatchObject({ users: 2 });
      expect(byFigure(figure)[0]?.cpu_ms_per_msg).toBeGreaterThan(0);
    }
    const [textOnly] = byFigure("throughput_text_only");
    expect(textOnly).toMatchObject({ users: 2, model_requests_per_msg: 1 });
    expect(textOnly?.msg_per_s).toBeGreaterThan(0);
    expect(textOnly?.gateway_cpu_ms_per_msg).toBeGreaterThan(0);
    // An answer that quick gets no status reaction and no draft (docs/sessions.md).
    expect(textOnly?.bot_calls_per_msg).toMatchObject({ sendMessage: 1 });
    expect(Object.keys(textOnly?.bot_calls_per_msg as object)).not.toContain("setMessageReaction");
    expect(Object.keys(textOnly?.bot_calls_per_msg as object)).not.toContain("sendMessageDraft");
    const overFloors = textOnly?.gateway_cpu_over_floors as Record<string, number>;
    expect(Object.keys(overFloors).sort()).toEqual([
      "floor_text_only_db_threads_throughput",
      "floor_text_only_throughput",
    ]);
    for (const ratio of Object.values(overFloors)) expect(ratio).toBeGreaterThan(0);
    for (const figure of [
      "cpu_profile",
      "cpu_profile_text_only",
      "cpu_profile_floor_text_only_throughput",
      "cpu_profile_floor_text_only_db_threads_throughput",
    ]) {
      const [profile] = byFigure(figure) as {
        busy_ms: number;
        windows_us: [number, number][];
        top_functions: { name: string; self_ms: number }[];
        file: string;
      }[];
      expect(profile?.busy_ms).toBeGreaterThan(0);
      expect(profile?.windows_us.length).toBeGreaterThan(0);
      expect(profile?.top_functions.length).toBeGreaterThan(0);
      expect(await exists(profile!.file)).toBe(true);
      // The main thread's profile (thread id 0 in node's name for it), not a database thread's.
      expect(profile?.file).toMatch(/\.\d+\.0\.\d+\.cpuprofile$/);
    }

    expect(bench.stdout() + bench.stderr()).not.toMatch(TokenPattern);
    const setup = byFigure("setup")[0] as { profile: string; home: string };
    expect(await containersOf(setup.profile)).toEqual([]);
    // The per-session profiles of the first replies, their warm pool's container included.
    expect(await containersOf(`${setup.profile}-pool`)).toEqual([]);
    expect(await containersOf(`${setup.profile}-nopool`)).toEqual([]);
    expect(await exists(setup.home)).toBe(false);
  }, 120_000);

  it("removes its container and home on Ctrl-C mid-run", async () => {
    const bench = startBench([...Tiny, "--messages", "2000"]);
    await waitUntil(() => bench.stderr().includes("latency rounds"), "the latency rounds", 60_000);
    const setup = lines(bench.stdout())[0] as { profile: string; home: string };
    expect(await containersOf(setup.profile)).toHaveLength(1);
    process.kill(-(bench.child.pid as number), "SIGINT");
    expect(await bench.ended).toBe(130);
    expect(await containersOf(setup.profile)).toEqual([]);
    expect(await containersOf(`${setup.profile}-pool`)).toEqual([]);
    expect(await exists(setup.home)).toBe(false);
  }, 120_000);
});
