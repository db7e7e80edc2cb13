import path from "node:path";
import { Readable } from "node:stream";
import { classify, type KindDirectives, SNIFF_BYTES } from "./classify.js";
import { spoolFromContainer } from "./container-file.js";
import { Defaults } from "./defaults.js";
import { MediaConfigError } from "./errors.js";
import { extractMedia } from "./extract.js";
import type { DescriptorFile, OpenHooks } from "./open-file.js";
import { normalizeAbsolute, parseVolumes } from "./paths.js";
import { MediaKinds } from "./plan-record.js";
import { createRealPolicy, withRealPaths } from "./policy.js";
import { EscapesRoot, type ResolveSetup, resolveOnHost } from "./resolve.js";
import type {
  CandidateTrace,
  ContainerFileSource,
  MediaOutcome,
  MediaPlan,
  OpenedFile,
  PlannedItem,
  PlanRecord,
  ReadyMedia,
  ResumedPlan,
  ResumeOptions,
  TranslateContext,
  UnreachableMedia,
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
 * A path that left its root on the host into a directory its session cannot search and is
 * found nowhere else is `denied` (withheld), not `unreachable`: the answer is the same whether
 * the name is there on the host or not (docs/security.md, "No existence oracle").
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
  // A reply naming no file (most replies) needs none of the homes' real paths: no tag, no
  // file opened, nothing for the policy to decide.
  if (extraction.tags.length === 0) return createPlan(extraction.render(new Set()), extraction, []);
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
  extraction: KindDirectives,
  hops = 0,
): Promise<MediaOutcome> {
  const host = await resolveOnHost(tagPath, setup);
  if (host.status === "found") {
    return finish(host.path, host.file, host.candidates, limits, extraction);
  }
  if (host.status === "denied") return host;
  const { behindUnsearchable, ...unreachable } = host;
  const outcome =
    ctx.backend === "docker" && ctx.container
      ? await fromContainer(unreachable, ctx, ctx.container, setup, limits, extraction, hops)
      : unreachable;
  // A path out of its root into a directory its session cannot search, found nowhere else, is
  // withheld whether or not the name is there on the host: the answer tells nothing of it.
  if (outcome.status === "unreachable" && behindUnsearchable) {
    return {
      status: "denied",
      path: host.path,
      reason: EscapesRoot,
      candidates: outcome.candidates,
    };
  }
  return outcome;
}

