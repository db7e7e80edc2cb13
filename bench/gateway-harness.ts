/**
 * What the benches that run the real `mediagate start` CLI against the Telegram fake share
 * (bench/e2e.bench.ts, bench/scale.bench.ts): flags, figures, the clean-up of everything a run
 * made, the gateway child process, and the answers as the fake records them.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { FakeTelegram, RecordedCall } from "../test/fakes/telegram/index.js";
import { dockerHostVariable } from "../test-support/engine.js";

const run = promisify(execFile);
const Cli = fileURLToPath(new URL("../apps/gateway/bin/mediagate.js", import.meta.url));
export const ReplyTimeoutMs = 60_000;

/** The bench's name (`e2e` for `bench:e2e`): its notes' prefix and its variables' infix. */
let benchName = "bench";
const envName = (name: string): string =>
  `MEDIAGATE_BENCH_${benchName.toUpperCase()}_${name.toUpperCase().replaceAll("-", "_")}`;

// ---------------------------------------------------------------------------------------------
// Options

export interface Flags {
  /** `--name value`, else `MEDIAGATE_BENCH_<BENCH>_<NAME>`, else `undefined`. */
  flag(name: string): string | undefined;
  /** An integer flag ≥ `min`. */
  count(name: string, fallback: number, min?: number): number;
  /** A comma-separated list of positive integers. */
  list(name: string, fallback: readonly number[]): number[];
  /** A flag without a value: given, or its variable set to `1`. */
  on(name: string): boolean;
}

/**
 * The flags of bench `name` (`known` take a value, `switches` do not); rejects any other flag.
 * Also makes SIGINT/SIGTERM clean up (see {@link onCleanup}).
 */
export function benchFlags(
  name: string,
  known: readonly string[],
  switches: readonly string[] = [],
): Flags {
  benchName = name;
  cleanUpOnSignals();
  const args = process.argv.slice(2);
  for (const arg of args) {
    if (arg.startsWith("--") && !known.includes(arg.slice(2)) && !switches.includes(arg.slice(2))) {
      throw new Error(
        `unknown flag ${arg}; the flags are --${[...known, ...switches].join(", --")}`,
      );
    }
  }
  const flag = (flagName: string): string | undefined => {
    const at = args.lastIndexOf(`--${flagName}`);
    if (at >= 0) {
      const value = args[at + 1];
      if (value === undefined || value.startsWith("--")) {
        throw new Error(`--${flagName} needs a value`);
      }
      return value;
    }
    const env = process.env[envName(flagName)];
    return env === undefined || env === "" ? undefined : env;
  };
  return {
    flag,
    count(flagName, fallback, min = 1) {
      const raw = flag(flagName);
      if (raw === undefined) return fallback;
      const value = Number(raw);
      if (!Number.isInteger(value) || value < min) {
        throw new Error(`--${flagName}: got ${raw}, expected an integer ≥ ${min}`);
      }
      return value;
    },
    list(flagName, fallback) {
      const raw = flag(flagName);
      if (raw === undefined) return [...fallback];
      const values = raw.split(",").map((part) => Number(part.trim()));
      if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) {
        throw new Error(
          `--${flagName}: got ${raw}, expected positive integers separated by commas`,
        );
      }
      return values;
    },
    on: (flagName) => args.includes(`--${flagName}`) || process.env[envName(flagName)] === "1",
  };
}

// ---------------------------------------------------------------------------------------------
// Figures

export const emit = (line: Record<string, unknown>): void => console.log(JSON.stringify(line));
const startedAt = performance.now();
/** A progress note on stderr (stdout carries only the JSON lines). */
export const note = (text: string): void =>
  console.error(
    `bench:${benchName} ${((performance.now() - startedAt) / 1000).toFixed(1)}s ${text}`,
  );
export const round3 = (n: number): number => Number(n.toFixed(3));

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function stats(samples: readonly number[]): Record<string, number> {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50_ms: round3(percentile(sorted, 0.5)),
    p90_ms: round3(percentile(sorted, 0.9)),
    p99_ms: round3(percentile(sorted, 0.99)),
  };
}

export const p50 = (samples: readonly number[]): number =>
  percentile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );

