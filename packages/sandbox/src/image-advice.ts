/** Repository name of the images `scripts/build-sandbox-image.sh` makes by convention. */
const OwnRepository = "mediagate-sandbox";

/** The repository part of an image reference (no registry host, tag or digest is stripped). */
function repositoryOf(ref: string): string {
  const withoutDigest = ref.split("@")[0] ?? ref;
  const lastSlash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.indexOf(":", lastSlash + 1);
  return colon === -1 ? withoutDigest : withoutDigest.slice(0, colon);
}

/**
 * What an operator can do about a sandbox image the engine does not have, as one sentence
 * naming the right commands for `ref` (docs/sandbox-images.md). The offline build makes a
 * busybox sandbox and `docker/sandbox` a Debian one: they are suggested under the configured
 * name only for `mediagate-sandbox` names, never under the name of an image that is something
 * else (a `python:3.12-slim` built from busybox would be a lie).
 */
export function missingImageAdvice(ref: string): string {
  const copy = `docker pull ${ref} where a registry is reachable, or docker save on another host and docker load here`;
  if (repositoryOf(ref) === OwnRepository) {
    return `build it offline with scripts/build-sandbox-image.sh ${ref} (busybox), or build the Debian sandbox with docker build -t ${ref} docker/sandbox where the engine can pull, or ${copy}`;
  }
  return `get it onto the Docker host (${copy}), or build a busybox sandbox offline with scripts/build-sandbox-image.sh ${OwnRepository}:local and set sandbox.image: ${OwnRepository}:local`;
}
