/**
 * End-to-end benchmark of the gateway's hot path (not a test; issue 13). The real `mediagate
 * start` CLI (built, a child process, a generated home and config, the shell agent, one warm
 * persistent container) against the repository's Telegram fake (in this process) and the real
 * engine, and in the same run the floors the figures are divided by. Prints one JSON object per
 * line; bench/README.md says what each line means and how each ratio is defined.
 *
 * `pnpm build && pnpm bench:e2e [flags]`, flags (defaults fit a ≤ 3 minute run on 2 cores):
 *   --rounds N            latency rounds, interleaved with their floors (3)
 *   --messages N          messages per round and figure (80: 240 per latency figure)
 *   --users LIST          concurrent users of the throughput phase (10,50,100,300)
 *   --windows N           throughput windows per setting, the median is the figure (3)
 *   --window-ms N         length of one window (1500)
 *   --warm-windows N      windows of the same closed loop run, not measured, before each
 *                         throughput figure's windows, so that V8 has compiled the path (3;
 *                         0 warms up with one message per user alone)
 *   --concurrency LIST    the gateway's `concurrency` settings to measure throughput with
 *                         (default: the gateway's own default; `4,16,64` sweeps)
 *   --max-open-shells N   the sandbox's `maxOpenShells` (default: not set, so the sandbox
 *                         derives it from the container's limits, as a gateway does)
 *   --upload-mib N        size of the outbound upload (45), --uploads N runs of it (3)
 *   --exec-cli N          `docker exec <ctr> true` runs (15)
 *   --rtt N               fake round trips per round (200)
 *   --text-only-users LIST  concurrent users of a text-only throughput phase: a profile with
 *                         the `openai` agent against an instant fake model, no tool call,
 *                         no container (100; an empty list skips it), and beside it the
 *                         text-only floor (e2e-floor-bot.mjs) at the same user counts
 *   --first-replies N     new users, one at a time, each sending its first message to a
 *                         per-session profile (`persistent: false`) with the default warm
 *                         pool and to one with none (10; 0 skips the phase)
 *   --cpu-prof DIR        profile the gateway process (`node --cpu-prof`) during the throughput
 *                         phase (and the webhook one's), and the text-only floors (a directory
 *                         each in DIR); prints the top self-time functions within the windows
 *   --image NAME          sandbox image (MEDIAGATE_BENCH_IMAGE, else mediagate-sandbox:test)
 *   --webhook             then the latency figures and throughput again with Telegram updates
 *                         arriving by webhook (`*_webhook` lines)
 *   --store postgres      then the latency figures and throughput again (polling) with
 *                         `store: { kind: postgres }` on a database of its own, made on the
 *                         cluster of MEDIAGATE_BENCH_POSTGRES_URL (else MEDIAGATE_TEST_POSTGRES_URL)
 *                         and dropped at the end (`*_postgres` lines); `sqlite` (the default)
 *                         measures SQLite alone
 * Each flag also reads MEDIAGATE_BENCH_E2E_<FLAG> (e.g. MEDIAGATE_BENCH_E2E_ROUNDS).
 * Linux only (it reads /proc); run as the user the gateway runs as (root here).
 * Everything it makes (container, home, child processes) is removed at the end, on a failure
 * and on SIGINT/SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, open, readdir, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEnv, resolveConfig } from "@mediagate/gateway";
import { maxOpenShellsOf } from "@mediagate/sandbox";
import { FakeOpenAIServer, reply } from "../test/fakes/openai/index.js";
import { FakeTelegram, type RecordedCall } from "../test/fakes/telegram/index.js";
import { dockerHostVariable } from "../test-support/engine.js";
import { freshPostgresDatabase, type TestDatabase } from "../test-support/postgres.js";
import {
  benchFlags,
  closedLoop,
  docker,
  emit,
  endProcess,
  freePort,
  gatewayIdle,
  inChat,
  isNotice,
  isText,
  median,
  nextCall,
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
  cpuMsOf,
  EngineProcesses,
  machineBusyMs,
  mainThreadCpuMsOf,
  memoryOf,
  processesCpuMs,
  threadCpuMsByName,
} from "./proc.js";

const FloorBot = fileURLToPath(new URL("./e2e-floor-bot.mjs", import.meta.url));

/**
 * The floor bot (e2e-floor-bot.mjs) as a process of its own, polling `fake`, with `env` (its
 * mode) and `nodeArgs`; ended at clean-up.
 */
