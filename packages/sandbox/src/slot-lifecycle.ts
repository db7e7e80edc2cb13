import { deadline, untilAborted } from "@mediagate/io";
import { boundedCall } from "./bounded-call.js";
import { destroyContainer, findSlotContainers, toState } from "./containers.js";
import { Defaults } from "./defaults.js";
import { isNotFound } from "./docker-errors.js";
import { ImageMissingError, SandboxError, SandboxLostError } from "./errors.js";
import type { Housekeeping } from "./housekeeping.js";
import { IdleSlots } from "./idle-slots.js";
import { forgetImage } from "./image-ready.js";
import { removeOwnContainer } from "./inventory.js";
import type { SandboxContext } from "./sandbox-context.js";
import { isGone } from "./session-shells.js";
import { boundDirsIdentity } from "./slot-dirs.js";
import type { ContainerState } from "./types.js";
import { WarmPool } from "./warm-pool.js";

/**
 * The life of a sandbox's slots: which container each slot holds in this process, finding or
 * making it (`acquire`), its state (`status`), ending its use (`cleanup`, `remove`,
 * `shutdown`), the idle timers of non-persistent slots, and running a call on a slot's
 * container that is acquired again when it vanished (`withContainer`). The `Sandbox`
 * methods of the same names say what each does.
 */
export class SlotLifecycle {
  readonly #ctx: SandboxContext;
  readonly #housekeeping: Housekeeping;
  /** The container each slot holds in this process. */
  readonly #handles = new Map<string, string>();
  /**
   * Slots whose acquire failed after their directory (and disk) may have been made: removed
   * as an idle slot is, and at shutdown, as they would be had a container come.
   */
  readonly #unheld = new Set<string>();
  /**
   * Per held slot, its bound directories when its container was taken (`boundDirsIdentity`),
   * and when (`ctx.now`) they were last found the same.
   */
  readonly #boundDirs = new Map<string, { identity: string; checkedAtMs: number }>();
  /** Idle cleanup of non-persistent slots; `undefined` for persistent settings. */
  readonly #idle: IdleSlots | undefined;
  /** Ready containers for new session slots (`settings.warmPool`). */
  readonly pool: WarmPool;

