import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.js";

/**
 * End-to-end tests share one Docker engine; run files one after another. In one module
 * registry (`isolate: false`): every file imports the same gateway, grammY and discord.js, and
 * loading them once instead of per file saves most of a minute of CPU; no test mocks a module
 * or keeps state in one, so nothing carries from one file to the next.
 */
export default mergeConfig(
  shared,
  defineConfig({
    test: {
      include: ["e2e/**/*.test.ts", "fakes/**/*.test.ts"],
      fileParallelism: false,
      isolate: false,
    },
  }),
);
