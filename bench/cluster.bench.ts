/**
 * `pnpm bench:cluster`: replicas of one cluster (docs/cluster.md) on this machine. For 1, 2 and
 * 3 real gateway processes (`mediagate start`, homes of their own, one PostgreSQL database of
 * the test cluster, one profile name) in webhook mode behind a round-robin proxy
 * (test-support/round-robin-proxy.ts), with the Telegram fake in this process and the real
 * engine: msg/s and p50/p90 latency of a burst of shell echoes from many users; then, with 2
 * replicas, the take-over time after the session's holder is SIGKILLed (from the kill to the
 * answer of a message sent right after it), several times, and its median.
 *
 * Needs `pnpm build`, the sandbox image and `MEDIAGATE_TEST_POSTGRES_URL` (source pg.env or
 * scripts/lib/postgres.sh). Prints one JSON object per figure per line.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { type RunningCli, spawnCli } from "../test/e2e/harness/cli.js";
import { CliInstall } from "../test/e2e/harness/cli-install.js";
import { FakeTelegram } from "../test/fakes/telegram/index.js";
import { closedPort } from "../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../test-support/postgres.js";
import { type RoundRobinProxy, startRoundRobinProxy } from "../test-support/round-robin-proxy.js";

const flag = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? process.argv[at + 1] : undefined;
  return value === undefined ? fallback : Number(value);
};
const Users = flag("users", 30);
const Messages = flag("messages", 150);
const Takeovers = flag("takeovers", 5);
/**
 * `--per-session`: a container per session (`sandbox.persistent: false`), so each replica runs
 * the sessions it holds. Without it the profile's one persistent slot is pinned to one replica
 * at a time (docs/cluster.md, "Slot pins") and every turn runs there.
 */
const PerSession = process.argv.includes("--per-session");
const Replicas = [1, 2, 3];

/**
 * One replica: its config and home made by the e2e harness's {@link CliInstall} (which also
 * removes its containers and dirs), its processes spawned here, since the harness's waits need
 * vitest.
 */
class Replica {
  readonly runs: RunningCli[] = [];
  constructor(readonly install: CliInstall) {}

  async start(): Promise<void> {
    const run = spawnCli(["start", "-c", this.install.configFile], {
      home: this.install.workDir,
      env: { LOG_LEVEL: "debug" },
      timeoutMs: 3_600_000,
    });
    this.runs.push(run);
    const deadline = Date.now() + 60_000;
    while (!run.stderr().includes('"msg":"channel started"')) {
      if (Date.now() > deadline)
        throw new Error(`replica did not start:\n${run.stderr().slice(-2000)}`);
      await sleep(50);
    }
  }

  async kill(): Promise<void> {
    const run = this.runs.at(-1);
    run?.signal("SIGKILL");
    await run?.ended;
  }

  output(): string {
    return this.runs.map((run) => run.stdout() + run.stderr()).join("\n");
  }

  async dispose(): Promise<void> {
    for (const run of this.runs) run.signal("SIGKILL");
    await Promise.all(this.runs.map((run) => run.ended));
    await this.install.dispose();
  }
}

interface Cluster {
  readonly fake: FakeTelegram;
  readonly proxy: RoundRobinProxy;
  readonly installs: Replica[];
  readonly db: TestDatabase;
}

const userIds = Array.from({ length: Users }, (_, i) => 8801 + i);

async function startCluster(size: number): Promise<Cluster> {
  const db = await freshPostgresDatabase("bench_cluster");
  const fake = new FakeTelegram({ webhook: { retryDelayMs: () => 200 } });
  await fake.start();
  const listens: string[] = [];
  for (let i = 0; i < size; i++) listens.push(`127.0.0.1:${await closedPort()}`);
  const proxy = await startRoundRobinProxy(listens);
  const profile = `bench-cluster-${process.pid}-${size}`;
  const installs: Replica[] = [];
  for (const [i, listen] of listens.entries()) {
    installs.push(
      new Replica(
        await CliInstall.create(
          `bench-cl${i}`,
          {
            name: profile,
            maxQueuedMessages: 1000,
            telegram: {
              token: fake.token,
              apiRoot: fake.apiRoot,
              webhook: { url: `${proxy.url}/telegram`, listen, secretToken: "bench-secret" },
            },
            allowedUsers: userIds.map((id) => `telegram:${id}`),
            progress: { enabled: false },
            ...(PerSession ? { sandbox: { persistent: false } } : {}),
          },
          { store: { kind: "postgres", url: db.url } },
        ),
      ),
    );
  }
  const cluster = { fake, proxy, installs, db };
  try {
    for (const install of installs) await install.start();
  } catch (error) {
    for (const install of installs) process.stderr.write(install.output().slice(-3000));
    await stopCluster(cluster);
    throw error;
  }
  return cluster;
}

