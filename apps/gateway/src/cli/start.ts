import { connectDocker } from "@mediagate/sandbox";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { Gateway } from "../gateway.js";
import { createLogger } from "../log.js";
import { checkSandbox } from "./preflight.js";
import { secretsOf } from "./secrets.js";

/** A start-up check failed; `message` is the one line to print. */
export class StartupError extends Error {
  override readonly name = "StartupError";
  constructor(
    readonly check: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * `mediagate start`: load and validate the config, check Docker and the images (fail fast, one
 * line each), start every configured channel (the console when no token is set), and stop
 * gracefully on SIGINT/SIGTERM (or when the console input ends). Resolves once stopped.
 */
export async function runStart(options: {
  config?: string | undefined;
  env: GatewayEnv;
}): Promise<void> {
  const config = await loadConfig({ path: options.config, env: options.env });
  const consoleOnly = config.profiles.every(
    (p) => p.telegram === undefined && p.discord === undefined,
  );
  const logger = createLogger({
    level: options.env.logLevel ?? (consoleOnly ? "warn" : "info"),
    secrets: secretsOf(config),
  });
  const engine = connectDocker({ host: config.dockerHost });
  const failed = (await checkSandbox(config, engine)).filter((c) => !c.ok);
  if (failed.length > 0) {
    throw new StartupError(failed[0]!.name, failed.map((c) => `${c.name}: ${c.detail}`).join("\n"));
  }
  let requestStop: () => void = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  const gateway = await Gateway.create(config, {
    env: options.env,
    logger,
    engine,
    onConsoleClose: () => requestStop(),
  });
  for (const warning of gateway.warnings) process.stderr.write(`mediagate: ${warning}\n`);
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping");
    process.stderr.write(`mediagate: ${signal}: stopping (again to exit at once)\n`);
    process.once("SIGINT", () => process.exit(130));
    process.once("SIGTERM", () => process.exit(143));
    requestStop();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await gateway.start();
  } catch (error) {
    await gateway.stop();
    throw error;
  }
  const platforms = gateway.channels.map((c) => c.platform).join(", ");
  process.stderr.write(
    `mediagate: serving ${config.profiles.map((p) => p.name).join(", ")} on ${platforms} (home ${config.home})\n`,
  );
  await stopRequested;
  await gateway.stop();
}
