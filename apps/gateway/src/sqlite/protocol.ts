/**
 * The messages between a {@link DatabaseWorker} and its thread. Internal to `sqlite/`.
 * Values cross by structured clone (plain data, `Map`s); errors cross as {@link WireError}
 * and are rebuilt as their own classes on the main thread.
 */
import { isErrorCode } from "@mediagate/io/mediagate-error";

/** What the thread is started with (`workerData`). */
export interface WorkerStart {
  /** URL of the program module; it exports `openInWorker(path, settings)`. */
  readonly program: string;
  readonly path: string;
  readonly settings: unknown;
  /** The thread's name, see `DatabaseWorkerOptions.threadName`. */
  readonly threadName?: string | undefined;
  /**
   * One `Int32` the main thread sets to non-zero when it lets the thread go
   * (`DatabaseWorker.abandon`, a close that timed out): the thread runs no further call, not
   * even the rest of the batch it is in, and ends (see {@link StopMessage}).
   */
  readonly stop: SharedArrayBuffer;
}

/**
 * Main → thread, outside any batch: the thread has been let go. It ends as soon as it reads
 * this, which is once it is out of the call it is in, if any: it is never terminated from
 * outside while it may be inside SQLite (database-worker.ts says why).
 */
export const StopMessage = "stop";

/** Main → thread, in a batch (an array, run in its order): run one operation of the program. */
export interface CallRequest {
  readonly id: number;
  readonly method: string;
  readonly args: readonly unknown[];
}

/** Thread → main: the answer to one call (a batch's answers come in one array). */
export type CallReply =
  | { readonly type: "result"; readonly id: number; readonly value: unknown }
  | { readonly type: "failure"; readonly id: number; readonly error: WireError };

/** Thread → main. */
export type WorkerReply =
  | { readonly type: "ready" }
  | { readonly type: "open-failed"; readonly error: WireError }
  | CallReply;

/** An error as it crosses the thread boundary: its class name, message and plain fields. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  /**
   * SQLite's result code (`SQLITE_FULL`, …), a Node errno code (`ENOSPC`) or a mediagate
   * error's `MG_` code, if any.
   */
  readonly code?: string | undefined;
  /** Own enumerable string/number/boolean fields (`operation`, `path`, `found`, …). */
  readonly fields: Readonly<Record<string, string | number | boolean>>;
  readonly cause?: WireError | undefined;
}

/** Flattens an error (and its first causes) into a {@link WireError}. */
export function toWire(error: unknown, depth = 0): WireError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error), fields: {} };
  const fields: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      fields[key] = value;
    }
  }
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
  const cause = error.cause !== undefined && depth < 3 ? toWire(error.cause, depth + 1) : undefined;
  return { name: error.name, message: error.message, code, fields, cause };
}

/** A plain `Error` standing for a {@link WireError} (as the `cause` of a rebuilt error). */
export function fromWire(wire: WireError): Error {
  const error = new Error(
    wire.message,
    wire.cause === undefined ? undefined : { cause: fromWire(wire.cause) },
  );
  error.name = wire.name;
  if (wire.code !== undefined) Object.assign(error, { code: wire.code });
  return error;
}

/**
 * The first SQLite or errno `code` along `wire` and its causes; a mediagate error's `MG_` code
 * (a schema too new, thrown in the thread) is not one.
 */
export function wireCode(wire: WireError | undefined): string | undefined {
  for (let at = wire; at !== undefined; at = at.cause) {
    if (at.code !== undefined && !isErrorCode(at.code)) return at.code;
  }
  return undefined;
}

export function isCallRequest(value: unknown): value is CallRequest {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.id === "number" && typeof record.method === "string" && Array.isArray(record.args)
  );
}
