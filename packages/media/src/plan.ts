import path from "node:path";
import { classify, SNIFF_BYTES } from "./classify.js";
import { spoolFromContainer } from "./container-file.js";
import { Defaults } from "./defaults.js";
import { MediaConfigError } from "./errors.js";
import { extractMedia, type MediaExtraction } from "./extract.js";
import type { DescriptorFile, OpenHooks } from "./open-file.js";
import { normalizeAbsolute, parseVolumes } from "./paths.js";
import { createRealPolicy, withRealPaths } from "./policy.js";
import { type ResolveSetup, resolveOnHost } from "./resolve.js";
import type {
  CandidateTrace,
  MediaKind,
  MediaOutcome,
  MediaPlan,
  ReadyMedia,
  TranslateContext,
  UploadLimits,
} from "./types.js";

/** Defaults of the optional `TranslateContext` fields. */
export const PlanDefaults = Defaults.plan;

/**
 * How many in-container symlinks the container fallback follows for one tag. The reader
 * names the real path with every link resolved, so one hop is enough; the bound only
 * guards against a source that answers links forever (or a path that keeps moving).
 */
const MaxContainerLinkHops = 2;

const KINDS: readonly MediaKind[] = ["photo", "animation", "video", "audio", "voice", "document"];

/**
 * Turn an agent's final reply into text plus typed outcomes, one per distinct tag (docs/media.md).
 *
 * Text: directives and the tags of `ready`, `denied` and `too_large` outcomes are removed (a
 * denied path is never echoed; the notices say what happened), `unreachable` tags stay
 * visible. Files: each found file is held open by descriptor until `dispose()`; two tags
 * naming one file (same dev/ino) yield one outcome. A file over its kind's limit that still
 * fits the document limit is sent as a document instead (a 20 MB photo on Telegram).
 * A docker path found on no host layout (every candidate missing, none refused) is read
 * through `ctx.container` (a read inside the container) when given, capped at the largest limit.
 * The caller owns the plan and must call `dispose()` after delivery; if planning throws,
 * every descriptor opened so far is closed first.
 */
export function planMedia(
  reply: string,
  ctx: TranslateContext,
  limits: UploadLimits,
): Promise<MediaPlan> {
  return planMediaWithHooks(reply, ctx, limits, {});
}

/** `planMedia` with the open seam tests use to swap files mid-check. Internal. */
export async function planMediaWithHooks(
  reply: string,
  ctx: TranslateContext,
  limits: UploadLimits,
  hooks: OpenHooks,
): Promise<MediaPlan> {
  checkContext(ctx);
  const extraction = extractMedia(reply);
  const setup = await prepareSetup(ctx, hooks);
  const maxFiles = ctx.maxFiles ?? PlanDefaults.maxFiles;
  const outcomes: MediaOutcome[] = [];
  const keep = new Set<string>();
  const identities = new Set<string>();
  try {
    await planTags();
  } catch (error) {
    await Promise.all(outcomes.map((o) => (o.status === "ready" ? o.file.close() : undefined)));
    throw error;
  }
  return createPlan(extraction.render(keep), extraction, outcomes);

  async function planTags(): Promise<void> {
    for (const [index, tag] of extraction.tags.entries()) {
      ctx.signal?.throwIfAborted();
      if (index >= maxFiles) {
        keep.add(tag.path);
        outcomes.push({
          status: "unreachable",
          path: tag.path,
          reason: "over_max_files",
          candidates: [],
        });
        continue;
      }
      const outcome = await planOne(tag.path, ctx, setup, limits, extraction);
      if (outcome.status === "unreachable") keep.add(tag.path);
      if (outcome.status === "ready") {
        const identity = (outcome.file as DescriptorFile).identity;
        if (identities.has(identity)) {
          await outcome.file.close();
          continue;
        }
        identities.add(identity);
      }
      outcomes.push(outcome);
    }
  }
}

