import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../../vitest.shared.js";

/**
 * One module registry per worker (`isolate: false`), as in the gateway: no test mocks a module
 * or keeps state in one, and dockerode is loaded once per worker instead of once per file.
 * Two files at a time: the files wait on the engine far more than they compute (the suite
 * used under half of 2 cores), and one at a time made this package the suite's longest
 * (380 s). Each test owns its labels, owner ids and slot directories, as the e2e files do.
 */
export default mergeConfig(
  shared,
  defineConfig({ test: { globalSetup: ["test/global-setup.ts"], isolate: false, maxWorkers: 2 } }),
);
