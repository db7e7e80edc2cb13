import { MediagateError } from "@mediagate/io";
import {
  type Bindings,
  type ChildLoggerOptions,
  type DestinationStream,
  type Level,
  type Logger,
  pino,
} from "pino";
import { prettyFactory } from "pino-pretty";
import { Defaults } from "./defaults.js";
import { type LogLevel, LogLevels } from "./log-levels.js";
import { Redacted, Redactor } from "./redact.js";

export { type LogLevel, LogLevels } from "./log-levels.js";
export type { Logger };

/** How log lines are written: one JSON object per line, or pino-pretty's readable lines. */
export type LogFormat = "json" | "pretty";

/** Defaults of the gateway's logging (docs/operations.md). */
export const LogDefaults = Defaults.log satisfies {
  readonly level: LogLevel;
  readonly consoleLevel: LogLevel;
  readonly pretty: { translateTime: string; ignore: string; singleLine: boolean };
};

/** A log level setting holds something that is not a level. */
export class LogLevelError extends MediagateError {
  override readonly name = "LogLevelError";
  readonly code = "MG_CONFIG_LOG_LEVEL";
  constructor(
    /** Where the value came from: `LOG_LEVEL` or the config key `log.level`. */
    readonly setting: string,
    readonly value: string,
  ) {
    super(
      `${setting}=${JSON.stringify(value.slice(0, 40))} is not a log level; use one of: ${LogLevels.join(", ")}`,
    );
  }
}

/** Whether `value` is one of {@link LogLevels}. */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === "string" && (LogLevels as readonly string[]).includes(value);
}

/**
 * The level the gateway logs at: `LOG_LEVEL` (`fromEnv`) wins over the config's `log.level`
 * (`fromConfig`), which wins over `fallback`.
 * @throws LogLevelError naming `LOG_LEVEL` (or `log.level`) and the valid levels.
 */
export function resolveLogLevel(options: {
  fromEnv?: string | undefined;
  fromConfig?: string | undefined;
  fallback: LogLevel;
}): LogLevel {
  for (const [setting, value] of [
    ["LOG_LEVEL", options.fromEnv],
    ["log.level", options.fromConfig],
  ] as const) {
    if (value === undefined) continue;
    if (!isLogLevel(value)) throw new LogLevelError(setting, value);
    return value;
  }
  return options.fallback;
}

/** Something log lines can be written to (a stream, a file descriptor's writer). */
export interface LineSink {
  write(line: string): unknown;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Default `info`. */
  readonly level?: LogLevel | undefined;
  /** Secret values (tokens, API keys) to cut out of every log line. */
  readonly secrets?: readonly string[];
  /**
   * The redactor every line goes through (the CLI's, which knows the whole config's secrets,
   * also those learnt after the logger was made); default one built from `secrets`.
   */
  readonly redactor?: Redactor | undefined;
  /** Where lines go; default stderr (stdout belongs to the console channel). */
  readonly destination?: LineSink | undefined;
  /**
   * `pretty` renders each entry with pino-pretty (time, level, message, then the fields on
   * the same line; an error's stack below it); `json` writes pino's JSON lines. Default
   * {@link stderrLogFormat} when the lines go to stderr, `json` to any other destination.
   */
  readonly format?: LogFormat | undefined;
  /** Also keeps every JSON line here (the web console's Logs page), before any pretty-printing. */
  readonly ring?: { push(line: string): void } | undefined;
}

/**
 * The gateway's pino logger. Secrets never reach a log line by construction: keys named
 * `token`, `apiKey`, `authorization` are censored, and every string (messages, error messages
 * and stacks, nested fields) goes through the {@link Redactor}. Lines are written
 * synchronously, so none is lost when the process exits right after.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const redactor = options.redactor ?? new Redactor(options.secrets ?? []);
  const sink = options.destination ?? stderrSink();
  const format = options.format ?? (options.destination === undefined ? stderrLogFormat() : "json");
  return pino(
    {
      level: options.level ?? LogDefaults.level,
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
    teed(format === "pretty" ? prettySink(sink) : (sink as DestinationStream), options.ring),
  );
}

/** `sink`, each line also kept in `ring` (as JSON, whatever `sink` makes of it). */
function teed(sink: DestinationStream, ring: LoggerOptions["ring"]): DestinationStream {
  if (ring === undefined) return sink;
  return {
    write: (line: string) => {
      ring.push(line);
      sink.write(line);
    },
  };
}

/**
 * pino-pretty's formatter run in-process on each JSON line (its stream form is asynchronous
 * and could drop the last lines at exit).
 */
function prettySink(sink: LineSink): DestinationStream {
  const render = prettyFactory({ ...LogDefaults.pretty });
  return { write: (line: string) => void sink.write(render(line)) };
}

/** stderr, written synchronously. */
export function stderrSink(): LineSink {
  return pino.destination({ dest: 2, sync: true });
}

/** `pretty` when stderr is a terminal (a person reads it), `json` otherwise (a collector does). */
export function stderrLogFormat(): LogFormat {
  return process.stderr.isTTY === true ? "pretty" : "json";
}

/** A logger that writes nothing (tests, embedded use). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** The methods that write a line, each a level. */
const LineMethods: ReadonlySet<PropertyKey> = new Set<Level>([
  "fatal",
  "error",
  "warn",
  "info",
  "debug",
  "trace",
]);
/** A lazy child's real logger (made on the spot when asked for). */
const Made = Symbol("made");
const writeNothing = (): void => {};

/**
 * `parent.child(bindings)`, made only once it is needed: when it writes a line at a level its
 * parent writes, or is asked for anything else. Until then a line below the level costs a
 * no-op, and a child of it is lazy too (made from it once made). For the children made per
 * message, where a line is the exception: bench:e2e's text-only windows spent about 3 % of the
 * main thread on six of them per answer (pino serializes each child's bindings through the
 * redaction paths as it makes it), almost none of which ever wrote a line. What a made child
 * writes is exactly what `parent.child(bindings)` would have.
 */
export function lazyChild(parent: Logger, bindings: Bindings): Logger {
  let made: Logger | undefined;
  const make = (): Logger => {
    made ??= madeOf(parent).child(bindings);
    return made;
  };
  const lazy: Logger = new Proxy(parent, {
    get(_, property) {
      if (property === Made) return make();
      if (made === undefined) {
        if (LineMethods.has(property) && !parent.isLevelEnabled(property as Level)) {
          return writeNothing;
        }
        // An unmade child has its parent's level (pino's children inherit it).
        if (property === "isLevelEnabled") return (level: string) => parent.isLevelEnabled(level);
        if (property === "level") return parent.level;
        if (property === "child") {
          return (more: Bindings, options?: ChildLoggerOptions) =>
            options === undefined ? lazyChild(lazy, more) : make().child(more, options);
        }
      }
      const target = make();
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_, property, value) {
      return Reflect.set(make(), property, value);
    },
  });
  return lazy;
}

/** The logger a lazy child stands for (made now), or `logger` itself. */
function madeOf(logger: Logger): Logger {
  return (logger as unknown as { [Made]?: Logger })[Made] ?? logger;
}
