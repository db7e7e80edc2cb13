import { stat } from "node:fs/promises";
import { DeadlineError, deadline } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import { isDamagedCode } from "./damage.js";
import { DatabaseWorker, programUrl } from "./database-worker.js";
import type { IntegrityDatabase } from "./integrity-database.js";
import { fromWire, wireCode } from "./protocol.js";

/** What {@link checkIntegrity} found. */
export type IntegrityReport =
  /** Nothing wrong, or nothing there yet (no file, or an empty one). */
  | { readonly status: "sound" }
  /** `problems`: what SQLite said, at most `IntegrityDefaults.maxProblems` lines. */
  | { readonly status: "damaged"; readonly problems: readonly string[] }
  /** The check could not run (a lock, an I/O error): `reason` says why. */
  | { readonly status: "unchecked"; readonly reason: string }
  /** Its signal aborted before the verdict (the database was closed): nothing was found. */
  | { readonly status: "stopped" }
  /** The opener did not ask for it (a short command: see `integrityCheck`). */
  | { readonly status: "skipped" };

/** Options of {@link checkIntegrity} and {@link checkIntegrityWithin}. */
export interface IntegrityOptions {
  /**
   * How long the check's connection waits for another process's lock. Default
   * `Defaults.database.busyTimeoutMs`.
   */
  readonly busyTimeoutMs?: number;
  /** How many problems are listed at most. Default `Defaults.database.integrityMaxProblems`. */
  readonly maxProblems?: number;
  /**
   * How long {@link checkIntegrityWithin} waits for the verdict. Default
   * `Defaults.database.integrityWaitMs`.
   */
  readonly waitMs?: number;
  /**
   * Stops the check (the database is being closed): the report is `stopped` at once, and the
   * check's thread is given up (it no longer keeps the process alive).
   */
  readonly signal?: AbortSignal | undefined;
}

/** Defaults of {@link IntegrityOptions}. */
export const IntegrityDefaults = {
  busyTimeoutMs: Defaults.database.busyTimeoutMs,
  maxProblems: Defaults.database.integrityMaxProblems,
  waitMs: Defaults.database.integrityWaitMs,
} as const satisfies Required<Omit<IntegrityOptions, "signal">>;

/**
 * Runs SQLite's `quick_check` on the database at `path` in a worker thread of its own, on a
 * read-only connection beside any other (WAL mode: it never blocks a writer, nor waits for
 * one). It reads every page of the file (the measured cost is with
 * `Defaults.database.integrityWaitMs`). Never rejects.
 */
export async function checkIntegrity(
  path: string,
  options: IntegrityOptions = {},
): Promise<IntegrityReport> {
  const settings = { ...IntegrityDefaults, ...options };
  const { signal } = options;
  const size = await stat(path).then(
    (info) => info.size,
    () => 0,
  );
  if (signal?.aborted) return Stopped;
  if (size === 0) return { status: "sound" };
  let worker: DatabaseWorker<IntegrityDatabase> | undefined;
  // The thread may be inside quick_check, where nothing interrupts it: it is given up instead.
  const giveUp = () => worker?.abandon();
  signal?.addEventListener("abort", giveUp, { once: true });
  try {
    worker = await DatabaseWorker.start<IntegrityDatabase>({
      program: programUrl("./integrity-database.js", import.meta.url),
      path,
      settings: { busyTimeoutMs: settings.busyTimeoutMs, maxProblems: settings.maxProblems },
      threadName: "mg-check",
      revive: ({ error }) => Object.assign(fromWire(error), { code: wireCode(error) }),
    });
    if (signal?.aborted) return Stopped;
    const problems = await worker.call("check");
    return problems.length === 0 ? { status: "sound" } : { status: "damaged", problems };
  } catch (error) {
    if (signal?.aborted) return Stopped;
    const reason = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown }).code;
    if (isDamagedCode(typeof code === "string" ? code : undefined)) {
      return { status: "damaged", problems: [reason] };
    }
    return { status: "unchecked", reason };
  } finally {
    signal?.removeEventListener("abort", giveUp);
    if (signal?.aborted) worker?.abandon();
    else await worker?.close().catch(() => {});
  }
}

const Stopped: IntegrityReport = { status: "stopped" };

/** A check that may outlast the wait of the opener (see {@link checkIntegrityWithin}). */
export interface OpenCheck {
  readonly path: string;
  /** How long the opener waited for it. */
  readonly waitMs: number;
  /** The report, when the check finished within `waitMs`; `undefined` when it goes on. */
  readonly early: IntegrityReport | undefined;
  /** The report, whenever the check finishes. */
  readonly report: Promise<IntegrityReport>;
}

/**
 * {@link checkIntegrity}, waited for at most `waitMs`: an opener learns of a damaged file
 * before it uses it, and a file too large to check in that time does not hold up the start
 * (the check goes on; its `report` comes later, or `stopped` once `signal` aborts).
 */
export async function checkIntegrityWithin(
  path: string,
  options: IntegrityOptions = {},
): Promise<OpenCheck> {
  const waitMs = options.waitMs ?? IntegrityDefaults.waitMs;
  const report = checkIntegrity(path, options);
  const early = await deadline(report, { timeoutMs: waitMs, what: "integrity check" }).catch(
    (error: unknown) => {
      if (error instanceof DeadlineError) return undefined; // still checking: `report` tells later
      throw error;
    },
  );
  return { path, waitMs, early, report };
}

/** The {@link OpenCheck} of an opener that skips the check. */
export function skippedCheck(path: string): OpenCheck {
  const skipped: IntegrityReport = { status: "skipped" };
  return { path, waitMs: 0, early: skipped, report: Promise.resolve(skipped) };
}
