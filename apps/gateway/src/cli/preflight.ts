import {
  type DockerEngine,
  ImageMissingError,
  type ImagePullProgress,
  missingImageAdvice,
} from "@mediagate/sandbox";
import type { GatewayConfig } from "../config/types.js";

/** One start-up / doctor check. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** One line saying what was found (or what failed). */
  readonly detail: string;
  /** What to do about a failure, when there is something to say. */
  readonly fix?: string | undefined;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What to do when the engine does not answer. */
export const DockerFix =
  "start the Docker engine (as root: bash scripts/ensure-docker.sh, or systemctl start docker), or point DOCKER_HOST at one that runs";

/** How {@link checkSandbox} treats a missing image. */
export type MissingImagePolicy =
  /** `start`: pull it now, progress to `onProgress`; a failed pull fails the check. */
  | { readonly pull: true; readonly onProgress: (progress: ImagePullProgress) => void }
  /** `doctor`: pull nothing, only ask whether the engine could. */
  | { readonly pull: false };

/**
 * Checks the sandbox side of a config: the Docker daemon answers at its endpoint, and every
 * profile's image is there. A missing image is pulled (start) or checked for being pullable
 * (doctor, which pulls nothing): one that can be pulled passes, since start pulls it; one that
 * cannot fails with the commands that fit the image (docs/sandbox-images.md). Image checks
 * are skipped when Docker cannot be reached.
 */
export async function checkSandbox(
  config: GatewayConfig,
  engine: DockerEngine,
  missing: MissingImagePolicy = { pull: false },
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  try {
    await engine.ping();
    results.push({ name: "docker", ok: true, detail: `reachable at ${engine.endpoint}` });
  } catch (error) {
    results.push({ name: "docker", ok: false, detail: reason(error), fix: DockerFix });
    return results;
  }
  const images = [...new Set(config.profiles.map((p) => p.sandbox.image))];
  for (const image of images) {
    try {
      results.push(await checkImage(engine, image, missing));
    } catch (error) {
      results.push({ name: "image", ok: false, detail: `${image}: ${reason(error)}` });
    }
  }
  return results;
}

async function checkImage(
  engine: DockerEngine,
  image: string,
  missing: MissingImagePolicy,
): Promise<CheckResult> {
  if (await engine.hasImage(image)) return { name: "image", ok: true, detail: `${image} present` };
  const fix = missingImageAdvice(image);
  if (missing.pull) {
    try {
      await engine.pullImage(image, { onProgress: missing.onProgress });
      return { name: "image", ok: true, detail: `${image} pulled` };
    } catch (error) {
      if (!(error instanceof ImageMissingError)) throw error;
      const why = error.pullFailure ?? "no reason given";
      return {
        name: "image",
        ok: false,
        detail: `${image} is not on the Docker host and could not be pulled (${why})`,
        fix,
      };
    }
  }
  const registry = await engine.checkRegistry(image);
  if (registry.pullable) {
    return {
      name: "image",
      ok: true,
      detail: `${image} not on the Docker host yet; the engine can pull it, and mediagate start will`,
    };
  }
  return {
    name: "image",
    ok: false,
    detail: `${image} not found on the Docker host, and the engine cannot pull it (${registry.reason})`,
    fix,
  };
}
