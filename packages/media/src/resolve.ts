import { realpath } from "node:fs/promises";
import path from "node:path";
import { UnsearchableOutside } from "./access.js";
import { openAsReader } from "./open-as-reader.js";
import {
  type DescriptorFile,
  errnoCode,
  type OpenHooks,
  type OpenResult,
  openInsideRoot,
} from "./open-file.js";
import {
  containerPathOf,
  isWithin,
  normalizeAbsolute,
  relativeTo,
  type VolumeMount,
} from "./paths.js";
import type { DeliveryPolicy } from "./policy.js";
import type { CandidateSource, CandidateTrace, FileReader } from "./types.js";

/** The reason of a tag whose real path leaves its candidate's root. */
export const EscapesRoot = "symlink escapes its root";

/** Container paths below this are the gateway's own home, never read through `/root`. */
export const GATEWAY_HOME_IN_CONTAINER = "/root/.mediagate";

/** Everything host resolution needs, prepared once per plan. */
export interface ResolveSetup {
  readonly backend: "docker" | "local";
  readonly slotDirs: readonly string[];
  /** Longest container path first. */
  readonly volumes: readonly VolumeMount[];
  /** Longest first. */
  readonly allowDirs: readonly string[];
  readonly policy: DeliveryPolicy;
  /** Real path of each candidate root, memoised (`undefined` when missing). */
  readonly realRoots: Map<string, Promise<string | undefined>>;
  /** Who must be able to read a file of a volume or slot dir; asked once (`TranslateContext.reader`). */
  readonly reader?: (() => Promise<FileReader>) | undefined;
  readonly hooks?: OpenHooks | undefined;
}

/** Where a tagged path led on the host. */
export type HostResolution =
  | {
      readonly status: "found";
      readonly path: string;
      readonly file: DescriptorFile;
      readonly candidates: CandidateTrace[];
    }
  | {
      readonly status: "denied";
      readonly path: string;
      readonly reason: string;
      readonly candidates: CandidateTrace[];
    }
  | {
      readonly status: "unreachable";
      readonly path: string;
      readonly reason: "not_found";
      readonly candidates: CandidateTrace[];
      /**
       * A candidate left its root on the host and met a directory its session cannot search
       * ({@link UnsearchableOutside}): found nowhere else, the tag is withheld, not "not found".
       */
      readonly behindUnsearchable?: true;
    };

interface Candidate {
  readonly source: CandidateSource;
  readonly path: string;
  readonly root: string;
}

/**
 * Find the host file a tag names (docs/media.md, translation steps 1 and 2). The requested path is
 * checked by the policy first, then each candidate in order — volumes (longest container
 * prefix first), then `/workspace` and `/root` through every slot directory, or the allow-dirs
 * for the local backend — until one opens. With `setup.reader`, a volume or slot-dir candidate
 * opens only if that user could open it itself ({@link openAsReader}). A candidate whose real
 * path escapes its root, is denied or is not the reader's to read is skipped; if no candidate
 * opens and one of them was refused that way, the outcome is `denied` (the tag pointed at
 * something it must not), otherwise `unreachable` (marked `behindUnsearchable` when a
 * candidate left its root into a directory its session cannot search).
 */
