import { randomBytes } from "node:crypto";
import { deadline, scheduleWithTimer } from "@mediagate/io";
import { destroyContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { ImageMissingError } from "./errors.js";
import { forgetImage } from "./image-ready.js";
import { PreparedSession } from "./prepared-session.js";
import type { SandboxContext } from "./sandbox-context.js";
import { moveSlotDirectory, slotDirExists } from "./slot-claim.js";
import { formatSlotKey, slotTraits } from "./slot-key.js";

/**
 * Session keys of the pool's own slots start with this. A gateway session key never does
 * (they start with a platform or `console`), and the random part makes each slot new.
 */
export const WarmSessionPrefix = "mediagate-warm-pool/";

interface WarmMember {
  /** The member's own slot (`session:mediagate-warm-pool/<random>`): its labels and directory. */
  readonly slot: string;
  readonly containerId: string;
  /** Its first session's shell (and uid), made ahead; none when that failed. */
  readonly ahead?: PreparedSession | undefined;
}

/** What {@link WarmPool} removes: a member, or the slot of a fill that made no container. */
type Leftover = Pick<WarmMember, "slot" | "ahead"> & { readonly containerId?: string | undefined };

/**
 * Started containers kept ready for new per-session slots (`settings.warmPool`, docs/sandbox.md,
 * "Warm pool"). Each member is provisioned like any session's container, for a slot of its
 * own that no chat session has, so it is labelled, owned by this process and reaped like one.
 * A new session {@link claim}s a member: its slot directory becomes the session's (renamed, or
 * its disk moved) and the container is the session's from then on; a member is handed out once
 * and never comes back (the session's cleanup removes it like any of its containers). The pool
 * fills one container at a time in the background once {@link arm}ed (the gateway does at start),
 * again after each claim or miss; a failed fill is not retried until the next claim or miss, so
 * an engine at its limits is not pressed. After `Defaults.warmPoolIdleMs` without a claim it is
 * emptied; the next new session refills it.
 */
export class WarmPool {
  readonly #ctx: SandboxContext;
  readonly #size: number;
  readonly #idleMs: number;
  readonly #ready: WarmMember[] = [];
  #armed = false;
  #closed = false;
  #filling: Promise<void> | undefined;
  #cancelShrink: (() => void) | undefined;
  /** Told when the fill adds a member or stops. */
  #waiters: (() => void)[] = [];

  constructor(ctx: SandboxContext, idleMs: number = Defaults.warmPoolIdleMs) {
    this.#ctx = ctx;
    const settings = ctx.settings;
    this.#size = settings.persistent ? 0 : (settings.warmPool ?? 0);
    this.#idleMs = idleMs;
  }

  /** Whether this sandbox keeps a pool (per-session settings and `warmPool` above 0). */
  get enabled(): boolean {
    return this.#size > 0;
  }

  /** Whether {@link claim} may give containers now: enabled, armed and not shut down. */
  get active(): boolean {
    return this.#armed && !this.#closed;
  }

  /** The containers ready to be claimed, oldest first (no Docker call). */
  readyContainers(): string[] {
    return this.#ready.map((member) => member.containerId);
  }

  /** Starts keeping the pool full (in the background); safe to repeat. */
  arm(): void {
    if (!this.enabled || this.#closed) return;
    this.#armed = true;
    this.#fill();
  }

  /** Resolves once the fill running now (if any) ended. */
  async filled(): Promise<void> {
    while (this.#filling !== undefined) await this.#filling;
  }

  /**
   * Gives a ready container to `slot`, a new scratch slot (a session's or a task's, with no
   * container and no directory yet): `undefined` when the pool is off or has none, or the slot
   * is not new (the caller then provisions as usual). With the pool empty while a member is
   * being made, waits for that one: it is ready sooner than a new one would be. Call holding
   * the slot's lock. Starts a refill either way.
   */
  async claim(slot: string, slotDir: string): Promise<string | undefined> {
    if (!this.#armed || this.#closed || slotTraits(slot).persistentData) return undefined;
    if (this.#ctx.settings.filesystem === "bind" && (await slotDirExists(slotDir))) {
      return undefined;
    }
    if (this.#ready.length === 0 && this.#filling !== undefined) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    const member = this.#ready.shift();
    this.#fill();
    if (member === undefined) return undefined;
    try {
      if (this.#ctx.settings.filesystem === "bind") {
        await this.#ctx.locked(member.slot, () =>
          moveSlotDirectory(this.#ctx.slotDirectory(member.slot), slotDir),
        );
      }
    } catch (error) {
      this.#ctx.options.onWarning?.(`could not hand a warm container to ${slot}`, error);
      void this.#discard(member);
      return undefined;
    }
    if (member.ahead !== undefined) this.#ctx.shells.adopt(slot, member.ahead);
    return member.containerId;
  }

  /**
   * Empties the pool and stops filling it. The removals (and that of a container still being
   * provisioned) are tracked: the sandbox's `shutdown()` awaits them.
   */
  shutdown(): void {
    this.#closed = true;
    this.#cancelShrink?.();
    this.#empty();
  }

  #fill(): void {
    this.#armShrink();
    if (this.#filling !== undefined || this.#closed) return;
    const filling = this.#fillLoop()
      .catch((error: unknown) => {
        this.#ctx.options.onWarning?.("could not fill the warm pool", error);
      })
      .finally(() => {
        this.#filling = undefined;
        this.#wake();
      });
    this.#filling = filling;
    this.#ctx.track(filling);
  }

  async #fillLoop(): Promise<void> {
    while (!this.#closed && this.#ready.length < this.#size) {
      const member = await this.#provision();
      if (this.#closed) {
        // Awaited, so whoever awaits the fill (the sandbox's shutdown) awaits the removal.
        await this.#discard(member);
        return;
      }
      this.#ready.push(member);
      this.#wake();
    }
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }

  async #provision(): Promise<WarmMember> {
    const ctx = this.#ctx;
    // As an acquire does, before the slot's directory (and its disk) is made: a missing image
    // is pulled, or the fill fails having made nothing.
    await ctx.guard("warm pool", "the warm pool", () => ctx.ensureImage());
    const sessionKey = `${WarmSessionPrefix}${randomBytes(12).toString("hex")}`;
    const slot = formatSlotKey({ kind: "session", sessionKey });
    const timeoutMs = ctx.options.provisionTimeoutMs ?? Defaults.provisionTimeoutMs;
    const containerId = await ctx
      .locked(slot, () =>
        ctx.guard("warm pool", slot, () =>
          deadline(
            (signal) =>
              ctx.provision(slot, signal, (idOrName) => {
                void this.#discard({ slot, containerId: idOrName });
              }),
            { timeoutMs, what: "filling the warm pool" },
          ),
        ),
      )
      .catch(async (error: unknown) => {
        if (error instanceof ImageMissingError) forgetImage(ctx.options.engine, error.image);
        // The slot's directory, its disk mounted on a loop device, was made before the create
        // failed, and no session will ever name this slot: nothing else would remove it.
        await this.#discard({ slot });
        throw error;
      });
    // The first session's uid and shell, ready too: its first command then costs no exec.
    // Bounded, as the provision is: a claim may be waiting for this fill. One that comes
    // after its bound is closed.
    const preparing = ctx.shells
      .registryOf(containerId)
      .then((registry) =>
        PreparedSession.prepare(ctx.docker, containerId, ctx.users, ctx.sessionUsers, registry),
      );
    const ahead = await deadline(preparing, {
      timeoutMs: Defaults.shellOpenTimeoutMs,
      what: "preparing a warm container's shell",
    }).catch((error: unknown) => {
      ctx.options.onWarning?.("could not prepare a warm container's shell", error);
      void preparing.then(
        (late) => late.close(),
        () => undefined,
      );
      return undefined;
    });
    return { slot, containerId, ahead };
  }

  #armShrink(): void {
    this.#cancelShrink?.();
    const schedule = this.#ctx.options.schedule ?? scheduleWithTimer;
    this.#cancelShrink = schedule(() => {
      this.#cancelShrink = undefined;
      this.#empty();
    }, this.#idleMs);
  }

  #empty(): void {
    for (const member of this.#ready.splice(0)) void this.#discard(member);
  }

  /** Removes a member's container (if any) and directory, tracked so `shutdown()` awaits it. */
  #discard(member: Leftover): Promise<void> {
    const ctx = this.#ctx;
    const { containerId } = member;
    member.ahead?.close();
    if (containerId !== undefined) ctx.sessionUsers.forget(containerId);
    const work = ctx.locked(member.slot, async () => {
      if (containerId !== undefined) await destroyContainer(ctx.docker, containerId, 0, ctx.bound);
      await ctx.deleteSlotDir(ctx.slotDirectory(member.slot), ctx.settings.image);
    });
    return ctx.track(
      work.catch((error: unknown) => {
        ctx.options.onWarning?.(`could not remove the warm container of ${member.slot}`, error);
      }),
    );
  }
}
