import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.js";

/**
 * End-to-end tests share one Docker engine; three files run at a time (each test has its own
 * home, install id, fakes and ports, so files do not see each other's containers or chats).
 * Most of a test's time is spent waiting on the engine and child processes: on 2 cores two
 * workers took the suite from about 240 s to about 135 s when it was smaller; at 100 files
 * (666 s of tests) two workers packed them into 351 s with a core idle once the unit suites
 * beside it ended, which a third worker fills. In one module registry (`isolate: false`):
 * every file imports the same gateway, grammY and discord.js, and loading them once instead
 * of per file saves most of a minute of CPU; no test mocks a module or keeps state in one, so
 * nothing carries from one file to the next.
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
      maxWorkers: 3,
      isolate: false,
    },
  }),
);
