import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** What {@link removeStaleBuilds} found and did. */
export interface StaleBuilds {
  /** The untagged images of docker/gateway/Dockerfile it removed. */
  readonly removed: readonly string[];
  /** The newest build stage, kept: the next build's cache. */
  readonly kept: string | undefined;
  /** Images it could not remove (a container uses them), each with the engine's answer. */
  readonly problems: readonly string[];
}

/** The labels of a Dockerfile's two stages (`<key>=<value>`), as docker/gateway/Dockerfile sets them. */
export interface BuildLabels {
  readonly stage: string;
  readonly image: string;
}

export const GatewayBuildLabels: BuildLabels = {
  stage: "mediagate.image=gateway-build",
  image: "mediagate.image=gateway",
};

/** Untagged images carrying `label` (`<key>=<value>`), newest first. */
export async function untaggedImages(label: string): Promise<string[]> {
  const { stdout } = await run("docker", [
    "images",
    "--quiet",
    "--no-trunc",
    "--filter",
    "dangling=true",
    "--filter",
    `label=${label}`,
  ]);
  const ids = [...new Set(stdout.split("\n").filter((id) => id !== ""))];
  if (ids.length < 2) return ids;
  const created = await run("docker", [
    "image",
    "inspect",
    "--format",
    "{{.Id}} {{.Created}}",
    ...ids,
  ]);
  return created.stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.split(" "))
    .sort((a, b) => Date.parse(b[1] ?? "") - Date.parse(a[1] ?? ""))
    .map(([id]) => id ?? "");
}

/**
 * Removes the images that earlier builds of docker/gateway/Dockerfile left untagged on this
 * engine, which the long suite's builds (the gateway image, the cluster profile) would otherwise
 * pile up whenever the code changed, on an engine that builds without BuildKit: each rebuild
 * leaves the previous image and its build stage without a tag (this machine held 21 of them
 * after a day of sessions, 3 GB of disk once the layers they share are counted once).
 *
 * Only images with the Dockerfile's labels ({@link GatewayBuildLabels}) are touched. The newest
 * build stage stays: it is the cache that spares the next build its `pnpm install`. Call it
 * after a build, with no other build of that file running.
 */
export async function removeStaleBuilds(
  labels: BuildLabels = GatewayBuildLabels,
): Promise<StaleBuilds> {
  const [kept, ...olderStages] = await untaggedImages(labels.stage);
  const removed: string[] = [];
  const problems: string[] = [];
  for (const id of [...olderStages, ...(await untaggedImages(labels.image))]) {
    try {
      await run("docker", ["rmi", id]);
      removed.push(id);
    } catch (error) {
      problems.push(`${id}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { removed, kept, problems };
}
