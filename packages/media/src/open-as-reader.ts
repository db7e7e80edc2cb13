import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { maySearch, NotReadable, UnsearchableOutside } from "./access.js";
import { errnoCode, type OpenHooks, type OpenResult, openChecked } from "./open-file.js";
import { isWithin, relativeTo } from "./paths.js";
import type { DeliveryPolicy } from "./policy.js";
import type { FileReader } from "./types.js";

/** A directory on the way to a file: held open, never through a symlink. */
const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Symlinks one path may pass through before it fails, as Linux's path walk (ELOOP). */
const MaxLinks = 40;

/**
 * Open `rel` below `root` (a real path) for upload only if `reader` could open it there
 * itself. The path is walked as the kernel walks it for that user, one name at a time through
 * held directory descriptors (`/proc/self/fd/<dir>/<name>`): each directory must let the reader
 * search it (owner, group and mode, see {@link maySearch}) before a name is looked up in it, a
 * symlink's target is walked the same way (a relative one from where it lies), and the file
 * itself must let the reader read it. A directory the reader cannot search stops the walk
 * whatever lies behind it, so a missing file there is refused like an existing one: the answer
 * tells nothing of what the directory holds. A path that leaves `root` (an absolute link, `..`
 * at the top) is followed on the host one name at a time only until it re-enters `root`, and
 * walked from there as above ({@link outside}). The descriptors are held from the top down, so
 * renaming or swapping a directory meanwhile changes nothing about the file opened; a name
 * swapped for a symlink after it was looked at fails its open (O_NOFOLLOW) and is refused.
 */
export async function openAsReader(
  root: string,
  rel: string,
  reader: FileReader,
  policy: DeliveryPolicy,
  hooks: OpenHooks = {},
): Promise<OpenResult> {
  const held: FileHandle[] = [];
  try {
    return await walk(root, rel, reader, policy, hooks, held);
  } catch (error) {
    return { result: "error", detail: errnoCode(error) };
  } finally {
    await Promise.all(held.map((handle) => handle.close().catch(() => {})));
  }
}

async function walk(
  root: string,
  rel: string,
  reader: FileReader,
  policy: DeliveryPolicy,
  hooks: OpenHooks,
  held: FileHandle[],
): Promise<OpenResult> {
  held.push(await open(root, DIRECTORY_FLAGS));
  /** Names of the held directories below `root`. */
  const names: string[] = [];
  let queue = componentsOf(rel);
  let links = 0;
  const here = (...more: string[]) => below(root, [...names, ...more]);

  while (true) {
    const dir = held[held.length - 1]!;
    if (!maySearch(await dir.stat(), reader)) {
      return { result: "denied", realPath: here(), detail: NotReadable };
    }
    const name = queue.shift();
    if (name === undefined) return { result: "not_regular", realPath: here() };
    // Out of the root: from its parent (`..` at the top) or from `/` (an absolute link).
    let leaving: { from: string; rest: string[] };
    if (name === "..") {
      if (names.length > 0) {
        names.pop();
        await held.pop()!.close();
        continue;
      }
      leaving = { from: dirname(root), rest: queue };
    } else {
      const at = `/proc/self/fd/${dir.fd}/${name}`;
      const step = await lookUp(at, here(name), queue.length === 0);
      if (step.kind === "directory") {
        held.push(step.handle);
        names.push(name);
        continue;
      }
      if (step.kind === "file") {
        const reason = policy.check(step.realPath);
        if (reason) return { result: "denied", realPath: step.realPath, detail: reason };
        await hooks.beforeOpen?.(step.realPath);
        return openChecked(at, step.realPath, root, policy, reader);
      }
      if (step.kind === "stop") return step.result;
      links += 1;
      if (links > MaxLinks) return { result: "error", realPath: here(name), detail: "ELOOP" };
      if (!step.target.startsWith("/")) {
        queue = [...componentsOf(step.target), ...queue];
        continue;
      }
      leaving = { from: "/", rest: [...componentsOf(step.target), ...queue] };
    }
    const back = await outside(leaving.from, leaving.rest, root, reader, links);
    if (back.kind === "stop") return back.result;
    links = back.links;
    while (held.length > 1) await held.pop()!.close();
    names.length = 0;
    queue = back.rest;
  }
}

