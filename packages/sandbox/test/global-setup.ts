import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TestImage, testEngine } from "./helpers.js";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Runs once before the Docker tests: the engine must answer, the busybox test image must
 * exist (built from the host's busybox when missing, nothing is pulled), and the package
 * is built because the cross-process test spawns a second Node process on `dist/`.
 */
export default async function setup(): Promise<void> {
  const engine = testEngine();
  await engine.ping();
  if (!(await engine.hasImage(TestImage))) {
    execFileSync("bash", [join(packageDir, "../../scripts/build-sandbox-image.sh"), TestImage], {
      stdio: "inherit",
    });
  }
  execFileSync(join(packageDir, "../../node_modules/.bin/tsc"), ["-p", "tsconfig.build.json"], {
    cwd: packageDir,
    stdio: "inherit",
  });
}
