import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.js";

/** End-to-end tests share one Docker engine; run files one after another. */
export default mergeConfig(
  shared,
  defineConfig({
    test: {
      include: ["e2e/**/*.test.ts", "fakes/**/*.test.ts"],
      fileParallelism: false,
    },
  }),
);