function startFloorBot(
  name: string,
  fake: FakeTelegram,
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
): ChildProcess {
  const bot = spawn(process.execPath, [...nodeArgs, FloorBot], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      FLOOR_API_ROOT: fake.apiRoot,
      FLOOR_TOKEN: fake.token,
      ...env,
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  onCleanup(`stop the ${name}`, () => endProcess(bot, 5000));
  return bot;
}
const MiB = 1024 * 1024;
const SmallFileBytes = 100 * 1024;
const LatencyUser = 900_001;
const FloorUser = 900_002;
const ThroughputUserBase = 910_000;
/** The users of the text-only throughput phase. */
const TextUserBase = 930_000;
/** What the instant fake model answers every message of the text-only phase with. */
const TextAnswer = "ok";
/** The new users of the first-reply phase (one message each, per profile). */
const NewUserBase = 920_000;
const SmallPath = "/workspace/bench-100k.bin";
const BigPath = "/workspace/bench-big.bin";
/** Users warmed up at once before a throughput figure (each batch within `ReplyTimeoutMs`). */
const WarmUpBatch = 100;

// ---------------------------------------------------------------------------------------------
// Options

const { flag, count, list, on } = benchFlags(
  "e2e",
  [
    "rounds",
    "messages",
    "users",
    "windows",
    "window-ms",
    "warm-windows",
    "concurrency",
    "max-open-shells",
    "upload-mib",
    "uploads",
    "exec-cli",
    "rtt",
    "first-replies",
    "text-only-users",
    "cpu-prof",
    "image",
    "store",
  ],
  ["webhook"],
);

const options = {
  rounds: count("rounds", 3),
  messages: count("messages", 80),
  users: list("users", [10, 50, 100, 300]),
  windows: count("windows", 3),
  windowMs: count("window-ms", 1500, 100),
  warmWindows: count("warm-windows", 3, 0),
  concurrency: flag("concurrency") === undefined ? [undefined] : list("concurrency", []),
  uploadMib: count("upload-mib", 45),
  uploads: count("uploads", 3, 0),
  execCli: count("exec-cli", 15, 0),
  rtt: count("rtt", 200),
  firstReplies: count("first-replies", 10, 0),
  textOnlyUsers: flag("text-only-users") === "" ? [] : list("text-only-users", [100]),
  cpuProf: flag("cpu-prof"),
  image: flag("image") ?? process.env.MEDIAGATE_BENCH_IMAGE ?? "mediagate-sandbox:test",
  webhook: on("webhook"),
  store: storeKind(flag("store")),
};

function storeKind(raw: string | undefined): "sqlite" | "postgres" {
  if (raw === undefined || raw === "sqlite" || raw === "postgres") return raw ?? "sqlite";
  throw new Error(`--store: got ${raw}, expected sqlite or postgres`);
}
const maxUsers = Math.max(...options.users);
const maxOpenShells =
  flag("max-open-shells") === undefined ? undefined : count("max-open-shells", 1);

// ---------------------------------------------------------------------------------------------
// Replies as the fake records them

/**
 * The gateway's "⏳ queued — 1 ahead" notice: a user who writes again as soon as the answer
 * came may find the session's turn still finishing. Not an answer; counted (`queued_notices`):
 * a message told it waits behind its session's turn (`busyMode: queue`).
 */
const isQueuedNotice = (call: RecordedCall): boolean =>
  isNotice(call) && String(call.params.text).startsWith("⏳ queued");

const notices = { count: 0 };
/** Notices counted since the last call (and resets the count). */
function takeNotices(): number {
  const n = notices.count;
  notices.count = 0;
  return n;
}

/**
 * `n` messages from `userId`, one at a time: the time from queueing the update in the fake to
 * the fake recording the answer (a call of one of `methods` to the chat), which `check` reads.
 */
async function latencies(
  fake: FakeTelegram,
  userId: number,
  text: string,
  methods: readonly string[],
  n: number,
  check: (call: RecordedCall) => string | undefined,
  idle?: () => Promise<void>,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    await idle?.();
    const answered = nextCall(fake, inChat(userId, methods), `answer to "${text}"`);
    const sent = performance.now();
    fake.sendPrivateText({ userId, text });
    const { call, at } = await answered;
    samples.push(at - sent);
    const wrong = check(call);
    if (wrong !== undefined) throw new Error(`answer to "${text}": ${wrong}`);
  }
  fake.forgetCalls();
  return samples;
}

const isDocument =
  (bytes: number) =>
  (call: RecordedCall): string | undefined =>
    call.ok && call.method === "sendDocument" && call.files[0]?.bytes.length === bytes
      ? undefined
      : `expected a ${bytes}-byte document, got ${call.method} with ${call.files[0]?.bytes.length} bytes (${call.description ?? "ok"})`;

// ---------------------------------------------------------------------------------------------
// Where the CPU goes

interface CpuShares {
  readonly machine: number;
  readonly gateway: number;
  /** The gateway's main thread, part of `gateway`. */
  readonly gatewayMainThread: number;
  /** Its journal's database thread (`mg-journal`), part of `gateway`. */
  readonly gatewayJournalThread: number;
  /** Its state databases' threads (`mg-state`, one per profile), part of `gateway`. */
  readonly gatewayStateThreads: number;
  readonly engine: number;
  readonly container: number | undefined;
  readonly bench: number;
}

/** CPU used so far (ms): the machine's, the gateway's, the engine's, the container's, ours. */
async function cpuShares(gatewayPid: number, container: string): Promise<CpuShares> {
  const { user, system } = process.cpuUsage();
  const threads = await threadCpuMsByName(gatewayPid);
  return {
    machine: await machineBusyMs(),
    gateway: await cpuMsOf(gatewayPid),
    gatewayMainThread: await mainThreadCpuMsOf(gatewayPid),
    gatewayJournalThread: threads.get("mg-journal") ?? 0,
    gatewayStateThreads: threads.get("mg-state") ?? 0,
    engine: await processesCpuMs(EngineProcesses),
    container: await containerCpuMs(container),
    bench: (user + system) / 1000,
  };
}

/**
 * CPU per answered message between two {@link cpuShares}: the machine's, and its parts (the
 * gateway; the engine's processes; the sandbox container, its shells and their commands; this
 * process, the fake and the users; `other`: the rest, the kernel's work for them included),
 * and the gateway's threads apart, parts of `gateway`: its main thread, its journal's
 * database thread, its state databases' threads, and `gateway_other_threads`, the rest (V8's
 * helpers, the compiler's and the collector's; libuv's pool).
 */
function perMessage(
  before: CpuShares,
  after: CpuShares,
  answered: number,
): Record<
  | "machine"
  | "gateway"
  | "gateway_main_thread"
  | "gateway_journal_thread"
  | "gateway_state_threads"
  | "gateway_other_threads"
  | "engine"
  | "container"
  | "bench"
  | "other",
  number | undefined
