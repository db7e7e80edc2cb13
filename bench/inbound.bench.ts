/**
 * Inbound file benchmark (not a test): a 45 MiB file a user sends, through the whole gateway —
 * the real `mediagate start` CLI as a child process, the repository's platform fake serving the
 * file, the real engine — until the shell agent's `sha256sum` of it comes back in the chat.
 * Prints one JSON line per run: wall time from the send to the reply, the CPU time the gateway
 * process used meanwhile (user + system: what the run cost it, whatever else loads the
 * machine), and the gateway process's peak RSS growth over its RSS just before the send (the
 * kernel's high-water mark, reset before each run through `/proc/<pid>/clear_refs`,
 * cross-checked by sampling `VmRSS` every 5 ms).
 * The hash in the reply is checked against the sent bytes.
 *
 * Telegram runs as a local Bot API server (`telegram.localFiles`: read from disk), the only way
 * it hands over a file this large, or (`telegram-http`) with the fake's 20 MiB getFile limit
 * lifted so the file is downloaded from its file route; Discord streams it from the fake's CDN
 * over HTTP.
 *
 * `pnpm bench:inbound [telegram|telegram-http|discord] [bind|tmpfs]` (default: every combination) after
 * `pnpm build`. Env: MEDIAGATE_BENCH_IMAGE (default `mediagate-sandbox:test`),
 * MEDIAGATE_BENCH_INBOX_MIB (file size, default 45), MEDIAGATE_BENCH_RUNS (default 3).
 * Linux only (it reads /proc); run as the user the gateway runs as (root here).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { FakeDiscord } from "../test/fakes/discord/index.js";
import { FakeTelegram } from "../test/fakes/telegram/index.js";
import { dockerHostVariable } from "../test-support/engine.js";
import { cpuMsOf, memoryOf } from "./proc.js";

const image = process.env.MEDIAGATE_BENCH_IMAGE ?? "mediagate-sandbox:test";
const MiB = 1024 * 1024;
const fileBytes = Number(process.env.MEDIAGATE_BENCH_INBOX_MIB ?? 45) * MiB;
const runs = Number(process.env.MEDIAGATE_BENCH_RUNS ?? 3);
const Cli = fileURLToPath(new URL("../apps/gateway/bin/mediagate.js", import.meta.url));
const Admin = "300000000000000001";
const Command = 'sha256sum "$MEDIAGATE_ATTACHMENTS"';

type Filesystem = "bind" | "tmpfs";

/** One platform as the bench drives it: its config block, and one message with a file. */
interface Driver {
  readonly platform: string;
  config(): Record<string, unknown>;
  /** Sends `bytes` as `name` with the command as its text; resolves with the bot's reply. */
  send(bytes: Buffer, name: string): Promise<string>;
  close(): Promise<void>;
}

async function discordDriver(): Promise<Driver> {
  const token = `bench-discord-${randomBytes(6).toString("hex")}`;
  const fake = await FakeDiscord.start({ token });
  return {
    platform: "discord",
    config: () => ({
      discord: { token, apiRoot: fake.apiRoot, downloadMaxBytes: 2 * fileBytes },
      admins: [`discord:${Admin}`],
    }),
    async send(bytes, name) {
      const dm = fake.world.dmChannel(Admin);
      const before = fake.messagesIn(dm).length;
      fake.sendDirectMessage({
        content: Command,
        attachments: [{ filename: name, bytes, contentType: "application/octet-stream" }],
        authorId: Admin,
      });
      await fake.waitForCall(() => fake.messagesIn(dm).length > before);
      return fake.messagesIn(dm)[before]?.content ?? "";
    },
    close: () => fake.close(),
  };
}

/**
 * Telegram hands bots files of up to 20 MB only; a 45 MiB file takes a local Bot API server,
 * whose getFile answers a path on disk (`telegram.localFiles`): that is `telegram`. The
 * download path (getFile, then the file route over HTTP) is `telegram-http`, with the fake's
 * 20 MiB limit lifted so the same file goes through it.
 */
async function telegramDriver(localFiles: boolean): Promise<Driver> {
  const fake = new FakeTelegram(
    localFiles ? { localFiles: true } : { downloadMaxBytes: 2 * fileBytes },
  );
  await fake.start();
  const userId = 7001;
  const replies = () =>
    fake
      .callsTo("sendMessage")
      .filter((call) => String(call.params.chat_id) === String(userId))
      .map((call) => String(call.params.text));
  return {
    platform: localFiles ? "telegram" : "telegram-http",
    config: () => ({
      telegram: {
        token: fake.token,
        apiRoot: fake.apiRoot,
        downloadMaxBytes: 2 * fileBytes,
        localFiles,
      },
      admins: [`telegram:${userId}`],
    }),
    async send(bytes, name) {
      const before = replies().length;
      fake.sendMedia({ kind: "document", userId, bytes, fileName: name, caption: Command });
      await fake.waitFor(() => replies().length > before, 600_000);
      return replies()[before] ?? "";
    },
    close: () => fake.stop(),
  };
}

