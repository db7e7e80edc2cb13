import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../../vitest.shared.js";

/**
 * One module registry per worker (`isolate: false`), as in the gateway: no test mocks a module
 * or keeps state in one, and dockerode is loaded once per worker instead of once per file.
 */
export default mergeConfig(
  shared,
  defineConfig({ test: { globalSetup: ["test/global-setup.ts"], isolate: false } }),
);
