/**
 * pino's level names, apart from log.ts so that the config's schema (which every CLI command
 * loads, `--help` too) does not load pino and pino-pretty with them.
 */

/** pino's levels, most to least severe; `silent` logs nothing. */
export const LogLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** One of {@link LogLevels}. */
export type LogLevel = (typeof LogLevels)[number];