export async function resolveOnHost(tagPath: string, setup: ResolveSetup): Promise<HostResolution> {
  const requested = setup.backend === "docker" ? containerPathOf(tagPath) : hostPathOf(tagPath);
  if (requested === undefined) {
    return { status: "denied", path: tagPath, reason: "invalid path", candidates: [] };
  }
  if (requested === "")
    return { status: "unreachable", path: tagPath, reason: "not_found", candidates: [] };
  const reason = setup.policy.check(requested);
  if (reason) return { status: "denied", path: requested, reason, candidates: [] };
  if (setup.backend === "docker" && isWithin(requested, GATEWAY_HOME_IN_CONTAINER)) {
    return { status: "denied", path: requested, reason: "gateway home", candidates: [] };
  }
  const candidates =
    setup.backend === "docker"
      ? dockerCandidates(requested, setup)
      : localCandidates(requested, setup);
  if (setup.backend === "local" && candidates.length === 0) {
    return { status: "denied", path: requested, reason: "outside media.allowDirs", candidates: [] };
  }
  const traces: CandidateTrace[] = [];
  let refusal: string | undefined;
  let hidden = false;
  for (const candidate of candidates) {
    const root = await realRoot(candidate.root, setup);
    if (root === undefined) {
      traces.push({ ...candidate, result: "missing", detail: "root missing" });
      continue;
    }
    const opened = await openCandidate(candidate, root, setup);
    if (opened.result === "ok") {
      traces.push({ ...candidate, result: "ok", detail: opened.realPath });
      return { status: "found", path: requested, file: opened.file, candidates: traces };
    }
    const detail = [opened.realPath, opened.detail].filter(Boolean).join(" ");
    traces.push({ ...candidate, result: opened.result, detail: detail || undefined });
    if (opened.result === "escapes_root") refusal ??= EscapesRoot;
    if (opened.result === "denied") refusal ??= opened.detail ?? "denied";
    if (opened.result === "missing" && opened.detail === UnsearchableOutside) hidden = true;
  }
  if (refusal) return { status: "denied", path: requested, reason: refusal, candidates: traces };
  return {
    status: "unreachable",
    path: requested,
    reason: "not_found",
    candidates: traces,
    ...(hidden ? { behindUnsearchable: true } : {}),
  };
}

/**
 * Open a candidate: a file of a volume or slot dir as the session could (when a reader is
 * given), one of an allow-dir (the local backend has no sessions' users) as the gateway can.
 */
async function openCandidate(
  candidate: Candidate,
  root: string,
  setup: ResolveSetup,
): Promise<OpenResult> {
  if (candidate.source === "allow_dir" || setup.reader === undefined) {
    return openInsideRoot(candidate.path, root, setup.policy, setup.hooks);
  }
  let reader: FileReader;
  try {
    reader = await setup.reader();
  } catch (error) {
    const detail = error instanceof Error ? error.message : errnoCode(error);
    return { result: "error", detail: `who may read it is unknown: ${detail}` };
  }
  const rel = relativeTo(candidate.path, candidate.root);
  return openAsReader(root, rel, reader, setup.policy, setup.hooks);
}

/** Host path of a local-backend tag: absolute, normalized; "" when relative. */
function hostPathOf(tagPath: string): string | undefined {
  if (tagPath.includes("\0")) return undefined;
  return tagPath.startsWith("/") ? normalizeAbsolute(tagPath) : "";
}

function dockerCandidates(requested: string, setup: ResolveSetup): Candidate[] {
  const out: Candidate[] = [];
  for (const mount of setup.volumes) {
    if (!isWithin(requested, mount.container)) continue;
    out.push(candidate("volume", mount.host, relativeTo(requested, mount.container)));
  }
  const mappings = [
    { prefix: "/workspace", dir: "workspace", source: "workspace" },
    { prefix: "/root", dir: "home", source: "home" },
  ] as const;
  for (const { prefix, dir, source } of mappings) {
    if (!isWithin(requested, prefix)) continue;
    for (const slot of setup.slotDirs) {
      out.push(candidate(source, path.join(slot, dir), relativeTo(requested, prefix)));
    }
  }
  return out;
}

function localCandidates(requested: string, setup: ResolveSetup): Candidate[] {
  return setup.allowDirs
    .filter((dir) => isWithin(requested, dir))
    .map((dir) => candidate("allow_dir", dir, relativeTo(requested, dir)));
}

function candidate(source: CandidateSource, root: string, rel: string): Candidate {
  if (rel === "") return { source, root, path: root };
  return { source, root, path: root === "/" ? `/${rel}` : `${root}/${rel}` };
}

function realRoot(root: string, setup: ResolveSetup): Promise<string | undefined> {
  let found = setup.realRoots.get(root);
  if (!found) {
    found = realpath(root).catch(() => undefined);
    setup.realRoots.set(root, found);
  }
  return found;
}
