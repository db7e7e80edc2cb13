import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TestImage, testEngine } from "./helpers.js";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");

/** When the newest file under `dir` was last modified (0 for an empty or missing one). */
function newestChange(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile())
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Whether `dist/` is missing or older than a source file. */
function distStale(): boolean {
  try {
    return (
      statSync(join(packageDir, "dist/index.js")).mtimeMs < newestChange(join(packageDir, "src"))
    );
  } catch {
    return true;
  }
}

/**
 * Runs once before the Docker tests: the engine must answer, the busybox test image must
 * exist (built from the host's busybox when missing, nothing is pulled), and the package
 * must be built because the cross-process test spawns a second Node process on `dist/`.
 * It is built here only when it is missing or older than `src/`: `pnpm test` builds it
 * first (turbo), and rewriting it in place while the gateway's and the e2e tests load it
 * from their own processes would break their imports half-way.
 */
export default async function setup(): Promise<void> {
  const engine = testEngine();
  await engine.ping();
  if (!(await engine.hasImage(TestImage))) {
    execFileSync("bash", [join(packageDir, "../../scripts/build-sandbox-image.sh"), TestImage], {
      stdio: "inherit",
    });
  }
  if (distStale()) {
    execFileSync(join(packageDir, "../../node_modules/.bin/tsc"), ["-p", "tsconfig.build.json"], {
      cwd: packageDir,
      stdio: "inherit",
    });
  }
}
