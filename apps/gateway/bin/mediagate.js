#!/usr/bin/env node
// The `mediagate` command (the package's bin, `pnpm mediagate`, the Docker image's entrypoint):
// runs the compiled CLI, or says what to do when it is not built or its dependencies are not
// installed, instead of Node's stack trace. Only node: built-ins are loaded before that check.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cli = new URL("../dist/bundle/cli.js", import.meta.url);
const repo = fileURLToPath(new URL("../../..", import.meta.url));

function stop(message) {
  process.stderr.write(`mediagate: ${message}\n`);
  process.exit(1);
}

if (!existsSync(cli)) {
  stop(
    `not built yet (${fileURLToPath(cli)} is missing). In ${repo} run \`pnpm install && pnpm build\`, ` +
      "or `bash scripts/start.sh`, which installs, builds and starts it.",
  );
}

try {
  await import(cli.href);
} catch (error) {
  if (error instanceof Error && "code" in error && error.code === "ERR_MODULE_NOT_FOUND") {
    stop(
      `a dependency is missing (${error.message}). In ${repo} run \`pnpm install && pnpm build\`.`,
    );
  }
  throw error;
}