/** Monotonic clock in µs: the clock V8's CPU profiles are stamped with (CLOCK_MONOTONIC). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

// ---------------------------------------------------------------------------------------------
// Clean-up: every resource registers how it goes away; run once, in reverse, whatever happens.

const cleanups: { what: string; step: () => Promise<unknown> }[] = [];
export const onCleanup = (what: string, step: () => Promise<unknown>): void => {
  cleanups.push({ what, step });
};
let cleaning: Promise<void> | undefined;
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const { what, step } of cleanups.reverse()) {
      const started = performance.now();
      await step().catch((error: unknown) =>
        console.error(`bench:${benchName} clean-up (${what}): ${String(error)}`),
      );
      const ms = performance.now() - started;
      if (ms > 1000) note(`clean-up: ${what} took ${(ms / 1000).toFixed(1)} s`);
    }
  })();
  return cleaning;
}

/** Set on SIGINT/SIGTERM: the clean-up does not wait for graceful stops (a wrapper may not). */
let hurried = false;
let signalsHandled = false;
function cleanUpOnSignals(): void {
  if (signalsHandled) return;
  signalsHandled = true;
  // `on`, not `once`: under `pnpm`/`tsx` a Ctrl-C reaches this process twice (from the terminal
  // to the whole process group, and relayed by tsx), and the second must not kill it mid-clean-up.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (cleaning !== undefined) return;
      hurried = true;
      console.error(`bench:${benchName}: ${signal}, cleaning up`);
      void cleanup().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
    });
  }
}

/** Runs `main`, then the clean-up whatever happened; a failure sets the exit code. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(
      `bench:${benchName} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

/** Sends SIGTERM, then SIGKILL after `graceMs` (1 s once signalled); resolves when it is gone. */
export async function endProcess(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), hurried ? 1000 : graceMs);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// The sandbox containers of a profile

/** `docker <args>` with the test engine's host, its stdout. */
export async function docker(args: readonly string[]): Promise<string> {
  return (await run("docker", [...args], { env: { ...process.env, ...dockerHostVariable() } }))
    .stdout;
}

/** Full ids of the running containers of `profile`. */
export async function profileContainers(profile: string): Promise<string[]> {
  return (
    await docker(["ps", "-q", "--no-trunc", "--filter", `label=mediagate.profile=${profile}`])
  )
    .split("\n")
    .filter(Boolean);
}

/** Removes every container of `profile` (running or not) at the clean-up. */
export function removeContainersAtCleanup(profile: string): void {
  onCleanup("remove the container", async () => {
    const found = (await docker(["ps", "-aq", "--filter", `label=mediagate.profile=${profile}`]))
      .split("\n")
      .filter(Boolean);
    if (found.length > 0) await docker(["rm", "-f", "-v", ...found]);
  });
}

// ---------------------------------------------------------------------------------------------
// Replies as the fake records them

/**
 * Resolves with the first call recorded from now on that matches, and when it was recorded
 * (`performance.now()`), i.e. when its request had fully arrived at the fake.
 */
