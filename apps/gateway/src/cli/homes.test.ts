import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { testEnvironment } from "../../../../test-support/engine.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { readEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { checkHomes } from "./homes.js";
import { runStart } from "./start.js";

const run = promisify(execFile);

/**
 * Runs `body` with `dir` made read-only by a read-only bind mount of itself (root only, as
 * on the dev machines and CI), unmounted however `body` ends.
 */
async function readOnly<T>(dir: string, body: () => Promise<T>): Promise<T> {
  await run("mount", ["--bind", dir, dir]);
  try {
    await run("mount", ["-o", "remount,bind,ro", dir]);
    return await body();
  } finally {
    await run("umount", [dir]);
  }
}

async function configIn(dir: string, home: string): Promise<string> {
  const file = join(dir, "mediagate.yaml");
  await writeFile(
    file,
    `home: ${home}\nprofiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test, diskLimitBytes: 0 }\n`,
  );
  return file;
}

describe("home checks", () => {
  it("fail a home on a read-only file system, which doctor passed and start could not open", async () => {
    const dir = await tempDirForTest("mg-homes-");
    const home = join(dir, "home");
    await mkdir(home, { mode: 0o700 });
    const config = await loadConfig({ path: await configIn(dir, home), env: readEnv({}) });

    const results = await readOnly(home, () => checkHomes(config));

    expect(results).toEqual([
      {
        name: "home",
        ok: false,
        detail: `${home} is on a read-only file system`,
        fix: `remount the file system of ${home} read-write, or set home: to a directory on a writable one`,
      },
    ]);
  });

  it("start names a home it cannot make on a read-only file system, not mkdir's ENOENT", async () => {
    const dir = await tempDirForTest("mg-homes-");
    const parent = join(dir, "ro");
    await mkdir(parent);
    const home = join(parent, "a", "home");
    const config = await configIn(dir, home);

    const failed = await readOnly(parent, () =>
      runStart({ config, env: readEnv(testEnvironment(dir)) }).catch((error: unknown) => error),
    );

    expect(failed).toMatchObject({
      code: "MG_START_CHECK_FAILED",
      message: `home: ${home} does not exist and cannot be made: ${parent} is on a read-only file system\n  fix: remount the file system of ${parent} read-write, or set home: to a directory on a writable one`,
    });
  });
});
