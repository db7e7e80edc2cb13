import { untilAborted } from "@mediagate/io";
import type { DockerEngine } from "./engine.js";
import type { ImagePullProgress } from "./types.js";

/**
 * Images this process found on an engine or pulled there (`endpoint|image`). A failed check
 * or pull is not kept, so the next acquire tries again (the registry may be back); a create
 * that finds the image gone after all drops it too ({@link forgetImage}).
 */
const readyImages = new Map<string, Promise<void>>();

function keyOf(engine: DockerEngine, image: string): string {
  return `${engine.endpoint}|${image}`;
}

/**
 * Makes sure `image` is on the engine before a container of it is made: looked up once per
 * process and engine, and pulled when it is missing (progress to `onProgress`). Callers that
 * ask while a pull runs wait for the same pull; a caller's `signal` only stops its own wait,
 * never the pull the others wait for. Throws `ImageMissingError` (with the engine's reason)
 * when the engine cannot pull it, `DockerUnavailableError` when the engine does not answer.
 */
export async function ensureImage(
  engine: DockerEngine,
  image: string,
  options: {
    onProgress?: ((progress: ImagePullProgress) => void) | undefined;
    stallTimeoutMs?: number | undefined;
    /** Bound of the look-up (`DockerEngine#hasImage`). */
    inspectTimeoutMs?: number | undefined;
    signal?: AbortSignal | undefined;
  },
): Promise<void> {
  const key = keyOf(engine, image);
  let ready = readyImages.get(key);
  if (ready === undefined) {
    ready = (async () => {
      if (await engine.hasImage(image, options.inspectTimeoutMs)) return;
      await engine.pullImage(image, {
        onProgress: options.onProgress,
        stallTimeoutMs: options.stallTimeoutMs,
      });
    })();
    readyImages.set(key, ready);
    const settled = ready;
    settled.catch(() => {
      if (readyImages.get(key) === settled) readyImages.delete(key);
    });
  }
  await untilAborted(ready, options.signal);
}

/** Forgets that `image` was on the engine (a create just found it missing). */
export function forgetImage(engine: DockerEngine, image: string): void {
  readyImages.delete(keyOf(engine, image));
}