> {
  const used = (key: keyof CpuShares): number | undefined => {
    const [a, b] = [before[key], after[key]];
    return a === undefined || b === undefined ? undefined : b - a;
  };
  const machine = used("machine") ?? 0;
  const parts = {
    gateway: used("gateway"),
    engine: used("engine"),
    container: used("container"),
    bench: used("bench"),
  };
  const other = machine - Object.values(parts).reduce<number>((sum, ms) => sum + (ms ?? 0), 0);
  const each = (ms: number | undefined) => (ms === undefined ? undefined : round3(ms / answered));
  const threads = {
    main: used("gatewayMainThread") ?? 0,
    journal: used("gatewayJournalThread") ?? 0,
    state: used("gatewayStateThreads") ?? 0,
  };
  return {
    machine: each(machine),
    gateway: each(parts.gateway),
    gateway_main_thread: each(threads.main),
    gateway_journal_thread: each(threads.journal),
    gateway_state_threads: each(threads.state),
    gateway_other_threads: each(
      (parts.gateway ?? 0) - threads.main - threads.journal - threads.state,
    ),
    engine: each(parts.engine),
    container: each(parts.container),
    bench: each(parts.bench),
    other: each(other),
  };
}

// ---------------------------------------------------------------------------------------------
// Floors

/** One `docker exec -i <ctr> sh` kept open: a command line written, its end marker read. */
class OpenShell {
  readonly #child: ChildProcess;
  #buffer = "";
  #waiting: { marker: string; resolve: () => void } | undefined;
  #next = 0;

  constructor(container: string) {
    this.#child = spawn("docker", ["exec", "-i", container, "sh"], {
      env: { ...process.env, ...dockerHostVariable() },
      stdio: ["pipe", "pipe", "inherit"],
    });
    onCleanup("close the open shell", () => endProcess(this.#child, 5000));
    this.#child.stdout?.on("data", (chunk: Buffer) => {
      this.#buffer += chunk.toString();
      const waiting = this.#waiting;
      if (waiting !== undefined && this.#buffer.includes(waiting.marker)) {
        this.#buffer = "";
        this.#waiting = undefined;
        waiting.resolve();
      }
    });
  }

  /** `echo hi` and the marker; resolves with the ms from the write to the marker's arrival. */
  async call(): Promise<number> {
    const marker = `__mg_${this.#next++}__\n`;
    const done = new Promise<void>((resolve) => {
      this.#waiting = { marker, resolve };
    });
    const started = performance.now();
    this.#child.stdin?.write(`echo hi; echo ${marker}`);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("open shell: no answer")), ReplyTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return performance.now() - started;
  }
}

/** A bare HTTP request/answer to the fake (`getMe`, keep-alive): the fake's own round trip. */
async function fakeRoundTrips(fake: FakeTelegram, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(fake.apiRoot);
  const body = Buffer.from("{}");
  const samples: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            path: `/bot${fake.token}/getMe`,
            method: "POST",
            agent,
            headers: { "content-type": "application/json", "content-length": body.length },
          },
          (res) => {
            res.resume();
            res.on("end", () =>
              res.statusCode === 200 ? resolve() : reject(new Error(`getMe: ${res.statusCode}`)),
            );
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      samples.push(performance.now() - started);
    }
  } finally {
    agent.destroy();
    fake.forgetCalls();
  }
  return samples;
}

/**
 * A 4 KiB write and `fdatasync` in the gateway's home, `n` times: not a floor of any figure,
 * but the disk's sync, which the gateway waits for before it confirms each message (its
 * journal's synced commit); on a shared machine it moves the latency and throughput figures.
 */
async function syncs(dir: string, n: number): Promise<number[]> {
  const file = await open(join(dir, "fsync-probe"), "w");
  const block = Buffer.alloc(4096, 1);
  const samples: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await file.write(block, 0, block.length, 0);
      await file.datasync();
      samples.push(performance.now() - started);
    }
  } finally {
    await file.close();
  }
  return samples;
}

// ---------------------------------------------------------------------------------------------
// CPU profile

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
  }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** `node` flags that profile every thread of a process into `dir`, a file each. */
function profileFlags(dir: string): string[] {
  return ["--cpu-prof", "--cpu-prof-dir", dir];
}

/**
 * The main thread's profile of process `pid` in `dir`, once the process has exited. Node names
 * each thread's `CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile`, the main thread's id 0;
 * a `--cpu-prof-name` would be every thread's, and the last thread to exit would win (a
 * floor's database thread did).
 */
async function mainThreadProfile(
  dir: string,
  pid: number,
): Promise<{ file: string; profile: CpuProfile }> {
  const name = (await readdir(dir)).find((f) => f.includes(`.${pid}.0.`));
  if (name === undefined) throw new Error(`no main-thread profile of process ${pid} in ${dir}`);
  const file = join(dir, name);
  return { file, profile: JSON.parse(await readFile(file, "utf8")) as CpuProfile };
}

/** Self time per function within `windows` (monotonic µs), the top `top` by self time. */
function summariseProfile(
  profile: CpuProfile,
  windows: readonly { startUs: number; endUs: number }[],
  top = 25,
): Record<string, unknown> {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const selfUs = new Map<string, number>();
  const fileUs = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (!windows.some((w) => t >= w.startUs && t <= w.endUs)) continue;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const frame = frames.get(profile.samples[i]!);
    if (frame === undefined) continue;
    total += dt;
    if (frame.functionName === "(idle)") {
      idle += dt;
      continue;
    }
    const file = frame.url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\/(\.pnpm\/)?/, "");
    const short = file.replace(/^.*\/(apps|packages)\//, "$1/");
    const key =
      `${frame.functionName || "(anonymous)"} ${short === "" ? "" : `${short}:${frame.lineNumber + 1}`}`.trim();
    selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
    const fileKey = short === "" ? frame.functionName : short;
    fileUs.set(fileKey, (fileUs.get(fileKey) ?? 0) + dt);
  }
  const busy = total - idle;
  const rank = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({
        name,
        self_ms: round3(us / 1000),
        pct_busy: Number(((100 * us) / Math.max(1, busy)).toFixed(1)),
      }));
  return {
    window_ms: round3(total / 1000),
    windows_us: windows.map((w) => [w.startUs, w.endUs]),
    busy_ms: round3(busy / 1000),
    top_functions: rank(selfUs, top),
    top_files: rank(fileUs, 15),
  };
}

// ---------------------------------------------------------------------------------------------
// The run

