import { setMaxListeners } from "node:events";
/** A signal that aborts with the first of its sources, until its user lets go of them. */
export interface CombinedSignal {
  readonly signal: AbortSignal;
  /** Takes its listeners off the sources: call once the work it was made for has ended. */
  release(): void;
}

/**
 * The controller of a component's stop: its signal lives as long as the component and is handed
 * to every operation it runs (requests, retry waits, sends), each of which listens to it while
 * in flight and lets go when it ends. So it holds one listener per operation in flight, dozens
 * under load, which is no leak; Node's "possible EventTarget memory leak" warning past 10 would
 * print to stderr, outside the structured log, and tell an operator of a leak that is not there.
 * Its signal has no listener limit. That no listener stays behind is for tests to show
 * (`getEventListeners`).
 */
export function stopController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/**
 * A signal that aborts when any of `sources` does, with that source's reason (at once when one
 * already has). Unlike `AbortSignal.any`, which on Node 20 records every signal it makes in
 * each source for the source's whole life, it leaves a long-lived source (a process's stop
 * signal combined with each request's timeout) as it was once `release()` was called.
 */
export function combinedSignal(sources: readonly AbortSignal[]): CombinedSignal {
  const controller = new AbortController();
  const listening: { source: AbortSignal; onAbort: () => void }[] = [];
  const release = (): void => {
    for (const { source, onAbort } of listening.splice(0)) {
      source.removeEventListener("abort", onAbort);
    }
  };
  for (const source of sources) {
    if (source.aborted) {
      release();
      controller.abort(source.reason);
      break;
    }
    const onAbort = (): void => {
      release();
      controller.abort(source.reason);
    };
    // A long-lived source holds one listener per call in flight, each taken off by its
    // `release()`: a gateway's stop signal under 100 users has dozens, which is no leak, and
    // Node's warning past 10 would print to stderr outside the structured log. (Node 20's
    // `getMaxListeners` refuses an AbortSignal, so the limit is set every time: a property.)
    setMaxListeners(0, source);
    source.addEventListener("abort", onAbort, { once: true });
    listening.push({ source, onAbort });
  }
  return { signal: controller.signal, release };
}
