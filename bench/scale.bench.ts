/**
 * Flat cost as sessions grow (issue 31, target 5; not a test). For each user count N: a fresh
 * home, the real `mediagate start` CLI (built, a child process, the shell agent, one persistent
 * container for all sessions) against the repository's Telegram fake (in this process) and the
 * real engine; N distinct users send one `echo <token>` each (in batches, every answer awaited),
 * then: the gateway's RSS once idle, the container's shells and processes, the home's state and
 * journal files; the gateway stopped (SIGTERM) and started again on the same home (start-up
 * time); then `--active` of those users in a closed loop (latency p50). Prints one JSON object
 * per figure per N, then each figure's ratio of the largest N to the smallest, and the memory
 * per idle session and per open shell. bench/README.md says what each line means.
 *
 * `pnpm build && pnpm bench:scale [flags]`, flags (a default run: about 20 min on 2 cores):
 *   --users-list LIST   user counts, one run each (100,10000); the ratios divide the last by
 *                       the first
 *   --active N          users of the active phase, the first N of every run (100)
 *   --batch N           users sending their one message at once while filling (100)
 *   --fill-rounds N     rounds of the fill, each user's one message per round (1): more rounds
 *                       give a run the message count of a larger one with its own sessions,
 *                       to tell what grows with the messages from what grows with the sessions
 *   --restarts N        stops and starts on the filled home; the start-up figure is their
 *                       median (3)
 *   --windows N         windows of the active phase's closed loop (3), --window-ms N (2000)
 *   --settle-ms N       wait once the gateway is idle before reading its memory (3000)
 *   --long-idle-ms N    read it again this long after the gateway went idle (60000): V8 gives
 *                       back the heap a burst grew only once it has been idle a while
 *   --restart-pause-ms N  wait between a stop and the next start (5000): the engine ends the
 *                       stopped gateway's shells meanwhile, which takes CPU a start would share
 *   --image NAME        sandbox image (MEDIAGATE_BENCH_IMAGE, else mediagate-sandbox:test)
 * Each flag also reads MEDIAGATE_BENCH_SCALE_<FLAG> (e.g. MEDIAGATE_BENCH_SCALE_USERS_LIST).
 * Linux only (it reads /proc); run as the user the gateway runs as (root here).
 * Everything it makes (containers, homes, child processes) is removed at the end, on a failure
 * and on SIGINT/SIGTERM.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { readEnv, resolveConfig } from "@mediagate/gateway";
import { maxOpenShellsOf } from "@mediagate/sandbox";
import { FakeTelegram } from "../test/fakes/telegram/index.js";
import {
  benchFlags,
  closedLoop,
  docker,
  emit,
  endProcess,
  freePort,
  type GatewayProcess,
  gatewayIdle,
  isNotice,
  median,
  note,
  onCleanup,
  p50,
  profileContainers,
  ReplyTimeoutMs,
  removeContainersAtCleanup,
  round3,
  runBench,
  startGateway,
  stats,
} from "./gateway-harness.js";
import {
  containerCpuMs,
  containerMemoryBytes,
  cpuMsOf,
  EngineProcesses,
  machineBusyMs,
  memoryOf,
  processesCpuMs,
  processesMemory,
  processesRss,
} from "./proc.js";

const { flag, count, list } = benchFlags("scale", [
  "users-list",
  "active",
  "batch",
  "fill-rounds",
  "restarts",
  "windows",
  "window-ms",
  "settle-ms",
  "long-idle-ms",
  "restart-pause-ms",
  "image",
]);
const options = {
  usersList: list("users-list", [100, 10_000]),
  active: count("active", 100),
  batch: count("batch", 100),
  fillRounds: count("fill-rounds", 1),
  restarts: count("restarts", 3),
  windows: count("windows", 3),
  windowMs: count("window-ms", 2000, 100),
  settleMs: count("settle-ms", 3000, 0),
  longIdleMs: count("long-idle-ms", 60_000, 0),
  restartPauseMs: count("restart-pause-ms", 5000, 0),
  image: flag("image") ?? process.env.MEDIAGATE_BENCH_IMAGE ?? "mediagate-sandbox:test",
};
if (options.usersList.some((n) => n < Math.max(2, options.active))) {
  throw new Error(
    `--users-list ${options.usersList.join(",")}: every count must be at least 2 and at least --active (${options.active})`,
  );
}
const UserBase = 5_000_000;
const maxUsers = Math.max(...options.usersList);
/** Every run allows the same users (the largest count), so only what they did differs. */
const allowedUsers = Array.from({ length: maxUsers }, (_, i) => `telegram:${UserBase + i}`);

