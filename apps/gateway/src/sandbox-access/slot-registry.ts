import { slotTraits } from "@mediagate/sandbox";
import { Defaults } from "../defaults.js";

/** Options of {@link SlotRegistry}. */
export interface SlotRegistryOptions {
  /**
   * Sessions remembered per slot (default `Defaults.sessions.keptPerSlot`): past it, noting
   * one forgets the least recently noted that is not `busy`.
   */
  readonly keptPerSlot?: number;
  /** Whether a session has a turn running or messages queued: such a one is never forgotten. */
  readonly busy?: (sessionKey: string) => boolean;
}

/**
 * Which sessions this process has queued a message for on each container slot (noted when the
 * message is queued, before its turn starts), to tell `/reset` how many sessions a shared
 * container serves and to let `/stop all` stop their turns and drop their waiting messages.
 * Counted per process (sessions of other processes or earlier runs are not known); documented
 * in the README. Bounded: the most recently noted `keptPerSlot` sessions of each slot, and
 * every busy one.
 */
export class SlotRegistry {
  /** Per slot, its sessions in the order they were last noted, the oldest first. */
  readonly #sessions = new Map<string, Set<string>>();
  readonly #keptPerSlot: number;
  readonly #busy: (sessionKey: string) => boolean;

  constructor(options: SlotRegistryOptions = {}) {
    this.#keptPerSlot = Math.max(1, options.keptPerSlot ?? Defaults.sessions.keptPerSlot);
    this.#busy = options.busy ?? (() => false);
  }

  /**
   * The registry's id of a slot: the slot itself when it spans profiles (`shared:<key>`, one
   * container for every profile), else prefixed with the profile, so per-profile slots
   * (`default`, `profile:x`, sessions) of different profiles stay apart.
   */
  static slotId(profile: string, slot: string): string {
    return slotTraits(slot).spansProfiles ? slot : `${profile}/${slot}`;
  }

  note(slotId: string, sessionKey: string): void {
    let set = this.#sessions.get(slotId);
    if (set === undefined) {
      set = new Set();
      this.#sessions.set(slotId, set);
    }
    // Deleted and added again: a Set iterates in insertion order, so the oldest note leads.
    set.delete(sessionKey);
    set.add(sessionKey);
    if (set.size > this.#keptPerSlot) this.#forgetOldestIdle(set, sessionKey);
  }

  /** Sessions known to use the slot, `including` counted even if not seen yet. */
  count(slotId: string, including?: string): number {
    const set = new Set(this.#sessions.get(slotId));
    if (including !== undefined) set.add(including);
    return set.size;
  }

  /** The sessions known to use the slot, `including` listed even if not seen yet. */
  sessions(slotId: string, including?: string): string[] {
    const set = new Set(this.#sessions.get(slotId));
    if (including !== undefined) set.add(including);
    return [...set];
  }

  /**
   * Forget the slot's sessions (after its container was torn down), but those `busy` says
   * still have a turn running or messages queued: `/stop all` must still reach them.
   */
  forget(slotId: string, busy: (sessionKey: string) => boolean = this.#busy): void {
    const set = this.#sessions.get(slotId);
    if (set === undefined) return;
    for (const sessionKey of set) if (!busy(sessionKey)) set.delete(sessionKey);
    if (set.size === 0) this.#sessions.delete(slotId);
  }

  /** Drops the least recently noted session that is neither busy nor `noted` (just noted). */
  #forgetOldestIdle(set: Set<string>, noted: string): void {
    for (const sessionKey of set) {
      if (sessionKey === noted || this.#busy(sessionKey)) continue;
      set.delete(sessionKey);
      return;
    }
  }
}
