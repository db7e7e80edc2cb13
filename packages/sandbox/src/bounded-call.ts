import { DeadlineError, deadline } from "@mediagate/io";

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
export class CallTimeoutError extends DeadlineError {
  override readonly name = "CallTimeoutError";
  override readonly code = "MG_DOCKER_CALL_TIMEOUT";
  /** The Docker call, e.g. `create container`, `stop`. */
  readonly call: string;
  /** The container (id or name) the call was about, when there is one. */
  readonly containerId: string | undefined;

  constructor(call: string, timeoutMs: number, containerId?: string) {
    const about = containerId === undefined ? "" : ` of container ${containerId.slice(0, 12)}`;
    const what = `Docker ${call}${about}`;
    super(what, timeoutMs, `${what} got no answer within ${timeoutMs} ms`);
    this.call = call;
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
export function boundedCall<T>(
  call: string,
  bound: CallBound,
  fn: (signal: AbortSignal) => Promise<T>,
  containerId?: string,
): Promise<T> {
  return deadline(fn, {
    timeoutMs: bound.timeoutMs,
    what: `Docker ${call}`,
    signal: bound.signal,
    timeoutError: () => new CallTimeoutError(call, bound.timeoutMs, containerId),
  });
}
