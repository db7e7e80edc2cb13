import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.js";

/**
 * End-to-end tests share one Docker engine; two files run at a time (each test has its own
 * home, install id, fakes and ports, so files do not see each other's containers or chats):
 * most of a test's time is spent waiting on the engine and child processes, and two workers
 * took the suite from about 240 s to about 135 s on 2 cores when it was small. A third worker
 * was tried at 700 tests: the whole test command is CPU-bound on 2 cores by then (about 11
 * core-minutes of work), and it gained nothing measurable (7 min 39 s and 8 min 11 s against
 * 7 min 25 s with two). In one module registry (`isolate: false`): every file imports the same
 * gateway, grammY and discord.js, and loading them once instead of per file saves most of a
 * minute of CPU; no test mocks a module or keeps state in one, so nothing carries from one
 * file to the next.
 */
export default mergeConfig(
  shared,
  defineConfig({
    test: {
      include: [
        "e2e/**/*.test.ts",
        "fakes/**/*.test.ts",
        "long/durability/**/*.test.ts",
        "../test-support/**/*.test.ts",
      ],
      // Chaos tests beside the e2e files they share harnesses with: the long suite's.
      exclude: ["e2e/**/*.long.test.ts"],
      setupFiles: ["setup/no-leak-warnings.ts"],
      maxWorkers: 2,
      isolate: false,
    },
  }),
);
