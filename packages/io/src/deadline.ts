import { type ErrorCode, MediagateError } from "./mediagate-error.js";

/** What {@link deadline} waited for did not settle within its time. */
export class DeadlineError extends MediagateError {
  override readonly name: string = "DeadlineError";
  readonly code: ErrorCode = "MG_IO_TIMEOUT";

  /**
   * @param what what was waited for ("ping", "acquiring telegram:42"), as the message says it
   * @param message replaces the default `<what> timed out after <timeoutMs> ms`
   */
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    message = `${what} timed out after ${timeoutMs} ms`,
  ) {
    super(message);
  }
}

/** Options of {@link deadline}. */
export interface DeadlineOptions {
  /** How long to wait. */
  readonly timeoutMs: number;
  /** What is waited for, named by the {@link DeadlineError} ("ping", "closing a session shell"). */
  readonly what: string;
  /** The caller's signal: its abort ends the wait at once, rejecting with its reason. */
  readonly signal?: AbortSignal | undefined;
  /** Builds the error of the timeout instead of a plain {@link DeadlineError} (a subclass with more context). */
  readonly timeoutError?: (() => DeadlineError) | undefined;
  /** The timer does not keep the process alive (a wait during shutdown). Default false. */
  readonly unref?: boolean | undefined;
}

/**
 * Settles like `work`, unless `timeoutMs` passes first (rejects with a {@link DeadlineError})
 * or `signal` aborts first (rejects with its reason; at once when it already has). Given a
 * function, `work` is called with a signal that aborts with that same error or reason, so a
 * request it starts is really cancelled; the promise settles at the bound even when `work`
 * ignores the signal. Once settled, the timer is cleared and the listener on `signal` removed.
 */
export function deadline<T>(
  work: Promise<T> | ((signal: AbortSignal) => Promise<T>),
  options: DeadlineOptions,
): Promise<T> {
  const timeout = {
    ms: options.timeoutMs,
    unref: options.unref === true,
    error: () => options.timeoutError?.() ?? new DeadlineError(options.what, options.timeoutMs),
  };
  return bounded(work, options.signal, timeout);
}

/**
 * Settles like `work`, or rejects with the signal's reason as soon as it aborts (at once when
 * it already has). `work` keeps running: the caller only stops waiting for it.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return signal === undefined ? work : bounded(work, signal, undefined);
}

/**
 * Waits until `work` settles (either way) or `timeoutMs` passes, whichever comes first; true
 * when it settled. Never rejects: for a wait that is only bounded (a drain, a grace period
 * after a kill), where running out of time is an outcome, not a failure.
 */
export async function settledWithin(
  work: Promise<unknown>,
  timeoutMs: number,
  options: { readonly unref?: boolean | undefined } = {},
): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  return deadline(settled, { timeoutMs, what: "settling", unref: options.unref }).catch(
    () => false,
  );
}

interface Timeout {
  readonly ms: number;
  readonly unref: boolean;
  readonly error: () => Error;
}

async function bounded<T>(
  work: Promise<T> | ((signal: AbortSignal) => Promise<T>),
  signal: AbortSignal | undefined,
  timeout: Timeout | undefined,
): Promise<T> {
  if (signal?.aborted) {
    if (typeof work !== "function") work.catch(() => undefined); // settles unobserved
    throw signal.reason;
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const stop = (reason: unknown) => {
      reject(reason);
      controller.abort(reason);
    };
    if (timeout !== undefined) {
      timer = setTimeout(() => stop(timeout.error()), timeout.ms);
      if (timeout.unref) timer.unref();
    }
    if (signal !== undefined) {
      onAbort = () => stop(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([
      typeof work === "function" ? work(controller.signal) : work,
      stopped,
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
  }
}
