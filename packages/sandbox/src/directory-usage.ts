import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Bytes a directory tree takes on disk (allocated blocks), links not followed; stops counting
 * after `maxEntries` entries (`complete` false then).
 */
export async function directoryUsage(
  dir: string,
  maxEntries = 100_000,
): Promise<{ bytes: number; complete: boolean }> {
  let bytes = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    let entries: string[];
    try {
      const info = await lstat(current);
      bytes += info.blocks * 512;
      if (!info.isDirectory()) continue;
      entries = await readdir(current);
    } catch {
      continue;
    }
    for (const name of entries) {
      if (++seen > maxEntries) return { bytes, complete: false };
      stack.push(join(current, name));
    }
  }
  return { bytes, complete: true };
}