/**
 * `--store postgres`: an empty database of the run's own on the cluster of
 * MEDIAGATE_BENCH_POSTGRES_URL (else the test cluster's MEDIAGATE_TEST_POSTGRES_URL), dropped
 * at the end.
 */
async function benchDatabase(): Promise<TestDatabase & { where: string }> {
  const admin =
    process.env.MEDIAGATE_BENCH_POSTGRES_URL?.trim() || process.env.MEDIAGATE_TEST_POSTGRES_URL;
  if (admin === undefined || admin.trim() === "") {
    throw new Error(
      "--store postgres needs a PostgreSQL cluster: set MEDIAGATE_BENCH_POSTGRES_URL to a URL of " +
        "its `postgres` database (a user that may CREATE DATABASE), or `source` the test cluster's env",
    );
  }
  const database = await freshPostgresDatabase("bench_e2e", admin);
  onCleanup("drop the PostgreSQL database", () => database.drop());
  const url = new URL(database.url);
  return { ...database, where: `${url.hostname}:${url.port || "5432"}/${database.name}` };
}

async function main(): Promise<void> {
  const begun = performance.now();
  const home = await mkdtemp(join(tmpdir(), "mg-bench-e2e-"));
  onCleanup("remove the home", () => rm(home, { recursive: true, force: true }));
  const profile = `bench-e2e-${randomBytes(4).toString("hex")}`;
  removeContainersAtCleanup(profile);

  const token = (id: number) => `${id}:AA${randomBytes(12).toString("hex")}`;
  // Webhook mode: posted as Telegram does (one chat's updates in order, chats at once).
  const fake = new FakeTelegram({
    token: token(800_001),
    botId: 800_001,
    webhook: { parallel: true },
  });
  await fake.start();
  onCleanup("stop the fake", () => fake.stop());
  fake.onCall((call) => {
    if (isQueuedNotice(call)) notices.count++;
  });
  const floorFake = new FakeTelegram({ token: token(800_002), botId: 800_002 });
  await floorFake.start();
  onCleanup("stop the floor fake", () => floorFake.stop());
  // Two per-session profiles for the first-reply phase: the default warm pool, and none.
  const perSession = [
    { pool: "pool_default", warmPool: undefined, botId: 800_003 },
    { pool: "pool_off", warmPool: 0, botId: 800_004 },
  ].map((p) => ({
    ...p,
    profile: `${profile}-${p.warmPool === 0 ? "nopool" : "pool"}`,
    fake: new FakeTelegram({ token: token(p.botId), botId: p.botId }),
  }));
  const newUsers = Array.from({ length: options.firstReplies }, (_, i) => NewUserBase + i);
  // The text-only profile: the openai agent against an instant fake model in this process.
  const textUsers = Array.from(
    { length: Math.max(0, ...options.textOnlyUsers) },
    (_, i) => TextUserBase + i,
  );
  const textFake = new FakeTelegram({ token: token(800_005), botId: 800_005 });
  // The text-only floors (e2e-floor-bot.mjs): the databases on the bot's main thread, and each
  // on a thread of its own as the gateway's are.
  const textFloors = [
    { name: "floor_text_only_throughput", threads: false, botId: 800_006 },
    { name: "floor_text_only_db_threads_throughput", threads: true, botId: 800_007 },
  ].map((f) => ({ ...f, fake: new FakeTelegram({ token: token(f.botId), botId: f.botId }) }));
  const model = options.textOnlyUsers.length > 0 ? await FakeOpenAIServer.start() : undefined;
  if (model !== undefined) {
    model.respondWith(() => reply.text(TextAnswer));
    onCleanup("stop the fake model", () => model.close());
    await textFake.start();
    onCleanup("stop the text-only fake", () => textFake.stop());
    for (const floor of textFloors) {
      await floor.fake.start();
      onCleanup(`stop the ${floor.name} fake`, () => floor.fake.stop());
    }
  }
  if (options.firstReplies > 0) {
    for (const p of perSession) {
      await p.fake.start();
      onCleanup(`stop the ${p.pool} fake`, () => p.fake.stop());
      removeContainersAtCleanup(p.profile);
    }
  }

  const throughputUsers = Array.from({ length: maxUsers }, (_, i) => ThroughputUserBase + i);
  const configFile = join(home, "mediagate.yaml");
  const healthPort = await freePort();
  const idle = () => gatewayIdle(`http://127.0.0.1:${healthPort}/health`);
  const webhookPort = options.webhook ? await freePort() : 0;
  const webhook = {
    url: `http://127.0.0.1:${webhookPort}/telegram`,
    listen: `127.0.0.1:${webhookPort}`,
    secretToken: randomBytes(16).toString("hex"),
  };
  const postgres = options.store === "postgres" ? await benchDatabase() : undefined;
  const config = (
    concurrency: number | undefined,
    byWebhook = false,
    store: Record<string, unknown> | undefined = undefined,
  ) => ({
    home,
    ...(store === undefined ? {} : { store }),
    ...(concurrency === undefined ? {} : { concurrency }),
    health: { listen: `127.0.0.1:${healthPort}` },
    profiles: [
      {
        name: profile,
        telegram: {
          token: fake.token,
          apiRoot: fake.apiRoot,
          ...(byWebhook ? { webhook } : {}),
        },
        allowedUsers: [LatencyUser, ...throughputUsers].map((id) => `telegram:${id}`),
        sandbox: {
          image: options.image,
          diskLimitBytes: 0,
          ...(maxOpenShells === undefined ? {} : { maxOpenShells }),
        },
      },
      ...(model === undefined
        ? []
        : [
            {
              name: `${profile}-text`,
              telegram: { token: textFake.token, apiRoot: textFake.apiRoot },
              allowedUsers: textUsers.map((id) => `telegram:${id}`),
              agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
              sandbox: { image: options.image, diskLimitBytes: 0 },
            },
          ]),
      // The default disk ceiling: what a new user of such a profile gets.
      ...(options.firstReplies === 0 ? [] : perSession).map((p) => ({
        name: p.profile,
        telegram: { token: p.fake.token, apiRoot: p.fake.apiRoot },
        allowedUsers: newUsers.map((id) => `telegram:${id}`),
        sandbox: {
          image: options.image,
          persistent: false,
          ...(p.warmPool === undefined ? {} : { warmPool: p.warmPool }),
        },
      })),
    ],
  });
  const resolved = (concurrency: number | undefined) =>
    resolveConfig(config(concurrency), { env: readEnv({ HOME: home }) });
  const effectiveConcurrency = (concurrency: number | undefined): number =>
    resolved(concurrency).concurrency;
  const uploadBytes = options.uploadMib * MiB;

  emit({
    figure: "setup",
    profile,
    home,
    node: process.version,
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
    image: options.image,
    rounds: options.rounds,
    messages_per_round: options.messages,
    users: options.users,
    concurrency: options.concurrency.map(effectiveConcurrency),
    max_open_shells: maxOpenShellsOf(resolved(undefined).profiles[0]!.sandbox),
    upload_mib: options.uploadMib,
    store: postgres === undefined ? "sqlite" : `sqlite, then postgres ${postgres.where}`,
  });

  await writeFile(configFile, JSON.stringify(config(options.concurrency[0])), { mode: 0o600 });
  note("starting the gateway");
  let gateway = await startGateway(home, configFile, []);
  note("gateway serving; set-up message (session, container, files)");

  // Warm-up: the session's shell, the container, and the files the replies send.
  const setup = nextCall(fake, inChat(LatencyUser, ["sendMessage"]), "set-up answer");
  fake.sendPrivateText({
    userId: LatencyUser,
    text: `head -c ${SmallFileBytes} /dev/urandom > ${SmallPath} && head -c ${uploadBytes} /dev/urandom > ${BigPath} && echo ready`,
  });
  const ready = await setup;
  if (ready.call.params.text !== "ready") {
    throw new Error(`set-up answered ${JSON.stringify(ready.call.params.text)}`);
  }
  const containers = await profileContainers(profile);
  if (containers.length !== 1)
    throw new Error(`expected one container, found ${containers.length}`);
  const container = containers[0]!;

  const floorBig = join(home, "floor-big.bin");
  await new Promise<void>((resolve, reject) => {
    const out = createWriteStream(floorBig);
    out.on("error", reject);
    out.on("finish", resolve);
    for (let written = 0; written < uploadBytes; written += MiB) {
      out.write(randomBytes(Math.min(MiB, uploadBytes - written)));
    }
    out.end();
  });
  const floorBot = startFloorBot("floor bot", floorFake, { FLOOR_BIG_FILE: floorBig });
  // The text-only floors: the same bot, recording, asking the model and keeping conversations.
  const textFloorBots = (model === undefined ? [] : textFloors).map((floor) => {
    const profileDir = options.cpuProf === undefined ? "" : join(options.cpuProf, floor.name);
    const profiling = options.cpuProf === undefined ? [] : profileFlags(profileDir);
    const env = {
      FLOOR_MODEL_ROOT: model!.baseUrl,
      FLOOR_DB_DIR: join(home, floor.name),
      FLOOR_DB_THREADS: floor.threads ? "1" : "0",
    };
    const bot = startFloorBot(`${floor.name} bot`, floor.fake, env, profiling);
    return { ...floor, bot, profileDir, windows: [] as { startUs: number; endUs: number }[] };
  });
  const shell = new OpenShell(container);

  const warmUps = Math.min(20, options.messages);
  await latencies(floorFake, FloorUser, "t", ["sendMessage"], warmUps, isText("hi"));
  await latencies(
    floorFake,
    FloorUser,
    "file",
    ["sendDocument"],
    warmUps,
    isDocument(SmallFileBytes),
  );
  for (let i = 0; i < warmUps; i++) await shell.call();
  await latencies(fake, LatencyUser, "echo hi", ["sendMessage"], warmUps, isText("hi"), idle);
  await latencies(
    fake,
    LatencyUser,
    `echo MEDIA:${SmallPath}`,
    ["sendDocument"],
    warmUps,
    isDocument(SmallFileBytes),
    idle,
  );
  await fakeRoundTrips(floorFake, warmUps);

  // Latency rounds: each figure next to its floors, so load changes hit both alike.
  note("latency rounds");
  takeNotices();
  const all = {
    rtt: [] as number[],
    fsync: [] as number[],
    botText: [] as number[],
    botFile: [] as number[],
    shell: [] as number[],
    text: [] as number[],
    file: [] as number[],
  };
  const textRatios: number[] = [];
  const fileRatios: number[] = [];
  for (let r = 0; r < options.rounds; r++) {
    const rtt = await fakeRoundTrips(floorFake, options.rtt);
    all.fsync.push(...(await syncs(home, Math.min(20, options.messages))));
    const botText = await latencies(
      floorFake,
      FloorUser,
      "t",
      ["sendMessage"],
      options.messages,
      isText("hi"),
    );
    const botFile = await latencies(
      floorFake,
      FloorUser,
      "file",
      ["sendDocument"],
      options.messages,
      isDocument(SmallFileBytes),
    );
    const shellTimes: number[] = [];
    for (let i = 0; i < options.messages; i++) shellTimes.push(await shell.call());
    const text = await latencies(
      fake,
      LatencyUser,
      "echo hi",
      ["sendMessage"],
      options.messages,
      isText("hi"),
      idle,
    );
    const file = await latencies(
      fake,
      LatencyUser,
      `echo MEDIA:${SmallPath}`,
      ["sendDocument"],
      options.messages,
      isDocument(SmallFileBytes),
      idle,
    );
    textRatios.push(p50(text) / (p50(botText) + p50(shellTimes)));
    fileRatios.push(p50(file) / (p50(botFile) + p50(shellTimes)));
    all.rtt.push(...rtt);
    all.botText.push(...botText);
    all.botFile.push(...botFile);
    all.shell.push(...shellTimes);
    all.text.push(...text);
    all.file.push(...file);
  }
  const latencyNotices = takeNotices();
  note("docker exec via the CLI");
  const execCli: number[] = [];
  for (let i = 0; i < options.execCli; i++) {
    const started = performance.now();
    await docker(["exec", container, "true"]);
    execCli.push(performance.now() - started);
  }
  emit({ figure: "floor_fake_round_trip", ...stats(all.rtt) });
  emit({ figure: "context_fsync", ...stats(all.fsync) });
  emit({ figure: "floor_bot_text", ...stats(all.botText) });
  emit({ figure: "floor_bot_file_100k", ...stats(all.botFile) });
  emit({ figure: "floor_open_shell", ...stats(all.shell) });
  emit({ figure: "floor_docker_exec_cli", ...stats(execCli) });
  const ratio = (n: number) => round3(n);
  emit({
    figure: "text_reply",
    ...stats(all.text),
    ratio: ratio(median(textRatios)),
    ratio_rounds: textRatios.map(ratio),
    ratio_of_p50s: ratio(p50(all.text) / (p50(all.botText) + p50(all.shell))),
    queued_notices: latencyNotices,
    vs_docker_exec_cli: execCli.length > 0 ? ratio(p50(all.text) / p50(execCli)) : null,
    vs_fake_round_trip: ratio(p50(all.text) / p50(all.rtt)),
  });
  emit({
    figure: "file_100k",
    ...stats(all.file),
    ratio: ratio(median(fileRatios)),
    ratio_rounds: fileRatios.map(ratio),
    ratio_of_p50s: ratio(p50(all.file) / (p50(all.botFile) + p50(all.shell))),
  });

  // A new user's first reply in per-session mode: container, uid and shell, with the default
  // warm pool and with none, one new user at a time after the pool refilled; its floor is the
  // text reply of a session that has all three (`text_reply` above, same run).
  if (options.firstReplies > 0) {
    note("first replies of new users (per-session profiles)");
    for (const p of perSession) {
      const firsts: number[] = [];
      for (const userId of newUsers) {
        // Refilled well within this: a create and start, a uid claim and a shell open.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        firsts.push(
          ...(await latencies(p.fake, userId, "echo hi", ["sendMessage"], 1, isText("hi"))),
        );
      }
      emit({
        figure: `first_reply_per_session_${p.pool}`,
        ...stats(firsts),
        floor_text_reply_p50_ms: round3(p50(all.text)),
        vs_text_reply: round3(p50(firsts) / p50(all.text)),
      });
    }
  }

  // The large upload: the gateway sends a file from the session's workspace.
  note("uploads");
  const uploads: { ms: number; rss_growth_mb: number; rss_growth_sampled_mb: number }[] = [];
  const floorUploads: number[] = [];
  for (let u = 0; u < options.uploads; u++) {
    const [floorMs] = await latencies(
      floorFake,
      FloorUser,
      "big",
      ["sendDocument"],
      1,
      isDocument(uploadBytes),
    );
    floorUploads.push(floorMs!);
    const pid = gateway.pid;
    await writeFile(`/proc/${pid}/clear_refs`, "5"); // resets VmHWM to the current RSS
    const before = await memoryOf(pid);
    let sampledPeak = before.rss;
    const sampler = setInterval(() => {
      memoryOf(pid).then(
        (m) => {
          sampledPeak = Math.max(sampledPeak, m.rss);
        },
        () => undefined,
      );
    }, 5);
    try {
      const [ms] = await latencies(
        fake,
        LatencyUser,
        `echo MEDIA:${BigPath}`,
        ["sendDocument"],
        1,
        isDocument(uploadBytes),
        idle,
      );
      const after = await memoryOf(pid);
      uploads.push({
        ms: Number(ms!.toFixed(1)),
        rss_growth_mb: Number(((after.peak - before.rss) / 1e6).toFixed(1)),
        rss_growth_sampled_mb: Number(((sampledPeak - before.rss) / 1e6).toFixed(1)),
      });
    } finally {
      clearInterval(sampler);
    }
  }
  if (options.uploads > 0) {
    emit({
      figure: "floor_bot_upload",
      mib: options.uploadMib,
      ms: floorUploads.map((ms) => Number(ms.toFixed(1))),
      ms_median: Number(median(floorUploads).toFixed(1)),
    });
    emit({
      figure: "upload",
      mib: options.uploadMib,
      runs: uploads,
      ms_median: Number(median(uploads.map((u) => u.ms)).toFixed(1)),
      rss_growth_mb_cold: uploads[0]?.rss_growth_mb,
      rss_growth_mb_max: Math.max(...uploads.map((u) => u.rss_growth_mb)),
      ratio: ratio(median(uploads.map((u) => u.ms)) / median(floorUploads)),
    });
  }

  // Throughput: closed loops of distinct users, the floor bot's at the same user counts.
  note("throughput");
  /**
   * A floor bot's closed loop at `users` (ids it answers whatever the gateway allows), warmed
   * up as the gateway's loops are: its rate, and its process's CPU per answered message (all
   * threads, and the main thread's part).
   */
  const floorLoop = async (
    bot: FakeTelegram,
    pid: number,
    users: number,
    expected: string,
    windows?: { startUs: number; endUs: number }[],
  ) => {
    const ids = Array.from({ length: users }, (_, i) => ThroughputUserBase + i);
    await closedLoop(bot, ids, "hi", expected, options.warmWindows, options.windowMs);
    const [cpu, main] = [await cpuMsOf(pid), await mainThreadCpuMsOf(pid)];
    const { rates, answered } = await closedLoop(
      bot,
      ids,
      "hi",
      expected,
      options.windows,
      options.windowMs,
      (w) => windows?.push(w),
    );
    // The main thread's readings inside the process's (read after it before, before it after):
    // the bot may still be finishing its last answers, and its part must stay a part.
    const mainAfter = await mainThreadCpuMsOf(pid);
    const cpuAfter = await cpuMsOf(pid);
    return {
      users,
      msg_per_s: Math.round(median(rates)),
      windows: rates.map(Math.round),
      cpu_ms_per_msg: round3((cpuAfter - cpu) / answered),
      main_thread_cpu_ms_per_msg: round3((mainAfter - main) / answered),
      rate: median(rates),
    };
  };
  const floorRates = new Map<number, number>();
  /** The floor bot's closed loop at `users`, once per user count (a `floor_bot_throughput`). */
  const floorThroughput = async (users: number): Promise<void> => {
    if (floorRates.has(users)) return;
    const { rate, ...figures } = await floorLoop(floorFake, floorBot.pid!, users, "hi");
    floorRates.set(users, rate);
    emit({ figure: "floor_bot_throughput", ...figures });
  };
  for (const users of options.users) await floorThroughput(users);
  // Text only: the gateway in front of a model that answers at once, no command, no container.
  // Measured by the first gateway of the throughput phase (so `--cpu-prof` profiles it too).
  const textOnly = async (windows: { startUs: number; endUs: number }[]): Promise<void> => {
    for (const users of model === undefined ? [] : options.textOnlyUsers) {
      note(`text-only throughput, ${users} users`);
      const ids = textUsers.slice(0, users);
      await floorThroughput(users);
      const floorCpu: Record<string, number> = {};
      for (const { name, fake: textFloorFake, bot, windows } of textFloorBots) {
        const recorded = model!.requests.length;
        const { rate: _, ...floor } = await floorLoop(
          textFloorFake,
          bot.pid!,
          users,
          TextAnswer,
          windows,
        );
        // The fake keeps every request's body: dropping the floor's leaves this process's
        // heap, and so its share of the machine, as it was before the floor ran.
        model!.requests.splice(recorded);
        floorCpu[name] = floor.cpu_ms_per_msg;
        emit({ figure: name, ...floor });
      }
      await closedLoop(textFake, ids, "hi", TextAnswer, options.warmWindows, options.windowMs);
      const botCalls = new Map<string, number>();
      const stopCounting = textFake.onCall((call) => {
        botCalls.set(call.method, (botCalls.get(call.method) ?? 0) + 1);
      });
      const modelRequests = model?.requests.length ?? 0;
      const cpuBefore = await cpuShares(gateway.pid, container);
      const { rates, answered } = await closedLoop(
        textFake,
        ids,
        "hi",
        TextAnswer,
        options.windows,
        options.windowMs,
        (w) => windows.push(w),
      );
      const cpu = perMessage(cpuBefore, await cpuShares(gateway.pid, container), answered);
      stopCounting();
      const rate = median(rates);
      emit({
        figure: "throughput_text_only",
        users,
        msg_per_s: Math.round(rate),
        windows: rates.map(Math.round),
        ratio: round3(rate / (floorRates.get(users) ?? Number.NaN)),
        gateway_cpu_ms_per_msg: cpu.gateway,
        // The gateway's CPU per answer over each text-only floor's.
        gateway_cpu_over_floors: Object.fromEntries(
          Object.entries(floorCpu).map(([name, ms]) => [
            name,
            round3((cpu.gateway ?? Number.NaN) / ms),
          ]),
        ),
        cpu_ms_per_msg: cpu,
        // What each answered message cost outside the gateway: Bot API calls by method, and
        // requests to the model.
        bot_calls_per_msg: Object.fromEntries(
          [...botCalls].map(([method, n]) => [method, round3(n / answered)]),
        ),
        model_requests_per_msg: round3(((model?.requests.length ?? 0) - modelRequests) / answered),
      });
    }
  };
  const gatewayProfileDir = (concurrency: number | undefined) =>
    `gateway-concurrency-${effectiveConcurrency(concurrency)}`;
  for (const [index, concurrency] of options.concurrency.entries()) {
    const profiling = options.cpuProf !== undefined;
    if (index > 0 || profiling) {
      await endProcess(gateway.child);
      await writeFile(configFile, JSON.stringify(config(concurrency)), { mode: 0o600 });
      gateway = await startGateway(
        home,
        configFile,
        profiling ? profileFlags(join(options.cpuProf!, gatewayProfileDir(concurrency))) : [],
      );
    }
    const windows: { startUs: number; endUs: number }[] = [];
    const textWindows: { startUs: number; endUs: number }[] = [];
    if (index === 0) await textOnly(textWindows);
    for (const users of options.users) {
      const ids = throughputUsers.slice(0, users);
      // Every session's shell open, a batch at a time: a new session's first message claims
      // its uid and opens its shell (two execs), which on a loaded engine takes a while.
      for (let at = 0; at < ids.length; at += WarmUpBatch) {
        await closedLoop(fake, ids.slice(at, at + WarmUpBatch), "echo hi", "hi", 0, 0);
      }
      await closedLoop(fake, ids, "echo hi", "hi", options.warmWindows, options.windowMs);
      const cpuBefore = await cpuShares(gateway.pid, container);
      takeNotices();
      const { rates, answered } = await closedLoop(
        fake,
        ids,
        "echo hi",
        "hi",
        options.windows,
        options.windowMs,
        (w) => windows.push(w),
      );
      const cpu = perMessage(cpuBefore, await cpuShares(gateway.pid, container), answered);
      const rate = median(rates);
      emit({
        figure: "throughput",
        users,
        concurrency: effectiveConcurrency(concurrency),
        msg_per_s: Math.round(rate),
        windows: rates.map(Math.round),
        ratio: ratio(rate / (floorRates.get(users) ?? Number.NaN)),
        gateway_cpu_ms_per_msg: cpu.gateway,
        cpu_ms_per_msg: cpu,
        queued_notices: takeNotices(),
      });
    }
    if (profiling) {
      await endProcess(gateway.child);
      const { file, profile } = await mainThreadProfile(
        join(options.cpuProf!, gatewayProfileDir(concurrency)),
        gateway.pid,
      );
      emit({
        figure: "cpu_profile",
        concurrency: effectiveConcurrency(concurrency),
        file,
        ...summariseProfile(profile, windows),
      });
      if (textWindows.length > 0) {
        emit({ figure: "cpu_profile_text_only", file, ...summariseProfile(profile, textWindows) });
      }
      // The text-only floors', from the same windows of theirs (their profiles are written as
      // they exit).
      for (const { name, bot, profileDir, windows: floorWindows } of textFloorBots) {
        if (floorWindows.length === 0) continue;
        await endProcess(bot, 5000);
        const { file: floorFile, profile: parsed } = await mainThreadProfile(profileDir, bot.pid!);
        emit({
          figure: `cpu_profile_${name}`,
          file: floorFile,
          ...summariseProfile(parsed, floorWindows),
        });
        floorWindows.length = 0;
      }
    }
  }

  /** The gateway restarted with `settings`, its latency and throughput as `*_<mode>` lines. */
  const again = async (mode: "webhook" | "postgres", settings: string): Promise<void> => {
    await endProcess(gateway.child);
    await writeFile(configFile, settings, { mode: 0o600 });
    note(`${mode}: latency rounds and throughput`);
    const profileDir = join(options.cpuProf ?? "", `gateway-${mode}`);
    gateway = await startGateway(
      home,
      configFile,
      options.cpuProf === undefined ? [] : profileFlags(profileDir),
    );
    const windows: { startUs: number; endUs: number }[] = [];
    await modeFigures({
      mode,
      vs: mode === "webhook" ? "vs_polling" : "vs_sqlite",
      fake,
      idle,
      rounds: options.rounds,
      messages: options.messages,
      floorP50: {
        text: p50(all.botText) + p50(all.shell),
        file: p50(all.botFile) + p50(all.shell),
      },
      first: { text: p50(all.text), file: p50(all.file) },
      throughput: async (users) => {
        const ids = throughputUsers.slice(0, users);
        for (let at = 0; at < ids.length; at += WarmUpBatch) {
          await closedLoop(fake, ids.slice(at, at + WarmUpBatch), "echo hi", "hi", 0, 0);
        }
        await closedLoop(fake, ids, "echo hi", "hi", options.warmWindows, options.windowMs);
        const cpuBefore = await cpuShares(gateway.pid, container);
        const { rates, answered } = await closedLoop(
          fake,
          ids,
          "echo hi",
          "hi",
          options.windows,
          options.windowMs,
          (w) => windows.push(w),
        );
        return {
          rates,
          cpu: perMessage(cpuBefore, await cpuShares(gateway.pid, container), answered),
        };
      },
      users: options.users,
      floorRates,
    });
    if (options.cpuProf !== undefined) {
      await endProcess(gateway.child);
      const { file, profile } = await mainThreadProfile(profileDir, gateway.pid);
      emit({ figure: `cpu_profile_${mode}`, file, ...summariseProfile(profile, windows) });
    }
  };
  if (options.webhook) {
    await again("webhook", JSON.stringify(config(options.concurrency[0], true)));
  }
  if (postgres !== undefined) {
    const store = { kind: "postgres", url: postgres.url };
    await again("postgres", JSON.stringify(config(options.concurrency[0], false, store)));
  }

  await endProcess(gateway.child);
  emit({
    figure: "done",
    wall_s: Number(((performance.now() - begun) / 1000).toFixed(1)),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  });
}

