import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger };

/** Matches the token segment of Telegram Bot API URLs: `/bot123456:AA…/method`. */
const BotUrlToken = /\/bot\d+:[A-Za-z0-9_-]+/g;
const MinSecretLength = 6;
const MaxScrubDepth = 6;

/**
 * Removes secrets from a string: Telegram `/bot<token>` URL segments and every registered
 * secret value (bot tokens, API keys) wherever it appears.
 */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(BotUrlToken, "/bot<redacted>");
  for (const secret of secrets) {
    if (secret.length >= MinSecretLength && out.includes(secret)) {
      out = out.split(secret).join("<redacted>");
    }
  }
  return out;
}

function scrub(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === "string") return redactText(value, secrets);
  if (depth >= MaxScrubDepth || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    // Keep the class (pino's err serializer names it) but scrub every string it carries.
    const copy = Object.create(Object.getPrototypeOf(value) as object) as Error;
    for (const key of ["name", "message", "stack"] as const) {
      const text = value[key];
      if (text !== undefined) {
        Object.defineProperty(copy, key, { value: redactText(text, secrets), writable: true });
      }
    }
    if (value.cause !== undefined) copy.cause = scrub(value.cause, secrets, depth + 1);
    for (const [key, v] of Object.entries(value)) {
      (copy as unknown as Record<string, unknown>)[key] = scrub(v, secrets, depth + 1);
    }
    return copy;
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = scrub(v, secrets, depth + 1);
  return out;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level; default `info`. */
  readonly level?: string | undefined;
  /** Secret values (tokens, API keys) to cut out of every log line. */
  readonly secrets?: readonly string[];
  /** Where lines go; default stderr (stdout belongs to the console channel). */
  readonly destination?: DestinationStream;
}

/**
 * The gateway's pino logger. Secrets never reach a log line by construction: keys named
 * `token`, `apiKey`, `authorization` are censored, and every string (messages, error messages
 * and stacks, nested fields) is scrubbed of `/bot<token>` URL segments and registered secrets.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = [...(options.secrets ?? [])];
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
        censor: "<redacted>",
      },
      formatters: {
        log: (object) => scrub(object, secrets, 0) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          const cleaned = args.map((a: unknown) =>
            typeof a === "string" ? redactText(a, secrets) : a,
          );
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