export function nextCall(
  fake: FakeTelegram,
  match: (call: RecordedCall) => boolean,
  what: string,
): Promise<{ call: RecordedCall; at: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${what} within ${ReplyTimeoutMs} ms`));
    }, ReplyTimeoutMs);
    const stop = fake.onCall((call) => {
      if (!match(call)) return;
      const at = performance.now();
      clearTimeout(timer);
      stop();
      resolve({ call, at });
    });
  });
}

/** A line about the turn, not its answer: "⏳ queued …", or a slow turn's "⏳ working …" status. */
export const isNotice = (call: RecordedCall): boolean =>
  call.method === "sendMessage" && String(call.params.text ?? "").startsWith("⏳");

export const inChat =
  (chatId: number, methods: readonly string[]) =>
  (call: RecordedCall): boolean =>
    methods.includes(call.method) &&
    String(call.params.chat_id) === String(chatId) &&
    !isNotice(call);

export const isText =
  (expected: string) =>
  (call: RecordedCall): string | undefined =>
    call.ok && call.params.text === expected
      ? undefined
      : `expected the text "${expected}", got ${call.method} ${JSON.stringify(call.params.text ?? call.description)}`;

/**
 * Closed loop: each user sends its next message when the answer to its previous one arrived.
 * Returns msg/s in each of `windows` windows of `windowMs` (answers recorded within it); with
 * 0 windows every user sends one message and it waits for all answers (a warm-up). Then it
 * lets the messages in flight finish. `onAnswer` gets each answer's latency (ms from the
 * message to its answer).
 */
export async function closedLoop(
  fake: FakeTelegram,
  users: readonly number[],
  text: string,
  expected: string,
  windows: number,
  windowMs: number,
  onWindow?: (window: { startUs: number; endUs: number }) => void,
  onAnswer?: (ms: number) => void,
): Promise<{ rates: number[]; answered: number }> {
  const sentAt = new Map(users.map((user) => [String(user), 0]));
  let running = windows > 0;
  let answered = 0;
  let outstanding = 0;
  let wrong: string | undefined;
  let settled: (() => void) | undefined;
  const send = (chat: string): void => {
    outstanding++;
    sentAt.set(chat, performance.now());
    fake.sendPrivateText({ userId: Number(chat), text });
  };
  const stop = fake.onCall((call) => {
    if (call.method !== "sendMessage" || isNotice(call)) return;
    const chat = String(call.params.chat_id);
    const sent = sentAt.get(chat);
    if (sent === undefined) return;
    onAnswer?.(performance.now() - sent);
    outstanding--;
    answered++;
    wrong ??= isText(expected)(call);
    if (running) send(chat);
    else if (outstanding === 0) settled?.();
  });
  try {
    for (const userId of users) send(String(userId));
    const rates: number[] = [];
    for (let w = 0; w < windows; w++) {
      const before = answered;
      const started = performance.now();
      const startUs = monotonicUs();
      await sleep(windowMs);
      rates.push((answered - before) / ((performance.now() - started) / 1000));
      onWindow?.({ startUs, endUs: monotonicUs() });
    }
    running = false;
    if (outstanding > 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${outstanding} of ${users.length} users got no answer`)),
          ReplyTimeoutMs,
        );
        settled = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    if (wrong !== undefined) throw new Error(`throughput answer: ${wrong}`);
    return { rates, answered };
  } finally {
    stop();
    fake.forgetCalls();
  }
}

// ---------------------------------------------------------------------------------------------
// The gateway process

/** A port free on 127.0.0.1 right now (for the gateway's health endpoint). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/**
 * Resolves once the gateway runs no turn and queues none (its health endpoint's `queue`), so
 * the next latency message finds its session free: the answer is sent before the turn has
 * finished (journal, history), and a message right behind it would wait for that tail.
 */
export async function gatewayIdle(healthUrl: string): Promise<void> {
  const deadline = performance.now() + ReplyTimeoutMs;
  for (;;) {
    const report = (await (await fetch(healthUrl)).json()) as {
      queue: { running: number; queued: number };
    };
    if (report.queue.running === 0 && report.queue.queued === 0) return;
    if (performance.now() > deadline) throw new Error("the gateway did not become idle");
    await sleep(1);
  }
}

export interface GatewayProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** ms from the spawn to the CLI's "serving …" line. */
  readonly servingMs: number;
  output(): string;
}

/**
 * `mediagate start --config <configFile>` (the built CLI) as a child process with `HOME` at
 * `home`; resolves once it prints "serving …". `LOG_LEVEL` is
 * `MEDIAGATE_BENCH_<BENCH>_LOG_LEVEL` (else `warn`), and `MEDIAGATE_BENCH_<BENCH>_GATEWAY_LOG`
 * names a file its output is appended to.
 */
export async function startGateway(
  home: string,
  configFile: string,
  nodeArgs: readonly string[],
): Promise<GatewayProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, Cli, "start", "--config", configFile], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      LOG_LEVEL: process.env[envName("log-level")] ?? "warn",
      ...dockerHostVariable(),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  onCleanup("stop the gateway", () => endProcess(child));
  let output = "";
  const logFile = process.env[envName("gateway-log")];
  const log = logFile === undefined ? undefined : createWriteStream(logFile, { flags: "a" });
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-20_000);
    log?.write(chunk);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const servingMs = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway not serving after 60 s:\n${output}`)),
      60_000,
    );
    let serving = false;
    const onData = (): void => {
      if (serving || !output.includes("serving ")) return;
      serving = true;
      clearTimeout(timer);
      resolve(performance.now() - started);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (!serving) reject(new Error(`gateway exited (${code}):\n${output}`));
      else if (signal !== "SIGTERM" && code !== 0) {
        console.error(`bench:${benchName}: the gateway exited (${code ?? signal}):\n${output}`);
      }
    });
  });
  return { child, pid: child.pid as number, servingMs, output: () => output };
}
