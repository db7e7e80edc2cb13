import { constants } from "node:fs";
import { access, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { GatewayConfig } from "../config/types.js";
import type { CheckResult } from "./preflight.js";

/** Group and other permission bits: any of them lets another host user into a home. */
const SharedBits = 0o077;

/** The root home, then each profile home (the `default` profile's is the root home). */
function homesOf(config: GatewayConfig): string[] {
  return [...new Set([config.home, ...config.profiles.map((p) => p.home)])];
}

/**
 * Creates the root home and every profile home that does not exist yet, mode 0700 (parents it
 * has to make too, `<root>/profiles` among them). An existing directory keeps its mode:
 * {@link checkHomes} says whether it is private.
 */
export async function createHomes(config: GatewayConfig): Promise<void> {
  await mkdir(config.home, { recursive: true, mode: 0o700 });
  if (config.profiles.some((p) => p.home !== config.home)) {
    await mkdir(join(config.home, "profiles"), { recursive: true, mode: 0o700 });
  }
  for (const home of homesOf(config)) await mkdir(home, { recursive: true, mode: 0o700 });
}

/**
 * One `home` check per home: private when it is a directory owned by this user with no group
 * or other permission bits. A home other host users can enter would let them run what a chat
 * user left in a slot's bind (a setuid file, say) or read the profiles' state, so `start`
 * refuses it, naming the directory and the fix. A home that does not exist yet passes (`start`
 * creates it 0700) when the directory it would be made in is writable. A home this user cannot
 * write in (a read-only file system, a mode without `w`) fails too: the journal and the state
 * databases could not be opened.
 */
export async function checkHomes(config: GatewayConfig): Promise<CheckResult[]> {
  const uid = process.geteuid?.();
  const results: CheckResult[] = [];
  for (const home of homesOf(config)) {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(home);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") {
        const parent = await existingAncestor(home);
        const unwritable = await notWritable(parent);
        results.push(
          unwritable === undefined
            ? {
                name: "home",
                ok: true,
                detail: `${home} does not exist yet (start creates it, mode 0700)`,
              }
            : {
                name: "home",
                ok: false,
                detail: `${home} does not exist and cannot be made: ${parent} ${unwritable.detail}`,
                fix: unwritable.fix(parent),
              },
        );
      } else {
        results.push({
          name: "home",
          ok: false,
          detail: `${home} cannot be inspected (${String(code)})`,
        });
      }
      continue;
    }
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    if (!info.isDirectory()) {
      results.push({ name: "home", ok: false, detail: `${home} is not a directory` });
    } else if (uid !== undefined && info.uid !== uid) {
      results.push({
        name: "home",
        ok: false,
        detail: `${home} is owned by uid ${info.uid}, not by this user (uid ${uid}), so another host user controls it; fix: chown ${uid} ${home} && chmod 700 ${home}`,
      });
    } else if ((info.mode & SharedBits) !== 0) {
      results.push({
        name: "home",
        ok: false,
        detail: `${home} is reachable by other host users (mode ${mode}); fix: chmod 700 ${home}`,
      });
    } else {
      const unwritable = await notWritable(home);
      results.push(
        unwritable === undefined
          ? { name: "home", ok: true, detail: `${home} private (mode ${mode})` }
          : {
              name: "home",
              ok: false,
              detail: `${home} ${unwritable.detail}`,
              fix: unwritable.fix(home),
            },
      );
    }
  }
  return results;
}

/** The nearest directory above `path` (or `path` itself) that exists. */
async function existingAncestor(path: string): Promise<string> {
  let dir = dirname(path);
  for (;;) {
    try {
      await stat(dir);
      return dir;
    } catch {
      const up = dirname(dir);
      if (up === dir) return dir;
      dir = up;
    }
  }
}

/** Why this user cannot write in `dir`, with the fix, or `undefined` when it can. */
async function notWritable(
  dir: string,
): Promise<{ detail: string; fix: (dir: string) => string } | undefined> {
  try {
    await access(dir, constants.W_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EROFS") {
      return {
        detail: "is on a read-only file system",
        fix: (d) =>
          `remount the file system of ${d} read-write, or set home: to a directory on a writable one`,
      };
    }
    return {
      detail: `is not writable by this user (${String(code)})`,
      fix: (d) => `chmod u+w ${d}, or run mediagate as the user that owns it`,
    };
  }
}