async function planOne(
  tagPath: string,
  ctx: TranslateContext,
  setup: ResolveSetup,
  limits: UploadLimits,
  extraction: MediaExtraction,
  hops = 0,
): Promise<MediaOutcome> {
  const host = await resolveOnHost(tagPath, setup);
  if (host.status === "found") {
    return finish(host.path, host.file, host.candidates, limits, extraction);
  }
  if (host.status === "denied") return host;
  if (ctx.backend !== "docker" || !ctx.container) return host;
  const cap = Math.max(...KINDS.map((kind) => limits.maxBytes(kind)));
  const spooled = await spoolFromContainer(ctx.container, host.path, cap, ctx.tmpDir);
  const trace = (result: CandidateTrace["result"], detail?: string): CandidateTrace[] => [
    ...host.candidates,
    { source: "container", path: host.path, root: "", result, detail },
  ];
  switch (spooled.result) {
    case "ok":
      return finish(host.path, spooled.file, trace("ok"), limits, extraction);
    case "too_large": {
      const { kind } = await classify(new Uint8Array(0), host.path, extraction);
      const candidates = trace("too_large", `${spooled.size} bytes`);
      return {
        status: "too_large",
        path: host.path,
        kind,
        size: spooled.size,
        limit: cap,
        candidates,
      };
    }
    case "missing":
      return { ...host, candidates: trace("missing") };
    case "link": {
      // The link's target is planned like a tag of its own: the deny list applies to the real
      // path (docs/media.md), and a link to an ordinary file in the container still delivers.
      const linked = trace("symlink", spooled.target);
      if (hops >= MaxContainerLinkHops) return { ...host, candidates: linked };
      const inner = await planOne(spooled.target, ctx, setup, limits, extraction, hops + 1);
      const candidates = [...linked, ...inner.candidates];
      return inner.status === "ready"
        ? { ...inner, candidates }
        : { ...inner, path: host.path, candidates };
    }
    case "error":
      return { ...host, candidates: trace("error", spooled.detail) };
  }
}

/** Classify an open file and apply the limits; closes it unless it is ready. */
async function finish(
  requested: string,
  file: DescriptorFile,
  candidates: CandidateTrace[],
  limits: UploadLimits,
  extraction: MediaExtraction,
): Promise<MediaOutcome> {
  const filename = path.posix.basename(requested);
  let classification: Awaited<ReturnType<typeof classify>>;
  try {
    classification = await classify(await file.readAt(0, SNIFF_BYTES), filename, extraction);
  } catch (error) {
    await file.close();
    throw error;
  }
  let { kind } = classification;
  const { size } = file;
  const documentLimit = limits.maxBytes("document");
  if (size > limits.maxBytes(kind) && kind !== "document" && size <= documentLimit) {
    kind = "document";
  }
  const limit = limits.maxBytes(kind);
  if (size > limit) {
    await file.close();
    return { status: "too_large", path: requested, kind, size, limit, candidates };
  }
  return {
    status: "ready",
    path: requested,
    kind,
    filename,
    mime: classification.mime,
    size,
    file,
    candidates,
  };
}

function createPlan(
  text: string,
  extraction: MediaExtraction,
  outcomes: readonly MediaOutcome[],
): MediaPlan {
  const ready = outcomes.filter((o): o is ReadyMedia => o.status === "ready");
  let disposed: Promise<void> | undefined;
  return {
    text,
    asVoice: extraction.asVoice,
    asDocument: extraction.asDocument,
    outcomes,
    ready: () => [...ready],
    dispose() {
      disposed ??= Promise.all(ready.map((item) => item.file.close())).then(() => undefined);
      return disposed;
    },
  };
}

/** Resolve what a plan reuses for every tag (policy, volumes, allow-dirs). Internal: fuzz. */
export async function prepareSetup(
  ctx: TranslateContext,
  hooks: OpenHooks = {},
): Promise<ResolveSetup> {
  const slotDirs = ctx.slotDirs.map(normalizeAbsolute);
  const allowDirs = (await withRealPaths(ctx.allowDirs)).sort((a, b) => b.length - a.length);
  const policy = await createRealPolicy({
    allowDirs: ctx.allowDirs,
    protectedHomes: ctx.protectedHomes,
    homes: slotDirs.map((dir) => path.join(dir, "home")),
  });
  return {
    backend: ctx.backend,
    slotDirs,
    volumes: parseVolumes(ctx.volumes),
    allowDirs,
    policy,
    realRoots: new Map(),
    hooks,
  };
}

function checkContext(ctx: TranslateContext): void {
  if (ctx.backend !== "docker" && ctx.backend !== "local") {
    throw new MediaConfigError("backend", ctx.backend, `"docker" or "local"`);
  }
  const lists = {
    slotDirs: ctx.slotDirs,
    allowDirs: ctx.allowDirs,
    protectedHomes: ctx.protectedHomes,
  };
  for (const [field, list] of Object.entries(lists)) {
    const bad = list.find((dir) => !path.isAbsolute(dir));
    if (bad !== undefined) throw new MediaConfigError(field, bad, "absolute directory paths");
  }
  if (!path.isAbsolute(ctx.tmpDir)) {
    throw new MediaConfigError("tmpDir", ctx.tmpDir, "an absolute directory path");
  }
  const max = ctx.maxFiles;
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 0)) {
    throw new MediaConfigError("maxFiles", max, "a non-negative integer");
  }
}