/** The container fallback of {@link planOne}: a docker path found on no host layout. */
async function fromContainer(
  host: UnreachableMedia,
  ctx: TranslateContext,
  container: ContainerFileSource,
  setup: ResolveSetup,
  limits: UploadLimits,
  extraction: KindDirectives,
  hops: number,
): Promise<MediaOutcome> {
  const cap = Math.max(...MediaKinds.map((kind) => limits.maxBytes(kind)));
  const spooled = await spoolFromContainer(container, host.path, cap, ctx.tmpDir);
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
  extraction: KindDirectives,
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

/**
 * What a plan decided, as plain JSON to record with the reply before its first send
 * (docs/durability.md): the text as planned and, in order, each tag's outcome without its
 * descriptor (a ready file's path, kind, name, MIME type, size and the host path it was found
 * at; the others' reason, size and limit). {@link resumePlan} delivers from it.
 */
export function recordPlan(plan: MediaPlan): PlanRecord {
  return {
    version: 1,
    text: plan.text,
    asVoice: plan.asVoice,
    asDocument: plan.asDocument,
    items: plan.outcomes.map(plannedItem),
  };
}

function plannedItem(outcome: MediaOutcome): PlannedItem {
  switch (outcome.status) {
    case "ready": {
      const { path: tagged, kind, filename, mime, size } = outcome;
      let found: CandidateTrace | undefined;
      for (const trace of outcome.candidates) if (trace.result === "ok") found = trace;
      const hostPath =
        found === undefined || found.source === "container"
          ? undefined
          : (found.detail ?? found.path);
      return {
        status: "ready",
        path: tagged,
        kind,
        filename,
        mime,
        size,
        ...(hostPath === undefined ? {} : { hostPath }),
      };
    }
    case "unreachable":
      return { status: "unreachable", path: outcome.path, reason: outcome.reason };
    case "denied":
      return { status: "denied", path: outcome.path, reason: outcome.reason };
    case "too_large": {
      const { path: tagged, kind, size, limit } = outcome;
      return { status: "too_large", path: tagged, kind, size, limit };
    }
  }
}

/**
 * A plan rebuilt from its {@link PlanRecord} for a resumed delivery: the same text and the
 * same items in the same order, so the steps already recorded name the same things. Each ready
 * file `options.reopen` accepts is opened again by its tagged path with every check of
 * {@link planMedia} (translation, the credential policy, the O_NOFOLLOW open and its re-check
 * through the descriptor, the container fallback) and must still fit its recorded kind's
 * limit; one that no longer passes (gone, swapped for a link out of its root, grown too large)
 * keeps its place with its new outcome and is listed in `lost`. A ready item not reopened (its
 * step is done) keeps its recorded facts and a file that cannot be read. The caller disposes
 * the plan; if this throws, what it opened is closed first.
 */
export async function resumePlan(
  record: PlanRecord,
  ctx: TranslateContext,
  limits: UploadLimits,
  options: ResumeOptions = {},
): Promise<ResumedPlan> {
  checkContext(ctx);
  const setup = await prepareSetup(ctx);
  const directives = { asVoice: record.asVoice, asDocument: record.asDocument };
  const outcomes: MediaOutcome[] = [];
  const lost: MediaOutcome[] = [];
  try {
    for (const item of record.items) {
      ctx.signal?.throwIfAborted();
      if (item.status !== "ready") {
        outcomes.push({ ...item, candidates: [] });
        continue;
      }
      if (options.reopen?.(item.path) === false) {
        outcomes.push(notReopened(item));
        continue;
      }
      const fresh = await planOne(item.path, ctx, setup, limits, directives);
      const outcome = await keepRecordedKind(item, fresh, limits);
      outcomes.push(outcome);
      if (outcome.status !== "ready") lost.push(outcome);
    }
  } catch (error) {
    await Promise.all(outcomes.map((o) => (o.status === "ready" ? o.file.close() : undefined)));
    throw error;
  }
  return { plan: createPlan(record.text, directives, outcomes), lost };
}

/** A file opened again is sent as the kind it was planned as, if it still fits that limit. */
async function keepRecordedKind(
  item: Extract<PlannedItem, { status: "ready" }>,
  fresh: MediaOutcome,
  limits: UploadLimits,
): Promise<MediaOutcome> {
  if (fresh.status !== "ready") return fresh;
  const limit = limits.maxBytes(item.kind);
  if (fresh.size > limit) {
    await fresh.file.close();
    const { candidates, size } = fresh;
    return { status: "too_large", path: item.path, kind: item.kind, size, limit, candidates };
  }
  return { ...fresh, path: item.path, kind: item.kind };
}

/** A ready item whose step an earlier attempt finished: described, never read. */
function notReopened(item: Extract<PlannedItem, { status: "ready" }>): ReadyMedia {
  const refuse = () => new Error(`${item.filename} was already handled; it is not read again`);
  const file: OpenedFile = {
    stream: () =>
      new Readable({
        read() {
          this.destroy(refuse());
        },
      }),
    read: () => Promise.reject(refuse()),
    chunks: () => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(refuse()) }),
    }),
    close: async () => {},
  };
  const { path: tagged, kind, filename, mime, size } = item;
  return { status: "ready", path: tagged, kind, filename, mime, size, file, candidates: [] };
}

function createPlan(
  text: string,
  extraction: KindDirectives,
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
    reader: ctx.reader === undefined ? undefined : once(ctx.reader),
    hooks,
  };
}

/** `ask` called at most once; every call gets its answer (or its failure). */
function once<T>(ask: () => Promise<T>): () => Promise<T> {
  let answer: Promise<T> | undefined;
  return () => {
    answer ??= ask();
    return answer;
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