async function stopCluster(cluster: Cluster): Promise<void> {
  await Promise.all(cluster.installs.map((install) => install.dispose()));
  await cluster.proxy.close();
  await cluster.fake.stop();
  await cluster.db.drop();
}

/** When the fake took the first successful `sendMessage` holding `token`, polled. */
async function answeredAt(fake: FakeTelegram, token: string, timeoutMs = 120_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const call = fake.calls.find(
      (c) => c.ok && c.method === "sendMessage" && String(c.params.text).includes(token),
    );
    if (call !== undefined) return call.atMs;
    await sleep(20);
  }
  throw new Error(`no answer holding ${token} within ${timeoutMs} ms`);
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

/** A burst of `Messages` echoes spread over the users: msg/s and latency. */
async function throughput(cluster: Cluster, size: number): Promise<void> {
  // Warm-up: each user's session bound to a replica and the containers made.
  await Promise.all(
    userIds.map((user) => {
      cluster.fake.sendPrivateText({ userId: user, text: `echo warm-${user}` });
      return answeredAt(cluster.fake, `warm-${user}`);
    }),
  );
  const sent: { token: string; atMs: number }[] = [];
  const startMs = Date.now();
  for (let i = 0; i < Messages; i++) {
    const user = userIds[i % userIds.length] as number;
    const token = `b${size}-${i}`;
    cluster.fake.sendPrivateText({ userId: user, text: `echo ${token}` });
    sent.push({ token, atMs: Date.now() });
  }
  const latencies = await Promise.all(
    sent.map(async (s) => (await answeredAt(cluster.fake, s.token)) - s.atMs),
  );
  const endMs = Math.max(...latencies.map((l, i) => l + (sent[i]?.atMs ?? 0)));
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      figure: "cluster_throughput",
      replicas: size,
      users: Users,
      messages: Messages,
      sandbox: PerSession ? "per-session" : "persistent",
      msg_per_s: Number((Messages / ((endMs - startMs) / 1000)).toFixed(2)),
      p50_ms: percentile(sorted, 50),
      p90_ms: percentile(sorted, 90),
    }),
  );
}

/** Which install ran the turn of message `messageId` to an answer (its "turn finished" line). */
function holderOf(cluster: Cluster, messageId: number): Replica | undefined {
  const id = new RegExp(`"messageId":"?${messageId}"?[,}]`);
  return cluster.installs.find((install) =>
    install
      .output()
      .split("\n")
      .some(
        (line) =>
          line.includes('"msg":"turn finished"') && line.includes('"exit":"ok"') && id.test(line),
      ),
  );
}

/** SIGKILLs the holder of one user's session and times the answer to the next message. */
async function takeover(cluster: Cluster): Promise<void> {
  const user = userIds[0] as number;
  const times: number[] = [];
  for (let round = 0; round < Takeovers; round++) {
    const before = `tk-before-${round}`;
    const update = cluster.fake.sendPrivateText({ userId: user, text: `echo ${before}` });
    await answeredAt(cluster.fake, before);
    let holder: Replica | undefined;
    for (let i = 0; i < 100 && holder === undefined; i++) {
      holder = holderOf(cluster, update.message?.message_id ?? -1);
      if (holder === undefined) await sleep(50);
    }
    if (holder === undefined) throw new Error("no replica logged the turn's end");
    const killedAt = Date.now();
    await holder.kill();
    const after = `tk-after-${round}`;
    cluster.fake.sendPrivateText({ userId: user, text: `echo ${after}` });
    times.push((await answeredAt(cluster.fake, after)) - killedAt);
    await holder.start();
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      figure: "cluster_takeover_after_sigkill",
      replicas: cluster.installs.length,
      runs: times.length,
      median_ms: percentile(sorted, 50),
      times_ms: times,
    }),
  );
}

for (const size of Replicas) {
  const cluster = await startCluster(size);
  try {
    await throughput(cluster, size);
    if (size === 2) await takeover(cluster);
  } finally {
    await stopCluster(cluster);
  }
}