// ---------------------------------------------------------------------------------------------
// What is measured

/** Every regular file under `dir`, relative path → bytes. */
async function filesUnder(dir: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) sizes.set(relative(dir, path), (await stat(path)).size);
    }
  };
  await walk(dir);
  return sizes;
}

/** The home's databases (each with its `-wal`/`-shm`), the rest, and the count of files. */
async function disk(home: string, profile: string): Promise<Record<string, number>> {
  const sizes = await filesUnder(home);
  const sum = (prefix: string): number =>
    [...sizes.entries()]
      .filter(([path]) => path === prefix || path.startsWith(`${prefix}-`))
      .reduce((total, [, bytes]) => total + bytes, 0);
  const stateFile = join("profiles", profile, "state.db");
  const state = sum(stateFile);
  const journal = sum("journal.db");
  const all = [...sizes.values()].reduce((a, b) => a + b, 0);
  return {
    state_db_bytes: state,
    state_file_bytes: sizes.get(stateFile) ?? 0,
    state_wal_bytes: sizes.get(`${stateFile}-wal`) ?? 0,
    journal_bytes: journal,
    journal_file_bytes: sizes.get("journal.db") ?? 0,
    journal_wal_bytes: sizes.get("journal.db-wal") ?? 0,
    other_bytes: all - state - journal,
    files: sizes.size,
  };
}

/** Open file descriptors and threads of a process. */
async function handlesOf(pid: number): Promise<{ fds: number; threads: number }> {
  return {
    fds: (await readdir(`/proc/${pid}/fd`)).length,
    threads: (await readdir(`/proc/${pid}/task`)).length,
  };
}

/**
 * The container's processes as the host sees them (`docker top`): how many, how many are
 * session shells (`sh` whose parent is outside the container: an exec's own process), and the
 * shells' memory (`VmRSS` and `Pss` from /proc of their host pids).
 */
async function containerCensus(container: string): Promise<Record<string, number>> {
  const rows = (await docker(["top", container, "-eo", "pid,ppid,comm"]))
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 3);
  const pids = new Set(rows.map(([pid]) => pid));
  const shells = rows
    .filter(([, ppid, comm]) => comm === "sh" && !pids.has(ppid!))
    .map(([pid]) => Number(pid));
  const shellMemory = await processesMemory(shells);
  return {
    processes: rows.length,
    shells: shells.length,
    shells_rss_bytes: shellMemory.rss,
    shells_pss_bytes: shellMemory.pss,
    container_memory_bytes: (await containerMemoryBytes(container)) ?? Number.NaN,
    engine_rss_bytes: await processesRss(EngineProcesses),
  };
}

// ---------------------------------------------------------------------------------------------
// One run

interface RunFigures {
  readonly users: number;
  readonly fill_msg_per_s: number;
  readonly rss_bytes: number;
  readonly rss_long_idle_bytes: number;
  readonly rss_after_restart_bytes: number;
  readonly rss_after_active_bytes: number;
  readonly start_ms: number;
  readonly first_answer_ms: number;
  readonly state_db_bytes: number;
  readonly journal_bytes: number;
  readonly state_file_bytes: number;
  readonly journal_file_bytes: number;
  readonly active_p50_ms: number;
  readonly shells_idle: number;
  readonly shells_active: number;
  readonly shells_pss_bytes: number;
  readonly container_memory_bytes: number;
  readonly engine_rss_bytes: number;
  readonly active_container_memory_bytes: number;
  readonly active_engine_rss_bytes: number;
  readonly gateway_fds: number;
}

