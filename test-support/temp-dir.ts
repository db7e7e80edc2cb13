import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";

/**
 * A fresh directory `<os temp dir>/<prefix>XXXXXX` that is removed, with everything in it,
 * when the running test finishes, passed or failed: the suites leave nothing in /tmp. Call it
 * from a test (or a helper a test calls); a directory a whole file shares is made in
 * `beforeAll` and removed in `afterAll` instead.
 */
export async function tempDirForTest(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
