import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
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
 * creates it 0700).
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
        results.push({
          name: "home",
          ok: true,
          detail: `${home} does not exist yet (start creates it, mode 0700)`,
        });
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
      results.push({ name: "home", ok: true, detail: `${home} private (mode ${mode})` });
    }
  }
  return results;
}