/** Starts `mediagate start --config <file>` and resolves once it says it is serving. */
async function startGateway(home: string, configFile: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [Cli, "start", "--config", configFile], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      LOG_LEVEL: "warn",
      NODE_OPTIONS: process.env.MEDIAGATE_BENCH_NODE_OPTIONS ?? "",
      ...dockerHostVariable(),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("serving ")) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`gateway exited (${code}):\n${output}`)));
  });
  return child;
}

async function bench(driver: Driver, filesystem: Filesystem): Promise<void> {
  const home = await mkdtemp(join(tmpdir(), "mg-bench-inbound-"));
  const profile = `bench-${randomBytes(4).toString("hex")}`;
  const configFile = join(home, "mediagate.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      home,
      profiles: [
        {
          name: profile,
          ...driver.config(),
          sandbox: { image, filesystem, diskLimitBytes: 0, tmpfsBytes: 4 * fileBytes },
        },
      ],
    }),
  );
  const gateway = await startGateway(home, configFile);
  const pid = gateway.pid as number;
  try {
    const warm = await driver.send(Buffer.from("warm-up"), "warm.txt");
    if (!/^[0-9a-f]{64} /.test(warm)) throw new Error(`warm-up reply: ${warm}`);
    for (let run = 0; run < runs; run++) {
      const bytes = randomBytes(fileBytes);
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      await writeFile(`/proc/${pid}/clear_refs`, "5"); // resets VmHWM to the current RSS
      const before = await memoryOf(pid);
      const cpuBefore = await cpuMsOf(pid);
      let sampledPeak = before.rss;
      const sampler = setInterval(() => {
        memoryOf(pid).then(
          (m) => {
            sampledPeak = Math.max(sampledPeak, m.rss);
          },
          () => undefined,
        );
      }, 5);
      const started = performance.now();
      const reply = await driver.send(bytes, `big-${run}.bin`);
      const wallMs = performance.now() - started;
      clearInterval(sampler);
      const after = await memoryOf(pid);
      const cpuMs = (await cpuMsOf(pid)) - cpuBefore;
      if (!reply.startsWith(sha256))
        throw new Error(`reply does not hold the file's hash: ${reply}`);
      console.log(
        JSON.stringify({
          figure: "inbound_file",
          platform: driver.platform,
          filesystem,
          run: run === 0 ? "cold" : run,
          mib: fileBytes / MiB,
          wall_ms: Math.round(wallMs),
          mib_per_s: Number((fileBytes / MiB / (wallMs / 1000)).toFixed(1)),
          gateway_cpu_ms: cpuMs,
          rss_growth_mb: Number(((after.peak - before.rss) / 1e6).toFixed(1)),
          rss_growth_sampled_mb: Number(((sampledPeak - before.rss) / 1e6).toFixed(1)),
          rss_before_mb: Number((before.rss / 1e6).toFixed(1)),
        }),
      );
      await driver.send(Buffer.from("x"), "x.txt"); // the next file lands in a fresh name
    }
  } finally {
    gateway.kill("SIGTERM");
    await new Promise((resolve) => gateway.once("exit", resolve));
    const ids = await promisify(execFile)("docker", [
      "ps",
      "-aq",
      "--filter",
      `label=mediagate.profile=${profile}`,
    ]);
    const list = ids.stdout.split("\n").filter(Boolean);
    if (list.length > 0) await promisify(execFile)("docker", ["rm", "-f", "-v", ...list]);
    await rm(home, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const Platforms = ["telegram", "telegram-http", "discord"];
const platforms = args.filter((a) => Platforms.includes(a));
const filesystems = args.filter((a): a is Filesystem => a === "bind" || a === "tmpfs");
for (const platform of platforms.length > 0 ? platforms : Platforms) {
  for (const filesystem of filesystems.length > 0 ? filesystems : (["bind", "tmpfs"] as const)) {
    const driver =
      platform === "discord"
        ? await discordDriver()
        : await telegramDriver(platform === "telegram");
    try {
      await bench(driver, filesystem);
    } finally {
      await driver.close();
    }
  }
}
