import { defineConfig } from "vitest/config";

/**
 * The vitest settings every package merges. Docker-backed tests are slow to start
 * containers on a 2-core machine, so the default timeouts are generous; no test
 * asserts on wall-clock time (figures live in bench/).
 */
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    restoreMocks: true,
  },
});
