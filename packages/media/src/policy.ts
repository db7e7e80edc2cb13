import { realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isWithin, normalizeAbsolute, relativeTo } from "./paths.js";

/** System directories never delivered from unless `media.allowDirs` opens a part of them. */
export const SYSTEM_DIRS = [
  "/etc",
  "/proc",
  "/sys",
  "/dev",
  "/boot",
  "/run",
  "/var/run",
  "/var/lib",
  "/var/log",
] as const;

/** Entries directly under any home that hold credentials (compared case-insensitively). */
export const HOME_SECRETS = new Set([
  ".ssh",
  ".aws",
  ".gnupg",
  ".kube",
  ".docker",
  ".config",
  ".azure",
  ".gcloud",
  ".netrc",
  ".git-credentials",
  ".npmrc",
  ".pypirc",
]);

const PROFILE_SECRETS = new Set([
  ".env",
  "config.yaml",
  "mediagate.yaml",
  "credentials",
  "sessions",
]);

/** The directories the policy treats as homes and the allowlist, already absolute. */
export interface PolicyOptions {
  readonly allowDirs: readonly string[];
  /** Profile homes (and the root home): their secrets and home credentials are denied. */
  readonly protectedHomes: readonly string[];
  /** Further homes whose credential entries are denied (each slot's `home` directory). */
  readonly homes: readonly string[];
}

/** Decides whether a path may be delivered; `check` returns the reason it may not. */
export interface DeliveryPolicy {
  check(absolutePath: string): string | undefined;
}

/**
 * The credential surface of docs/media.md. A path is denied when it is:
 * - the Docker socket (any file named `docker.sock`);
 * - a profile home's secret: an entry directly under a protected home, or under
 *   `<home>/profiles/<name>`, named `.env`/`.env.*`, `config.yaml`, `mediagate.yaml`,
 *   `auth*`, `credentials`, `sessions` or `state.db*`, and everything below it;
 * - a credential entry (`HOME_SECRETS`) directly under any home, and everything below it.
 *   "Any home" is `/root`, every `/home/<user>`, the gateway user's home (`os.homedir()`),
 *   every protected home and every slot's `home` directory. Deeper entries (a project's own
 *   `.config`) are not credentials of a home and stay deliverable;
 * - inside a system directory (`SYSTEM_DIRS`), unless inside an allow-dir.
 * Allow-dirs open system directories only: credentials are never sent, whatever the agent
 * or the configuration asks.
 */
export function createPolicy(options: PolicyOptions): DeliveryPolicy {
  const allowDirs = options.allowDirs.map(normalizeAbsolute);
  const profileHomes = options.protectedHomes.map(normalizeAbsolute);
  const homes = [
    "/root",
    normalizeAbsolute(os.homedir()),
    ...profileHomes,
    ...options.homes.map(normalizeAbsolute),
  ];
  return {
    check(absolutePath) {
      const p = normalizeAbsolute(absolutePath);
      if (path.posix.basename(p).toLowerCase() === "docker.sock") return "docker socket";
      for (const home of profileHomes) {
        if (isWithin(p, home) && isProfileSecret(relativeTo(p, home))) return "profile secret";
      }
      for (const home of homes) {
        if (isWithin(p, home) && isHomeSecret(relativeTo(p, home))) return "home credential";
      }
      if (p.startsWith("/home/") && isHomeSecret(p.split("/").slice(3).join("/"))) {
        return "home credential";
      }
      const system = SYSTEM_DIRS.find((dir) => isWithin(p, dir));
      if (system && !allowDirs.some((dir) => isWithin(p, dir))) return `system directory ${system}`;
      return undefined;
    },
  };
}

/** Build a policy whose homes and allow-dirs count both as given and as real paths. */
export async function createRealPolicy(options: PolicyOptions): Promise<DeliveryPolicy> {
  return createPolicy({
    allowDirs: await withRealPaths(options.allowDirs),
    protectedHomes: await withRealPaths(options.protectedHomes),
    homes: await withRealPaths(options.homes),
  });
}

/** Each path as given plus its real path when that exists and differs. */
export async function withRealPaths(paths: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const p of paths) {
    if (!path.isAbsolute(p)) continue;
    out.add(normalizeAbsolute(p));
    try {
      out.add(await realpath(p));
    } catch {
      // Missing directories still count under their configured name.
    }
  }
  return [...out];
}

function isHomeSecret(rel: string): boolean {
  const first = rel.split("/", 1)[0]!.toLowerCase();
  return HOME_SECRETS.has(first);
}

function isProfileSecret(rel: string): boolean {
  const parts = rel.split("/");
  const first = parts[0]!.toLowerCase();
  if (isProfileSecretName(first)) return true;
  return first === "profiles" && parts.length > 2 && isProfileSecretName(parts[2]!.toLowerCase());
}

function isProfileSecretName(name: string): boolean {
  return (
    PROFILE_SECRETS.has(name) ||
    name.startsWith(".env.") ||
    name.startsWith("auth") ||
    name.startsWith("state.db")
  );
}
