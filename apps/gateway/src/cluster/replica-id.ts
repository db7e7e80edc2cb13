import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { ReplicaIdPattern } from "../config/cluster-schema.js";
import { ReplicaIdFileError } from "./errors.js";

/** The file in the root home that keeps a generated replica id across restarts. */
export const ReplicaIdFileName = "replica-id";

/**
 * This replica's id (docs/cluster.md): `configured` when the config sets `cluster.replicaId`;
 * otherwise the one kept in `<rootHome>/replica-id`, generated the first time
 * (`<host>-<6 hex>`) and written there atomically, so it stays the same across restarts.
 * A file holding no valid id rejects with {@link ReplicaIdFileError} (nothing is overwritten).
 */
export async function resolveReplicaId(
  rootHome: string,
  configured: string | undefined,
): Promise<string> {
  if (configured !== undefined) return configured;
  const path = join(rootHome, ReplicaIdFileName);
  let text: string | undefined;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (text !== undefined) return parsed(path, text);
  const id = generatedReplicaId(hostname());
  await mkdir(rootHome, { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${id}\n`, { mode: 0o644 });
  try {
    // A link, not a rename: of two processes starting on one new home, the second finds the
    // first one's id and uses it.
    await link(temporary, path);
    return id;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return parsed(path, await readFile(path, "utf8"));
  } finally {
    await rm(temporary, { force: true });
  }
}

function parsed(path: string, text: string): string {
  const id = text.trim();
  if (!ReplicaIdPattern.test(id))
    throw new ReplicaIdFileError(path, `"${id.slice(0, 80)}" is not a replica id`);
  return id;
}

/** `<host>-<6 hex>`: the host name made label-safe and cut short, then a random suffix. */
export function generatedReplicaId(host: string): string {
  const safe = host
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 40);
  const suffix = randomBytes(3).toString("hex");
  return safe === "" ? `replica-${suffix}` : `${safe}-${suffix}`;
}
