import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.js";

/**
 * The long suite (`pnpm test:long`): races run for many iterations, crash loops and soaks.
 * Too slow for the everyday `pnpm test`; `.ci/run` runs it after the main suite.
 */
export default mergeConfig(
  shared,
  defineConfig({
    test: {
      // e2e/*.long.test.ts: outages and replica failovers, which use the e2e harnesses.
      include: ["long/**/*.long.test.ts", "e2e/**/*.long.test.ts"],
      fileParallelism: false,
      testTimeout: 600_000,
      hookTimeout: 120_000,
    },
  }),
);
