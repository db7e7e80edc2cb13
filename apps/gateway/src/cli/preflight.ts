import type { DockerEngine } from "@mediagate/sandbox";
import type { GatewayConfig } from "../config/types.js";

/** One start-up / doctor check. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** One line saying what was found (or what failed and how to fix it). */
  readonly detail: string;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Checks the sandbox side of a config: the Docker daemon answers at its endpoint, and every
 * profile's image is present (nothing is ever pulled). Image checks are skipped when Docker
 * cannot be reached.
 */
export async function checkSandbox(
  config: GatewayConfig,
  engine: DockerEngine,
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  try {
    await engine.ping();
    results.push({ name: "docker", ok: true, detail: `reachable at ${engine.endpoint}` });
  } catch (error) {
    results.push({ name: "docker", ok: false, detail: reason(error) });
    return results;
  }
  const images = [...new Set(config.profiles.map((p) => p.sandbox.image))];
  for (const image of images) {
    try {
      const present = await engine.hasImage(image);
      results.push({
        name: "image",
        ok: present,
        detail: present
          ? `${image} present`
          : `${image} not found on the Docker host (nothing is pulled; build it with scripts/build-sandbox-image.sh ${image})`,
      });
    } catch (error) {
      results.push({ name: "image", ok: false, detail: `${image}: ${reason(error)}` });
    }
  }
  return results;
}
