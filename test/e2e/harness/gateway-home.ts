import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Gateway, type GatewayEnv, readEnv } from "@mediagate/gateway";
import { testEnvironment } from "../../../test-support/engine.js";
import { DockerObserver } from "./docker-observer.js";

/** The sandbox image every end-to-end test runs (busybox, built by the set-up). */
export const TestImage = "mediagate-sandbox:test";

/**
 * A profile name no other test run uses (`<prefix>-<8 hex>`): containers are found by their
 * `mediagate.profile` label, so runs sharing the engine never see each other's.
 */
export function uniqueProfileName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/**
 * The environment a gateway under test gets: nothing set but its user home and the test run's
 * `DOCKER_HOST` (so it uses the same engine as the test's own checks).
 */
export function testEnv(home: string): GatewayEnv {
  return readEnv(testEnvironment(home));
}

/** A fresh temp directory to serve as `MEDIAGATE_HOME` for one test file. */
export function createTempHome(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `mediagate-${prefix}-`));
}

/**
 * Stops the gateway, removes every container of its profiles (through the sandbox, then any
 * leftover the engine still lists under the profile and install labels) and deletes the home.
 */
export async function teardownGateway(gateway: Gateway | undefined, home: string): Promise<void> {
  if (gateway !== undefined) {
    await gateway.stop();
    const docker = new DockerObserver();
    for (const runtime of gateway.runtimes.values()) {
      for (const c of await runtime.sandbox.list().catch(() => [])) {
        await runtime.sandbox.remove(c.id).catch(() => {});
      }
      const leftovers = await docker.containers({
        "mediagate.agent": "1",
        "mediagate.profile": runtime.name,
        "mediagate.install": runtime.sandbox.install,
      });
      for (const c of leftovers) await docker.removeForce(c.id);
    }
  }
  if (home !== "") {
    await releaseMounts(home);
    await rm(home, { recursive: true, force: true });
  }
}

/**
 * Unmounts the slot disks (loop-mounted images, `diskLimitBytes`) still mounted below `home`,
 * deepest first, so a test never leaves a mount or a loop device behind.
 */
export async function releaseMounts(home: string): Promise<void> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  const points = info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${home}/`));
  for (const point of points.reverse()) execFileSync("umount", [point]);
}

/** The one polling helper of the tests, here for the harness's users. */
export { waitUntil } from "../../../test-support/wait.js";