/** Where a path that left the root went: back inside (the rest to walk from the root), or nowhere. */
type Return =
  | { readonly kind: "inside"; readonly rest: string[]; readonly links: number }
  | { readonly kind: "stop"; readonly result: OpenResult };

/**
 * Follow a path that left `root` on the host (the names of `rest`, from the real directory
 * `from`) one name at a time, only until it re-enters `root`: the
 * rest is then handed back to the reader's walk, which checks every directory from `root`
 * down. A symlink met outside is read, not resolved through, so a link that leads back inside
 * re-enters at `root` too. A name is looked up only in a directory the reader may search, as
 * inside: a directory it may not search ends the walk as `missing` with the detail
 * {@link UnsearchableOutside} (the container is then asked, as that user, and a path found
 * nowhere is withheld), so what such a directory holds is never told. A path that ends
 * outside `root` is `escapes_root`; one whose name is not there is `missing`.
 */
async function outside(
  from: string,
  rest: readonly string[],
  root: string,
  reader: FileReader,
  linksSoFar: number,
): Promise<Return> {
  let links = linksSoFar;
  let queue = [...rest];
  let at = from;
  while (!isWithin(at, root)) {
    const name = queue.shift();
    if (name === undefined)
      return { kind: "stop", result: { result: "escapes_root", realPath: at } };
    if (!maySearch(await stat(at), reader)) {
      return { kind: "stop", result: { result: "missing", detail: UnsearchableOutside } };
    }
    if (name === "..") {
      at = dirname(at);
      continue;
    }
    const next = at === "/" ? `/${name}` : `${at}/${name}`;
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(next);
    } catch (error) {
      return { kind: "stop", result: missingOr(error, undefined) };
    }
    if (stats.isSymbolicLink()) {
      links += 1;
      if (links > MaxLinks) return { kind: "stop", result: { result: "error", detail: "ELOOP" } };
      const target = await readlink(next);
      if (target.startsWith("/")) at = "/";
      queue = [...componentsOf(target), ...queue];
      continue;
    }
    if (stats.isDirectory()) {
      at = next;
      continue;
    }
    if (queue.length > 0) return { kind: "stop", result: { result: "missing", detail: "ENOTDIR" } };
    return { kind: "stop", result: { result: "escapes_root", realPath: next } };
  }
  return { kind: "inside", rest: [...componentsOf(relativeTo(at, root)), ...queue], links };
}

/** What one name under a held directory is, for the walk. */
type Step =
  | { readonly kind: "directory"; readonly handle: FileHandle }
  | { readonly kind: "file"; readonly realPath: string }
  | { readonly kind: "link"; readonly target: string }
  | { readonly kind: "stop"; readonly result: OpenResult };

/**
 * Look `at` up (one name under a held directory): a symlink answers its target; a name with
 * more of the path after it must be a directory, opened and held; the last name is the file.
 */
async function lookUp(at: string, realPath: string, last: boolean): Promise<Step> {
  let stats: Awaited<ReturnType<typeof lstat>>;
  try {
    stats = await lstat(at);
  } catch (error) {
    return { kind: "stop", result: missingOr(error, realPath) };
  }
  if (stats.isSymbolicLink()) return { kind: "link", target: await readlink(at) };
  if (last) return { kind: "file", realPath };
  if (!stats.isDirectory()) {
    return { kind: "stop", result: { result: "missing", realPath, detail: "ENOTDIR" } };
  }
  try {
    return { kind: "directory", handle: await open(at, DIRECTORY_FLAGS) };
  } catch (error) {
    // ELOOP: the directory became a symlink after it was looked at.
    if (errnoCode(error) === "ELOOP") {
      return { kind: "stop", result: { result: "escapes_root", realPath } };
    }
    return { kind: "stop", result: missingOr(error, realPath) };
  }
}

/** `missing` for a name that is not there (or not a directory), `error` otherwise. */
function missingOr(error: unknown, realPath: string | undefined): OpenResult {
  const code = errnoCode(error);
  return {
    result: code === "ENOENT" || code === "ENOTDIR" ? "missing" : "error",
    realPath,
    detail: code,
  };
}

function componentsOf(path: string): string[] {
  return path.split("/").filter((name) => name !== "" && name !== ".");
}

function below(root: string, names: readonly string[]): string {
  if (names.length === 0) return root;
  return root === "/" ? `/${names.join("/")}` : `${root}/${names.join("/")}`;
}