  constructor(ctx: SandboxContext, housekeeping: Housekeeping) {
    this.#ctx = ctx;
    this.#housekeeping = housekeeping;
    this.pool = new WarmPool(ctx);
    const options = ctx.options;
    if (!options.settings.persistent) {
      const idleMs = options.idleCleanupMs ?? options.settings.lifetimeSeconds * 1000;
      this.#idle = new IdleSlots(
        idleMs,
        (slot) => {
          this.#cleanup(slot, {}, true).catch((error: unknown) => {
            options.onWarning?.(`idle cleanup of ${slot} failed`, error);
          });
        },
        options.schedule,
      );
    }
  }

  /** The container the slot holds in this process, if any (no Docker call). */
  held(slot: string): string | undefined {
    return this.#handles.get(slot);
  }

  /** Every container a slot holds in this process. */
  heldContainers(): Iterable<string> {
    return this.#handles.values();
  }

  async acquire(slot: string, signal?: AbortSignal): Promise<{ containerId: string }> {
    try {
      return await this.#acquire(slot, signal);
    } finally {
      if (this.#kept(slot)) this.#idle?.touch(slot);
    }
  }

  /** Whether the slot has a container or a directory of this process's to clean up. */
  #kept(slot: string): boolean {
    return this.#handles.has(slot) || this.#unheld.has(slot);
  }

  async #acquire(slot: string, signal?: AbortSignal): Promise<{ containerId: string }> {
    const ctx = this.#ctx;
    const cached = this.#handles.get(slot);
    if (cached !== undefined) {
      if (await this.#bindsSlotDirs(slot)) return { containerId: cached };
      // Its workspace/ or home/ was deleted under it: every command there fails. Provisioning
      // makes them anew and replaces the running container (`madeBoundDirs`).
      if (this.#handles.get(slot) === cached) this.#dropSlot(slot);
    }
    // Before the lock: the reaper takes the locks of the slot directories it deletes. A
    // shared sweep: an abort stops this caller's wait, not the sweep.
    await untilAborted(this.#housekeeping.retireLegacyOnce(), signal);
    // Before the lock and outside the provisioning bound: a pull may take minutes.
    await ctx.guard("acquire", slot, () => ctx.ensureImage(signal));
    // Started, not awaited: reaping many dead sessions takes a contained delete each, and no
    // turn should wait for that. Provisioning and the reap serialise per slot on its lock.
    void this.#housekeeping.reapOrphansOnce();
    // An abort stops the wait for the lock (another call may be provisioning the slot) and
    // for the provisioning; a container it still makes is removed by #discardLate.
    const locked = ctx.locked(slot, async () => {
      const held = this.#handles.get(slot);
      if (held !== undefined) return { containerId: held };
      signal?.throwIfAborted();
      const claimed = await this.#claimWarm(slot);
      if (claimed !== undefined) {
        await this.#hold(slot, claimed);
        return { containerId: claimed };
      }
      const provisioning = ctx.provision(slot, signal, (idOrName) =>
        this.#discardLate(slot, Promise.resolve(idOrName)),
      );
      const timeoutMs = ctx.options.provisionTimeoutMs ?? Defaults.provisionTimeoutMs;
      let containerId: string;
      try {
        containerId = await ctx.guard("acquire", slot, () =>
          deadline(provisioning, { timeoutMs, what: `acquiring ${slot}`, signal }),
        );
      } catch (error) {
        this.#discardLate(slot, provisioning);
        this.#unheld.add(slot);
        if (error instanceof ImageMissingError) forgetImage(ctx.options.engine, error.image);
        throw error;
      }
      await this.#hold(slot, containerId);
      return { containerId };
    });
    return untilAborted(locked, signal);
  }

  /** Holds the slot's container, noting which bound directories it was taken with. */
  async #hold(slot: string, containerId: string): Promise<void> {
    const ctx = this.#ctx;
    const identity = await boundDirsIdentity(ctx.slotDirectory(slot), ctx.settings);
    if (identity === undefined) this.#boundDirs.delete(slot);
    else this.#boundDirs.set(slot, { identity, checkedAtMs: ctx.now() });
    this.#unheld.delete(slot);
    this.#handles.set(slot, containerId);
  }

  /**
   * Whether the slot's bound directories are still the ones its held container was taken
   * with: two `stat`s on the host, nothing in the container, at most once per
   * `Defaults.boundDirsCheckMs` per slot. Deleting them under a running gateway is an
   * operator's rare mistake; two `stat`s on every acquire cost about 43 µs of CPU, 2 % of a
   * shell message's gateway CPU (issue 31), so commands in the second after it may still fail.
   */
  async #bindsSlotDirs(slot: string): Promise<boolean> {
    const ctx = this.#ctx;
    const taken = this.#boundDirs.get(slot);
    if (taken === undefined || ctx.now() - taken.checkedAtMs < Defaults.boundDirsCheckMs) {
      return true;
    }
    const same =
      (await boundDirsIdentity(ctx.slotDirectory(slot), ctx.settings)) === taken.identity;
    if (same) taken.checkedAtMs = ctx.now();
    return same;
  }

  /**
   * A warm container for a new session slot, under the slot's lock; `undefined` when the pool
   * has none to give or the slot may have a container already (another process's, found by
   * label: with a bind filesystem its directory would exist, which the pool checks).
   */
  async #claimWarm(slot: string): Promise<string | undefined> {
    const ctx = this.#ctx;
    if (!this.pool.active) return undefined;
    if (ctx.settings.filesystem !== "bind" && ctx.settings.persistAcrossProcesses) {
      const found = await findSlotContainers(ctx.docker, ctx.owner, slot, ctx.bound);
      if (found.length > 0) return undefined;
    }
    return this.pool.claim(slot, ctx.slotDirectory(slot));
  }

  async status(slot: string): Promise<{ containerId: string; state: ContainerState } | undefined> {
    const ctx = this.#ctx;
    return ctx.guard("status", slot, async () => {
      let id = this.#handles.get(slot);
      if (id === undefined) {
        const found = await findSlotContainers(ctx.docker, ctx.owner, slot, ctx.bound);
        id = (found.find((c) => c.State === "running") ?? found[0])?.Id;
      }
      if (id === undefined) return undefined;
      const container = ctx.docker.getContainer(id);
      try {
        const info = await boundedCall(
          "inspect",
          ctx.bound,
          (abortSignal) => container.inspect({ abortSignal }),
          id,
        );
        return { containerId: id, state: toState(info.State.Status) };
      } catch (error) {
        if (isNotFound(error)) return { containerId: id, state: "missing" as const };
        throw error;
      }
    });
  }

  async cleanup(slot: string, opts: { force?: boolean; deleteDirs?: boolean } = {}): Promise<void> {
    await this.#cleanup(slot, opts, false);
  }

  /** `idleOnly`: the idle timer's cleanup, skipped when a call started on the slot meanwhile. */
  async #cleanup(
    slot: string,
    opts: { force?: boolean; deleteDirs?: boolean },
    idleOnly: boolean,
  ): Promise<void> {
    const ctx = this.#ctx;
    const force = opts.force === true;
    const work = ctx.locked(slot, async () => {
      if (idleOnly && this.#idle?.isBusy(slot) === true) return;
      const id = this.#dropSlot(slot);
      if (!force && ctx.settings.persistent) return;
      // A save still writing would hold the inbox open (and the slot's disk mounted).
      await ctx.inboxSaves.stop(slot, Defaults.killGraceMs);
      const ids = new Set(id === undefined ? [] : [id]);
      if (ctx.settings.persistAcrossProcesses || id === undefined) {
        const found = await findSlotContainers(ctx.docker, ctx.owner, slot, ctx.bound);
        for (const c of found) ids.add(c.Id);
      }
      for (const containerId of ids) {
        await destroyContainer(ctx.docker, containerId, Defaults.stopGraceSeconds, ctx.bound);
      }
      const deleteDirs = force ? opts.deleteDirs === true : opts.deleteDirs !== false;
      if (deleteDirs) await ctx.deleteSlotDir(ctx.slotDirectory(slot), ctx.settings.image);
    });
    await ctx.guard("cleanup", slot, () =>
      deadline(ctx.track(work), {
        timeoutMs: Defaults.cleanupTimeoutMs,
        what: `cleanup of ${slot}`,
      }),
    );
  }

  async remove(containerIdOrSlot: string): Promise<void> {
    const ctx = this.#ctx;
    const bySlot = await ctx.guard("remove", containerIdOrSlot, () =>
      findSlotContainers(ctx.docker, ctx.owner, containerIdOrSlot, ctx.bound),
    );
    if (bySlot.length > 0 || this.#handles.has(containerIdOrSlot)) {
      await this.cleanup(containerIdOrSlot, { force: true, deleteDirs: false });
      return;
    }
    const removed = await ctx.guard("remove", containerIdOrSlot, () =>
      removeOwnContainer(ctx.docker, ctx.owner, containerIdOrSlot, ctx.bound),
    );
    for (const [slot, id] of this.#handles) if (id === removed) this.#dropSlot(slot);
  }

  async shutdown(timeoutMs: number): Promise<void> {
    const ctx = this.#ctx;
    this.#idle?.cancelAll();
    this.pool.shutdown();
    ctx.shells.closeAll();
    if (!ctx.settings.persistent) {
      for (const slot of new Set([...this.#handles.keys(), ...this.#unheld])) {
        this.cleanup(slot).catch(() => undefined);
      }
    }
    await ctx.settled(timeoutMs);
  }

  #dropSlot(slot: string): string | undefined {
    this.#idle?.cancel(slot);
    this.#unheld.delete(slot);
    const id = this.#handles.get(slot);
    this.#handles.delete(slot);
    this.#boundDirs.delete(slot);
    this.#ctx.shells.closeSlot(slot);
    if (id !== undefined) this.#ctx.sessionUsers.forget(id);
    return id;
  }

  /**
   * After a failed or timed-out acquire: if the provisioning still produces a container
   * (an id, or the unique name of a create that was cut off), stop and remove it under the
   * slot lock, unless a later acquire of this process holds it by then. Tracked, so `shutdown()` awaits it; otherwise a container made after the
   * timeout would run until someone noticed (with random names, never adopted).
   */
  #discardLate(slot: string, provisioning: Promise<string>): void {
    const ctx = this.#ctx;
    const late = provisioning.then(
      (id) =>
        ctx.locked(slot, async () => {
          if (this.#handles.get(slot) === id) return;
          await destroyContainer(ctx.docker, id, Defaults.stopGraceSeconds, ctx.bound);
        }),
      () => undefined,
    );
    ctx.track(
      late.catch((error: unknown) => {
        ctx.options.onWarning?.(`could not remove a late container of ${slot}`, error);
      }),
    );
  }

  /**
   * Runs `fn` on the slot's container; when the container vanished or stopped underneath
   * before the call started (404/409 on exec), drops the stale handle, acquires again and
   * retries once. One that went away while the call ran ({@link SandboxLostError}) is not
   * retried: the call may have done part of its work. With non-persistent settings the slot
   * counts as in use (no idle cleanup) while `fn` runs.
   */
  async withContainer<T>(
    operation: string,
    slot: string,
    signal: AbortSignal | undefined,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const work = () => this.#onContainer(operation, slot, signal, fn);
    if (this.#idle === undefined) return work();
    return this.#idle.using(slot, work, () => this.#kept(slot));
  }

  async #onContainer<T>(
    operation: string,
    slot: string,
    signal: AbortSignal | undefined,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const ctx = this.#ctx;
    const { containerId } = await this.acquire(slot, signal);
    try {
      return await ctx.guard(operation, slot, () => fn(containerId), containerId);
    } catch (error) {
      if (error instanceof SandboxLostError) this.#forget(slot, error.containerId);
      if (!(error instanceof SandboxError) || !isGone(error.cause)) throw error;
      // A stopped container starts again under the same id with /run/mediagate (a tmpfs
      // volume) empty: its sessions' state directories are gone, their uids claimed anew.
      this.#forget(slot, containerId);
      const again = await this.acquire(slot, signal);
      try {
        return await ctx.guard(operation, slot, () => fn(again.containerId), again.containerId);
      } catch (retryError) {
        if (retryError instanceof SandboxLostError) this.#forget(slot, retryError.containerId);
        throw retryError;
      }
    }
  }

  /**
   * A container went away under a command: drops the slot's cached handle (when it is still
   * that container) and the shells open in it, so the next call provisions the slot again.
   * The idle timer of a non-persistent slot keeps running: its cleanup finds the slot's
   * containers by label.
   */
  #forget(slot: string, containerId: string): void {
    if (this.#handles.get(slot) === containerId) this.#handles.delete(slot);
    this.#ctx.shells.closeContainer(containerId);
    this.#ctx.sessionUsers.forget(containerId);
  }
}
