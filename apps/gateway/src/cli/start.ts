import { MediagateError } from "@mediagate/io";
import type { ImagePullProgress } from "@mediagate/sandbox";
import { SharedTerminal } from "../channels/console-terminal.js";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import {
  createLogger,
  type LineSink,
  LogDefaults,
  resolveLogLevel,
  stderrLogFormat,
  stderrSink,
} from "../log.js";
import { Redactor } from "../redact.js";
import { LogRing } from "../web/log-ring.js";
import { checkHomes, createHomes } from "./homes.js";
import type { CheckResult } from "./preflight.js";
import { onStopSignals } from "./stop-signals.js";
import { onUncaughtErrors } from "./uncaught-errors.js";

/**
 * A start-up check failed, or (`check` = `channel`) a channel gave up for good while the
 * gateway ran; `message` is the one line to print.
 */
export class StartupError extends MediagateError {
  override readonly name = "StartupError";
  readonly code: "MG_START_CHECK_FAILED" | "MG_START_CHANNEL_STOPPED";
  constructor(
    readonly check: string,
    message: string,
  ) {
    super(message);
    this.code = check === "channel" ? "MG_START_CHANNEL_STOPPED" : "MG_START_CHECK_FAILED";
  }
}

/**
 * `mediagate start`: load and validate the config, make the homes (0700) and refuse any other
 * host user can enter, check Docker and the images (pulling a missing one, progress logged at
 * info; fail fast, one line each with what to do), start every
 * configured channel (the console when no token is set), and stop gracefully on SIGINT/SIGTERM
 * (or when the console input ends). An unhandled rejection is logged and the gateway goes on;
 * an uncaught exception stops it like a fatal channel error ({@link onUncaughtErrors}).
 * Resolves once stopped. Every line it writes, logs
 * included, goes through `redactor` (which loading the config teaches the config's secrets);
 * the caller scrubs a thrown error's message with it too.
 */
export async function runStart(options: {
  config?: string | undefined;
  env: GatewayEnv;
  redactor?: Redactor | undefined;
}): Promise<void> {
  const redactor = options.redactor ?? new Redactor();
  let stderr: LineSink = stderrSink();
  const say = (line: string) => stderr.write(`mediagate: ${redactor.text(line)}\n`);
  const config = await loadConfig({ path: options.config, env: options.env, redactor });
  const consoleOnly = config.profiles.every(
    (p) => p.telegram === undefined && p.discord === undefined,
  );
  // Logs go to stderr, the console's chat to stdout; on one terminal, a log line never lands
  // inside a chat line (docs/operations.md).
  const terminal = consoleOnly ? SharedTerminal.forStdio() : undefined;
  if (terminal !== undefined) stderr = terminal.logSink(stderr);
  // The web console's Logs page: the last lines, kept only when the console is on.
  const logRing = config.web === undefined ? undefined : new LogRing(Defaults.web.logLines);
  const logger = createLogger({
    ring: logRing,
    level: resolveLogLevel({
      fromEnv: options.env.logLevel,
      fromConfig: config.logLevel,
      fallback: consoleOnly ? LogDefaults.consoleLevel : LogDefaults.level,
    }),
    redactor,
    destination: stderr,
    format: stderrLogFormat(),
  });
  // Checked before they are made: a home that cannot be made (a read-only file system) is
  // said as such, not as the ENOENT a recursive mkdir answers there.
  refuseFailed(await checkHomes(config));
  await createHomes(config);
  // The engine client and the gateway (grammY, discord.js, dockerode, the web server) load
  // once the config is valid: a config error is answered without loading them (about 1 s of
  // CPU on a small machine).
  const [{ connectDocker }, { checkSandbox }, { Gateway }] = await Promise.all([
    import("@mediagate/sandbox"),
    import("./preflight.js"),
    import("../gateway.js"),
  ]);
  const engine = connectDocker({ host: config.dockerHost });
  const pull = {
    pull: true,
    onProgress: (progress: ImagePullProgress) => logger.info({ pull: progress }, progress.text),
  } as const;
  // The homes again, as made: one made meanwhile by another user or with another mode.
  refuseFailed([...(await checkHomes(config)), ...(await checkSandbox(config, engine, pull))]);
  let requestStop: () => void = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  let fatal: { readonly check: string; readonly error: Error } | undefined;
  const stopFor = (check: string, error: Error) => {
    fatal ??= { check, error };
    requestStop();
  };
  const listeners: (() => void)[] = [];
  listeners.push(onUncaughtErrors({ logger, onFatal: (error) => stopFor("uncaught", error) }));
  try {
    const gateway = await Gateway.create(config, {
      redactor,
      logger,
      engine,
      logRing,
      onConsoleClose: () => requestStop(),
      consoleTerminal: terminal,
      onFatal: (error) => stopFor("channel", error),
    });
    for (const warning of gateway.warnings) say(warning);
    listeners.push(
      onStopSignals({
        onStop: (signal) => {
          logger.info({ signal }, "stopping");
          say(`${signal}: stopping (again to exit at once)`);
          requestStop();
        },
      }),
    );
    try {
      await gateway.start();
    } catch (error) {
      await gateway.stop();
      throw error;
    }
    const platforms = gateway.channels.map((c) => c.platform).join(", ");
    if (gateway.webUrl !== undefined)
      say(
        `web console at ${gateway.webUrl} (log in with the token \`mediagate web token\` prints)`,
      );
    say(
      `serving ${config.profiles.map((p) => p.name).join(", ")} on ${platforms} (home ${config.home})`,
    );
    await stopRequested;
    await gateway.stop();
  } finally {
    // Whatever ended the run, `process` keeps no listener of it: one left behind would swallow
    // the next uncaught exception of whoever goes on in this process.
    for (const remove of listeners) remove();
  }
  if (fatal !== undefined) {
    // A channel gave up for good (e.g. its token was revoked), or an exception nothing caught
    // left the process's state in doubt: a non-zero exit lets a service manager restart the
    // gateway or alert.
    throw new StartupError(fatal.check, `stopped: ${fatal.error.message}`);
  }
}

/** Throws the failed checks among `checks`, each with its fix, as one {@link StartupError}. */
function refuseFailed(checks: readonly CheckResult[]): void {
  const failed = checks.filter((c) => !c.ok);
  if (failed.length === 0) return;
  const lines = failed.map((c) => `${c.name}: ${c.detail}${c.fix ? `\n  fix: ${c.fix}` : ""}`);
  throw new StartupError(failed[0]!.name, lines.join("\n"));
}