/**
 * `--webhook` and `--store postgres`: the gateway restarted with `telegram.webhook` (the fake
 * POSTs each update to it as Telegram does: one chat's in order, up to `max_connections` chats
 * at once) or on PostgreSQL; the same latency figures and throughput, as `*_<mode>` lines whose
 * `ratio` uses the first run's floors and `vs_polling` / `vs_sqlite` divides by the first run's
 * p50 (polling on SQLite).
 */
async function modeFigures(run: {
  mode: "webhook" | "postgres";
  vs: "vs_polling" | "vs_sqlite";
  fake: FakeTelegram;
  idle: () => Promise<void>;
  rounds: number;
  messages: number;
  floorP50: { text: number; file: number };
  first: { text: number; file: number };
  throughput: (users: number) => Promise<{ rates: number[]; cpu: ReturnType<typeof perMessage> }>;
  users: readonly number[];
  floorRates: ReadonlyMap<number, number>;
}): Promise<void> {
  const { fake, idle } = run;
  const text: number[] = [];
  const file: number[] = [];
  const warmUps = Math.min(20, run.messages);
  await latencies(fake, LatencyUser, "echo hi", ["sendMessage"], warmUps, isText("hi"), idle);
  for (let r = 0; r < run.rounds; r++) {
    text.push(
      ...(await latencies(
        fake,
        LatencyUser,
        "echo hi",
        ["sendMessage"],
        run.messages,
        isText("hi"),
        idle,
      )),
    );
    file.push(
      ...(await latencies(
        fake,
        LatencyUser,
        `echo MEDIA:${SmallPath}`,
        ["sendDocument"],
        run.messages,
        isDocument(SmallFileBytes),
        idle,
      )),
    );
  }
  emit({
    figure: `text_reply_${run.mode}`,
    ...stats(text),
    ratio: round3(p50(text) / run.floorP50.text),
    [run.vs]: round3(p50(text) / run.first.text),
  });
  emit({
    figure: `file_100k_${run.mode}`,
    ...stats(file),
    ratio: round3(p50(file) / run.floorP50.file),
    [run.vs]: round3(p50(file) / run.first.file),
  });
  for (const users of run.users) {
    const { rates, cpu } = await run.throughput(users);
    const rate = median(rates);
    emit({
      figure: `throughput_${run.mode}`,
      users,
      msg_per_s: Math.round(rate),
      windows: rates.map(Math.round),
      ratio: round3(rate / (run.floorRates.get(users) ?? Number.NaN)),
      gateway_cpu_ms_per_msg: cpu.gateway,
      cpu_ms_per_msg: cpu,
    });
  }
}

await runBench(main);
