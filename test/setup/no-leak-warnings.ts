import { afterEach, expect } from "vitest";

/**
 * Fails the test during which the process printed Node's "possible memory leak" warning (too
 * many listeners on one emitter or signal). The gateway runs in these tests' processes; in an
 * operator's it would print to stderr, outside the structured log, and claim a leak. A
 * component's stop signal, which every operation in flight listens to, is made with
 * `stopController()` (@mediagate/io) for that reason. Node warns once per emitter, so the
 * warning is caught in whichever test first goes past the limit.
 */
const state = globalThis as { mediagateLeakWarnings?: string[] };
if (state.mediagateLeakWarnings === undefined) {
  const warnings: string[] = [];
  state.mediagateLeakWarnings = warnings;
  process.on("warning", (warning) => {
    // The stack says who added the listener past the limit (as `--trace-warnings` would print).
    if (warning.name === "MaxListenersExceededWarning") {
      warnings.push(warning.stack ?? warning.message);
    }
  });
}
const warnings = state.mediagateLeakWarnings;

afterEach(async () => {
  // Node emits its warnings on the next tick.
  await new Promise((resolve) => setImmediate(resolve));
  expect(warnings.splice(0), "listener-leak warnings printed during this test").toEqual([]);
});
