import { inventoryContainers } from "./container-inventory.js";
import { listProfileContainers } from "./inventory.js";
import { sanitizeLabelValue } from "./labels.js";
import { listLegacyContainers, retireLegacyContainers } from "./legacy.js";
import {
  reapAgeSeconds,
  sweepContainerlessScratchDirs,
  sweepGoneOwners,
  sweepOrphans,
} from "./reaper.js";
import type { SandboxContext } from "./sandbox-context.js";
import { slotRootOf } from "./slot-key.js";
import { withSlotLock } from "./slot-lock.js";
import type {
  ContainerInventory,
  ContainerSummary,
  LegacyContainer,
  ReapOptions,
  ReapReport,
  ReapResult,
} from "./types.js";

/**
 * The automatic reap of each profile (`endpoint|install|profile`) in this process: it runs
 * once, and every acquire waits for it, so nothing is provisioned while it still runs.
 */
const reapedThisProcess = new Map<string, Promise<ReapResult | undefined>>();

/**
 * Legacy sweeps of this process (`endpoint|install|profile home`), run before the first
 * provisioning, whatever `orphanReaper` says (see `retireLegacyContainers`).
 */
const legacyRetired = new Map<string, Promise<void>>();

/** The slots whose directories a reap keeps (see `Housekeeping#deferReap`). */
export type KeptSlots = () => Promise<Iterable<string>>;

/**
 * A sandbox's housekeeping: what its containers are (`list`, `inventory`,
 * `legacyContainers`), and removing what earlier processes left (`reapOrphans`, its
 * once-per-process run, the legacy sweep before the first provisioning). The `Sandbox`
 * methods of the same names say what each does.
 */
export class Housekeeping {
  readonly #ctx: SandboxContext;
  /** What the once-per-process reap waits for first ({@link deferReap}). */
  #reapGate: Promise<unknown> = Promise.resolve();
  /** The slots whose directories the reaps of this process keep ({@link deferReap}). */
  #keep: KeptSlots = async () => [];

  constructor(ctx: SandboxContext) {
    this.#ctx = ctx;
  }

  async list(): Promise<ContainerSummary[]> {
    const ctx = this.#ctx;
    return ctx.guard("list", "*", () => listProfileContainers(ctx.docker, ctx.owner, ctx.bound));
  }

  async inventory(): Promise<ContainerInventory[]> {
    const ctx = this.#ctx;
    const minAgeSeconds = reapAgeSeconds(ctx.settings.lifetimeSeconds);
    return ctx.guard("list", "*", () =>
      inventoryContainers(
        ctx.docker,
        ctx.owner,
        ctx.sandboxRoots,
        minAgeSeconds,
        new Date(ctx.now()),
        ctx.bound,
      ),
    );
  }

  async legacyContainers(): Promise<LegacyContainer[]> {
    const ctx = this.#ctx;
    return ctx.guard("list", "*", () =>
      listLegacyContainers(ctx.docker, ctx.owner, ctx.sandboxRoots, ctx.bound),
    );
  }

  async reapOrphans(opts: ReapOptions = {}): Promise<ReapReport> {
    const ctx = this.#ctx;
    const minAgeSeconds = opts.minAgeSeconds ?? reapAgeSeconds(ctx.settings.lifetimeSeconds);
    if (!Number.isFinite(minAgeSeconds) || minAgeSeconds < 0) {
      throw new RangeError(
        `reapOrphans: minAgeSeconds must be a number >= 0, got ${minAgeSeconds}`,
      );
    }
    const onWarning = ctx.options.onWarning;
    return ctx.guard("reapOrphans", "*", async () => {
      const kept = await this.#keptDirs();
      const legacy = await retireLegacyContainers(ctx.docker, ctx.sandboxRoots, ctx.bound);
      const orphaned = await sweepGoneOwners({
        docker: ctx.docker,
        owner: ctx.owner,
        sandboxRoots: ctx.sandboxRoots,
        timeoutMs: ctx.bound.timeoutMs,
        locked: (slotDir, fn) => withSlotLock(slotDir, fn, { onWarning }),
        deleteSlotDir: async (slotDir, image) => {
          if (!kept.has(slotDir)) await ctx.deleteSlotDir(slotDir, image);
        },
      });
      const swept = await sweepOrphans({
        docker: ctx.docker,
        owner: ctx.owner,
        minAgeSeconds,
        now: opts.now ?? new Date(ctx.now()),
        sandboxRoots: ctx.sandboxRoots,
        timeoutMs: ctx.bound.timeoutMs,
        deleteSlotDir: (slotDir, image, inUse) =>
          withSlotLock(
            slotDir,
            async () => {
              if (!kept.has(slotDir) && !(await inUse())) await ctx.deleteSlotDir(slotDir, image);
            },
            { onWarning },
          ),
      });
      const dirs = await this.#sweepScratchDirs(kept);
      return {
        removed: [...legacy.removed, ...orphaned.removed, ...swept.removed, ...dirs.removed],
        failed: [...legacy.failed, ...orphaned.failed, ...swept.failed, ...dirs.failed],
        minAgeSeconds,
      };
    });
  }

