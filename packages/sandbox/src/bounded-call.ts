/**
 * A bound of its own for each Docker request/response call (create, start, inspect, list,
 * stop, remove, exec create/start, image inspect), so a wedged daemon cannot hold a slot's
 * lock forever (docs/sandbox.md: cleanup is bounded, never fire-and-forget). Long-running exec and
 * attach streams are not bounded here: they have their own timeouts and caps.
 */

/** How long one lifecycle call may take, and the caller's signal that cancels it too. */
export interface CallBound {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** A lifecycle call got no answer within its bound; the request was aborted. */
export class CallTimeoutError extends Error {
  override readonly name = "CallTimeoutError";
  /** The Docker call, e.g. `create container`, `stop`. */
  readonly call: string;
  readonly timeoutMs: number;
  /** The container (id or name) the call was about, when there is one. */
  readonly containerId: string | undefined;

  constructor(call: string, timeoutMs: number, containerId?: string) {
    const about = containerId === undefined ? "" : ` of container ${containerId.slice(0, 12)}`;
    super(`Docker ${call}${about} got no answer within ${timeoutMs} ms`);
    this.call = call;
    this.timeoutMs = timeoutMs;
    this.containerId = containerId;
  }
}

/**
 * Runs one Docker call with a signal that aborts its HTTP request (dockerode 4 passes
 * `abortSignal` to docker-modem, which hands it to `http.request`) after `bound.timeoutMs`
 * or when `bound.signal` aborts. The returned promise settles at the bound even if the call
 * ignores the signal (image inspect does): it rejects with {@link CallTimeoutError}, or with
 * the caller's abort reason. The timer stops once the call answers, so a streamed response
 * body is never cut by it.
 */
export async function boundedCall<T>(
  call: string,
  bound: CallBound,
  fn: (signal: AbortSignal) => Promise<T>,
  containerId?: string,
): Promise<T> {
  const caller = bound.signal;
  caller?.throwIfAborted();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onCallerAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new CallTimeoutError(call, bound.timeoutMs, containerId);
      reject(error);
      controller.abort(error);
    }, bound.timeoutMs);
    onCallerAbort = () => {
      reject(caller?.reason);
      controller.abort(caller?.reason);
    };
    caller?.addEventListener("abort", onCallerAbort, { once: true });
  });
  try {
    return await Promise.race([fn(controller.signal), stopped]);
  } finally {
    clearTimeout(timer);
    if (onCallerAbort !== undefined) caller?.removeEventListener("abort", onCallerAbort);
  }
}

/**
 * Settles like `work`, or rejects with the signal's reason as soon as it aborts (at once when
 * it already has). `work` keeps running: the caller only stops waiting for it.
 */
export async function untilAborted<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) {
    work.catch(() => undefined); // settles unobserved
    throw signal.reason;
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
  }
}
