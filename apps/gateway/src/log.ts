import { type DestinationStream, type Logger, pino } from "pino";
import { Redacted, Redactor } from "./redact.js";

export type { Logger };

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level; default `info`. */
  readonly level?: string | undefined;
  /** Secret values (tokens, API keys) to cut out of every log line. */
  readonly secrets?: readonly string[];
  /**
   * The redactor every line goes through (the CLI's, which knows the whole config's secrets,
   * also those learnt after the logger was made); default one built from `secrets`.
   */
  readonly redactor?: Redactor | undefined;
  /** Where lines go; default stderr (stdout belongs to the console channel). */
  readonly destination?: DestinationStream;
}

/**
 * The gateway's pino logger. Secrets never reach a log line by construction: keys named
 * `token`, `apiKey`, `authorization` are censored, and every string (messages, error messages
 * and stacks, nested fields) goes through the {@link Redactor}.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const redactor = options.redactor ?? new Redactor(options.secrets ?? []);
  return pino(
    {
      level: options.level ?? "info",
      redact: {
        paths: [
          "token",
          "apiKey",
          "*.token",
          "*.apiKey",
          "*.*.token",
          "*.*.apiKey",
          "headers.authorization",
          "*.headers.authorization",
        ],
        censor: Redacted,
      },
      formatters: {
        log: (object) => redactor.value(object) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          const cleaned = args.map((a: unknown) => (typeof a === "string" ? redactor.text(a) : a));
          method.apply(this, cleaned as Parameters<typeof method>);
        },
      },
    },
    options.destination ?? pino.destination(2),
  );
}

/** A logger that writes nothing (tests, embedded use). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