  /**
   * Once per process (and profile home): retires legacy containers bound into this install's
   * slot dirs before anything is provisioned, so no old container keeps binding the
   * directories a new one binds. Runs whatever `orphanReaper` says; failures are warnings.
   */
  async retireLegacyOnce(): Promise<void> {
    const ctx = this.#ctx;
    const key = `${ctx.options.engine.endpoint}|${ctx.install}|${ctx.options.profileHome}`;
    let sweep = legacyRetired.get(key);
    if (sweep === undefined) {
      sweep = retireLegacyContainers(ctx.docker, ctx.sandboxRoots, ctx.bound).then(
        (result) => {
          for (const failure of result.failed) {
            ctx.options.onWarning?.(
              `could not retire legacy container ${failure.id}: ${failure.error}`,
            );
          }
        },
        (error: unknown) => {
          legacyRetired.delete(key); // the next acquire tries again
          ctx.options.onWarning?.("legacy container sweep failed", error);
        },
      );
      legacyRetired.set(key, sweep);
    }
    await sweep;
  }

  /**
   * Holds this process's reap ({@link reapOrphansOnce}, which a first `acquire` starts) until
   * `until` settles, and has every reap of this process keep the directories of the slots
   * `keep` names when it runs: the gateway resumes the replies a dead process left first,
   * whose files are in that process's slot directories, and keeps those of replies still
   * pending after that attempt (docs/durability.md). Call before the first acquire.
   */
  deferReap(until: Promise<unknown>, keep?: KeptSlots): void {
    this.#reapGate = until.then(
      () => undefined,
      () => undefined,
    );
    if (keep !== undefined) this.#keep = keep;
  }

  /**
   * Deletes `slot`'s directory if a process that is gone left it: per-session, bound by no
   * container, its owner gone, and no longer kept. For a reply that kept it ({@link deferReap}),
   * once it is closed. Honours `orphanReaper: false`; never throws (failures go to
   * `onWarning`).
   */
  sweepSlotDir(slot: string): Promise<void> {
    const ctx = this.#ctx;
    if (!ctx.settings.orphanReaper || ctx.settings.filesystem !== "bind") return Promise.resolve();
    return ctx.track(this.#sweepSlotDir(slot));
  }

  async #sweepSlotDir(slot: string): Promise<void> {
    const ctx = this.#ctx;
    try {
      // A directory still kept is left out by the sweep itself.
      const result = await this.#sweepScratchDirs(await this.#keptDirs(), ctx.slotDirectory(slot));
      for (const failure of result.failed) {
        ctx.options.onWarning?.(`could not delete slot directory ${failure.id}: ${failure.error}`);
      }
    } catch (error) {
      ctx.options.onWarning?.(`could not sweep the directory of ${slot}`, error);
    }
  }

  /** The directories of the slots {@link deferReap}'s `keep` names now. */
  async #keptDirs(): Promise<ReadonlySet<string>> {
    const ctx = this.#ctx;
    return new Set([...(await this.#keep())].map((slot) => ctx.slotDirectory(slot)));
  }

  /** {@link sweepContainerlessScratchDirs} of this profile (of `only` alone, if given). */
  #sweepScratchDirs(kept: ReadonlySet<string>, only?: string): Promise<ReapResult> {
    const ctx = this.#ctx;
    const onWarning = ctx.options.onWarning;
    return sweepContainerlessScratchDirs({
      docker: ctx.docker,
      owner: ctx.owner,
      slotRoot: slotRootOf(ctx.options.profileHome),
      timeoutMs: ctx.bound.timeoutMs,
      locked: (slotDir, fn) => withSlotLock(slotDir, fn, { onWarning }),
      deleteSlotDir: (slotDir) => ctx.deleteSlotDir(slotDir, ctx.settings.image),
      kept,
      only,
    });
  }

  reapOrphansOnce(): Promise<ReapResult | undefined> {
    const ctx = this.#ctx;
    if (!ctx.settings.orphanReaper) return Promise.resolve(undefined);
    const key = `${ctx.options.engine.endpoint}|${ctx.install}|${sanitizeLabelValue(ctx.profile)}`;
    let run = reapedThisProcess.get(key);
    if (run === undefined) {
      run = this.#reapGate
        .then(() => this.reapOrphans())
        .then(
          (result) => {
            for (const failure of result.failed) {
              ctx.options.onWarning?.(`could not reap container ${failure.id}: ${failure.error}`);
            }
            return result;
          },
          (error: unknown) => {
            ctx.options.onWarning?.("orphan reaper failed", error);
            return undefined;
          },
        );
      reapedThisProcess.set(key, run);
    }
    return run;
  }
}
