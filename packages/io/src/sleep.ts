/**
 * Waits `ms`. When `signal` aborts it settles early; the real one ({@link sleep}) then rejects
 * with the signal's reason, an injected one may resolve instead, so callers check the signal
 * rather than the outcome. Injected wherever a component waits between attempts, so tests
 * record the wait asked for and go on at once.
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The real {@link Sleep}: a timer, cleared (and its listener removed) when `signal` aborts. */
export const sleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