/** N users one message each, `batch` at a time, each answer awaited and checked. */
async function fill(fake: FakeTelegram, users: readonly number[], batch: number): Promise<number> {
  const started = performance.now();
  for (let at = 0; at < users.length; at += batch) {
    const ids = users.slice(at, at + batch);
    const waiting = new Set(ids.map(String));
    let wrong: string | undefined;
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${waiting.size} of ${ids.length} users got no answer`)),
        ReplyTimeoutMs,
      );
      const stop = fake.onCall((call) => {
        if (call.method !== "sendMessage" || isNotice(call)) return;
        const chat = String(call.params.chat_id);
        if (!waiting.delete(chat)) return;
        if (call.params.text !== `t${chat}`) {
          wrong ??= `user ${chat}: expected "t${chat}", got ${JSON.stringify(call.params.text)}`;
        }
        if (waiting.size === 0) {
          clearTimeout(timer);
          stop();
          resolve();
        }
      });
    });
    for (const userId of ids) fake.sendPrivateText({ userId, text: `echo t${userId}` });
    await done;
    fake.forgetCalls();
    if (wrong !== undefined) throw new Error(`fill: ${wrong}`);
    if ((at / batch) % 8 === 7) {
      const rate = (at + ids.length) / ((performance.now() - started) / 1000);
      note(`  ${at + ids.length} of ${users.length} users (${rate.toFixed(0)} msg/s)`);
    }
  }
  return users.length / ((performance.now() - started) / 1000);
}

async function oneRun(users: number, fake: FakeTelegram): Promise<RunFigures> {
  const tag = randomBytes(4).toString("hex");
  const home = await mkdtemp(join(tmpdir(), `mg-bench-scale-${users}-`));
  onCleanup(`remove the home of ${users} users`, () => rm(home, { recursive: true, force: true }));
  const profile = `bench-scale-${tag}`;
  removeContainersAtCleanup(profile);
  const healthPort = await freePort();
  const healthUrl = `http://127.0.0.1:${healthPort}/health`;
  const config = {
    home,
    health: { listen: `127.0.0.1:${healthPort}` },
    profiles: [
      {
        name: profile,
        telegram: { token: fake.token, apiRoot: fake.apiRoot },
        allowedUsers,
        sandbox: { image: options.image, diskLimitBytes: 0 },
      },
    ],
  };
  const configFile = join(home, "mediagate.yaml");
  await writeFile(configFile, JSON.stringify(config), { mode: 0o600 });
  const ids = Array.from({ length: users }, (_, i) => UserBase + i);
  const activeIds = ids.slice(0, options.active);
  const figure = (name: string, values: Record<string, unknown>): void =>
    emit({ figure: name, users, ...values });

  note(`${users} users: starting the gateway (home ${home})`);
  let gateway: GatewayProcess = await startGateway(home, configFile, []);
  note(`${users} users: one message each, ${options.batch} at a time`);
  // The first message makes the container; then the rest, with the CPU they cost.
  await fill(fake, ids.slice(0, 1), 1);
  const [container, ...more] = await profileContainers(profile);
  if (container === undefined || more.length > 0) {
    throw new Error(`expected one container of ${profile}, found ${more.length + 1}`);
  }
  const cpu = async () => ({
    gateway: await cpuMsOf(gateway.pid),
    engine: await processesCpuMs(EngineProcesses),
    container: (await containerCpuMs(container)) ?? Number.NaN,
    machine: await machineBusyMs(),
  });
  const cpuBefore = await cpu();
  const fillStarted = performance.now();
  await fill(fake, ids.slice(1), options.batch);
  for (let round = 1; round < options.fillRounds; round++) {
    note(`${users} users: round ${round + 1} of the fill`);
    await fill(fake, ids, options.batch);
  }
  const fillMessages = users - 1 + (options.fillRounds - 1) * users;
  const rate = fillMessages / ((performance.now() - fillStarted) / 1000);
  const cpuAfter = await cpu();
  const perMessage = (key: keyof typeof cpuBefore): number =>
    round3((cpuAfter[key] - cpuBefore[key]) / fillMessages);
  figure("fill", {
    rounds: options.fillRounds,
    messages: fillMessages,
    msg_per_s: round3(rate),
    cpu_ms_per_msg: {
      gateway: perMessage("gateway"),
      engine: perMessage("engine"),
      container: perMessage("container"),
      machine: perMessage("machine"),
    },
  });

  await gatewayIdle(healthUrl);
  const idleSince = performance.now();
  await sleep(options.settleMs);
  const memory = await memoryOf(gateway.pid);
  const handles = await handlesOf(gateway.pid);
  // Read again once V8's memory reducer has had its chance: it gives back the heap a burst of
  // work grew only after the process has been idle for some seconds (a 2,000-user fill here:
  // 187 MB 3 to 20 s after it went idle, 142 MB at 30 s).
  await sleep(Math.max(0, options.longIdleMs - (performance.now() - idleSince)));
  const longIdle = await memoryOf(gateway.pid);
  figure("gateway_idle", {
    rss_bytes: memory.rss,
    peak_rss_bytes: memory.peak,
    rss_long_idle_bytes: longIdle.rss,
    long_idle_ms: options.longIdleMs,
    ...handles,
  });
  const census = await containerCensus(container);
  figure("container_idle", census);
  const files = await disk(home, profile);
  figure("disk", files);

  // Start-up on the filled home: stop, start, and a known user's message right at "serving".
  const starts: {
    stop_ms: number;
    engine_cpu_ms_in_pause: number;
    start_ms: number;
    first_answer_ms: number;
  }[] = [];
  for (let r = 0; r < options.restarts; r++) {
    const stopping = performance.now();
    await endProcess(gateway.child);
    const stopMs = performance.now() - stopping;
    const engineBefore = await processesCpuMs(EngineProcesses);
    await sleep(options.restartPauseMs);
    const engineMs = (await processesCpuMs(EngineProcesses)) - engineBefore;
    const spawned = performance.now();
    gateway = await startGateway(home, configFile, []);
    const user = activeIds[r % activeIds.length]!;
    const answered = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error("no answer after a restart")),
        ReplyTimeoutMs,
      );
      const stop = fake.onCall((call) => {
        if (call.method !== "sendMessage" || isNotice(call)) return;
        if (String(call.params.chat_id) !== String(user)) return;
        clearTimeout(timer);
        stop();
        resolve(performance.now());
      });
    });
    fake.sendPrivateText({ userId: user, text: `echo t${user}` });
    starts.push({
      stop_ms: round3(stopMs),
      engine_cpu_ms_in_pause: round3(engineMs),
      start_ms: round3(gateway.servingMs),
      first_answer_ms: round3((await answered) - spawned),
    });
    fake.forgetCalls();
    await gatewayIdle(healthUrl);
  }
  const startMs = median(starts.map((s) => s.start_ms));
  const firstAnswerMs = median(starts.map((s) => s.first_answer_ms));
  await sleep(options.settleMs);
  const afterRestart = await memoryOf(gateway.pid);
  figure("startup", {
    start_ms: startMs,
    first_answer_ms: firstAnswerMs,
    runs: starts,
    rss_bytes: afterRestart.rss,
  });

  // The active users: one warm-up message each (its shell opens), then a closed loop.
  note(`${users} users: ${activeIds.length} active`);
  const firstSamples: number[] = [];
  await closedLoop(fake, activeIds, "echo hi", "hi", 0, 0, undefined, (ms) =>
    firstSamples.push(ms),
  );
  const samples: number[] = [];
  const { rates } = await closedLoop(
    fake,
    activeIds,
    "echo hi",
    "hi",
    options.windows,
    options.windowMs,
    undefined,
    (ms) => samples.push(ms),
  );
  await gatewayIdle(healthUrl);
  const activeCensus = await containerCensus(container);
  await sleep(options.settleMs);
  const afterActive = await memoryOf(gateway.pid);
  figure("active", {
    ...stats(samples),
    first_message: stats(firstSamples),
    msg_per_s: Math.round(median(rates)),
    rss_bytes: afterActive.rss,
    container: activeCensus,
  });
  await endProcess(gateway.child);
  return {
    users,
    fill_msg_per_s: rate,
    rss_bytes: memory.rss,
    rss_long_idle_bytes: longIdle.rss,
    rss_after_restart_bytes: afterRestart.rss,
    rss_after_active_bytes: afterActive.rss,
    start_ms: startMs,
    first_answer_ms: firstAnswerMs,
    state_db_bytes: files.state_db_bytes!,
    journal_bytes: files.journal_bytes!,
    state_file_bytes: files.state_file_bytes!,
    journal_file_bytes: files.journal_file_bytes!,
    active_p50_ms: p50(samples),
    shells_idle: census.shells!,
    shells_active: activeCensus.shells!,
    shells_pss_bytes: census.shells_pss_bytes!,
    container_memory_bytes: census.container_memory_bytes!,
    engine_rss_bytes: census.engine_rss_bytes!,
    active_container_memory_bytes: activeCensus.container_memory_bytes!,
    active_engine_rss_bytes: activeCensus.engine_rss_bytes!,
    gateway_fds: handles.fds,
  };
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<void> {
  const begun = performance.now();
  const fake = new FakeTelegram({
    token: `800003:AA${randomBytes(12).toString("hex")}`,
    botId: 800_003,
  });
  await fake.start();
  onCleanup("stop the fake", () => fake.stop());
  const probe = resolveConfig(
    {
      home: tmpdir(),
      profiles: [
        {
          name: "probe",
          telegram: { token: fake.token, apiRoot: fake.apiRoot },
          sandbox: { image: options.image, diskLimitBytes: 0 },
        },
      ],
    },
    { env: readEnv({ HOME: tmpdir() }) },
  );
  emit({
    figure: "setup",
    node: process.version,
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
    image: options.image,
    users_list: options.usersList,
    active: options.active,
    batch: options.batch,
    fill_rounds: options.fillRounds,
    restarts: options.restarts,
    max_open_shells: maxOpenShellsOf(probe.profiles[0]!.sandbox),
    concurrency: probe.concurrency,
  });

  const runs: RunFigures[] = [];
  for (const users of options.usersList) runs.push(await oneRun(users, fake));

  const first = runs[0]!;
  const last = runs[runs.length - 1]!;
  if (runs.length > 1) {
    const ratios: Record<string, number> = {};
    for (const key of [
      "rss_bytes",
      "rss_long_idle_bytes",
      "rss_after_restart_bytes",
      "rss_after_active_bytes",
      "start_ms",
      "first_answer_ms",
      "state_db_bytes",
      "journal_bytes",
      "active_p50_ms",
      "gateway_fds",
    ] as const) {
      ratios[key] = round3(last[key] / first[key]);
    }
    emit({
      figure: "ratios",
      of: `${last.users} / ${first.users} users`,
      ...ratios,
      within_10_percent: Object.entries(ratios)
        .filter(([, ratio]) => ratio <= 1.1)
        .map(([key]) => key),
    });
    const idle = last.users - first.users;
    emit({
      figure: "per_idle_session",
      rss_bytes: Math.round((last.rss_bytes - first.rss_bytes) / idle),
      rss_long_idle_bytes: Math.round(
        (last.rss_long_idle_bytes - first.rss_long_idle_bytes) / idle,
      ),
      rss_after_restart_bytes: Math.round(
        (last.rss_after_restart_bytes - first.rss_after_restart_bytes) / idle,
      ),
      state_db_bytes: Math.round((last.state_db_bytes - first.state_db_bytes) / idle),
      journal_bytes: Math.round((last.journal_bytes - first.journal_bytes) / idle),
      state_file_bytes: Math.round((last.state_file_bytes - first.state_file_bytes) / idle),
      journal_file_bytes: Math.round((last.journal_file_bytes - first.journal_file_bytes) / idle),
      container_memory_bytes: Math.round(
        (last.active_container_memory_bytes - first.active_container_memory_bytes) / idle,
      ),
    });
  }
  // An open shell's memory: its own (Pss of the `sh` processes), and in the largest run (one
  // container, the same sessions) what the container's cgroup and the engine's processes
  // held more with the shells open when idle than after the active phase.
  const shells = runs.reduce((sum, r) => sum + r.shells_idle, 0);
  const moreShells = last.shells_idle - last.shells_active;
  const perShell = (idle: number, active: number): number | null =>
    moreShells > 0 ? Math.round((idle - active) / moreShells) : null;
  emit({
    figure: "per_open_shell",
    shells_idle: runs.map((r) => r.shells_idle),
    shells_active: runs.map((r) => r.shells_active),
    pss_bytes: Math.round(runs.reduce((sum, r) => sum + r.shells_pss_bytes, 0) / shells),
    container_memory_bytes: perShell(
      last.container_memory_bytes,
      last.active_container_memory_bytes,
    ),
    engine_rss_bytes: perShell(last.engine_rss_bytes, last.active_engine_rss_bytes),
  });
  emit({
    figure: "done",
    wall_s: Number(((performance.now() - begun) / 1000).toFixed(1)),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  });
}

await runBench(main);
