import { slotTraits } from "@mediagate/sandbox";
import { listReplicas } from "../cluster/replica-registry.js";
import { Defaults } from "../defaults.js";
import { SessionLeaseLostError } from "../durable/session-leases.js";
import type { LiveInstanceOf, SlotLeases } from "../durable/slot-leases.js";
import type { Logger } from "../log.js";
import type { PostgresDatabase } from "../postgres/database.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import type { GatewayCore } from "./core.js";

/** Options of {@link ReplicaSlots}. */
export interface ReplicaSlotsOptions {
  readonly pins: SlotLeases;
  /** The cluster's database, for the registry's live replicas. */
  readonly database: PostgresDatabase;
  /** The clock of the renewals and idle releases (the pins' own). */
  readonly now: () => number;
  /** Default `Defaults.sessionLeases.renewMs`. */
  readonly renewMs?: number;
  /** Default `Defaults.slotPins.idleReleaseMs`. */
  readonly idleReleaseMs?: number | undefined;
}

/** A turn about to run in a slot ({@link ReplicaSlots.pin}). */
export interface PinnedTurn {
  readonly profile: string;
  readonly sessionKey: string;
  readonly slot: string;
  readonly log: Logger;
  /** Says a line in the turn's chat. */
  readonly tell?: ((text: string) => Promise<void>) | undefined;
}

/** What the chats of a slot whose files stayed on another replica are told, once each. */
export function filesLeftBehindText(from: string, to: string): string {
  return `📁 This chat's workspace now runs on replica ${to}: replica ${from}, where it ran before, went away. Files written there stay on ${from}, untouched, and are not here; they are seen again when this workspace returns to ${from}. Ask the operator to copy what you need.`;
}

interface Pin {
  readonly profile: string;
  readonly slot: string;
  readonly sessions: Set<string>;
}

/**
 * The pins of this replica's persistent and `shared:` slots (docs/cluster.md, "Sandboxes
 * across replicas"): a turn in such a slot runs on the pin's holder ({@link pin}); the holder
 * renews its pins with its session leases, cuts off the turns of a pin it lost, and, when the
 * files live on shared storage, releases the pin of a slot idle for `idleReleaseMs` and
 * removes its container here, so the next holder's container is the only one.
 */
export class ReplicaSlots {
  readonly pins: SlotLeases;
  readonly #database: PostgresDatabase;
  readonly #now: () => number;
  readonly #renewMs: number;
  readonly #idleReleaseMs: number;
  readonly #pinned = new Map<string, Pin>();
  #lastRenewMs = Number.NEGATIVE_INFINITY;
  #renewing: Promise<void> | undefined;
  /** The idle releases under way (each removes a container first), one round's at a time. */
  #releasing: Promise<void> | undefined;

  constructor(options: ReplicaSlotsOptions) {
    this.pins = options.pins;
    this.#database = options.database;
    this.#now = options.now;
    this.#renewMs = options.renewMs ?? Defaults.sessionLeases.renewMs;
    this.#idleReleaseMs = options.idleReleaseMs ?? Defaults.slotPins.idleReleaseMs;
  }

  /** Whether turns in `slot` are pinned: a slot whose files are data (`default`, `profile:`, `shared:`). */
  static pinned(slot: string): boolean {
    return slotTraits(slot).persistentData;
  }

  /**
   * Takes (or renews) the pin of the turn's slot: `true` when the turn runs here, else the
   * live process holding it, which the turn's messages are handed to. A chat of a slot whose
   * files stayed on another replica at the pin's last move is told so once. Rejects when the
   * database does not answer.
   */
  async pin(turn: PinnedTurn): Promise<true | { holder: string }> {
    const key = SlotRegistry.slotId(turn.profile, turn.slot);
    const claim = await this.pins.claim(key, this.#liveInstanceOf);
    if (!claim.held) return { holder: claim.holder };
    let pin = this.#pinned.get(key);
    if (pin === undefined) {
      pin = { profile: turn.profile, slot: turn.slot, sessions: new Set() };
      this.#pinned.set(key, pin);
    }
    pin.sessions.add(turn.sessionKey);
    const moved = claim.moved;
    if (
      moved !== undefined &&
      moved.from !== this.pins.replicaId &&
      turn.tell !== undefined &&
      (await this.pins.tellOnce(key, turn.sessionKey, moved.token))
    ) {
      turn.log.info({ slot: turn.slot, from: moved.from }, "chat told its files stayed behind");
      await turn.tell(filesLeftBehindText(moved.from, this.pins.replicaId));
    }
    return true;
  }

  /**
   * One round (from the replicas' loop): cuts off the turns of pins lapsed by this clock,
   * renews when due, and releases idle pins.
   */
  async round(gateway: GatewayCore): Promise<void> {
    await this.#cut(gateway, this.pins.lapsed());
    const nowMs = this.#now();
    if (this.#renewing === undefined && nowMs - this.#lastRenewMs >= this.#renewMs) {
      this.#lastRenewMs = nowMs;
      this.#renewing = this.pins
        .renew()
        .then(
          (lost) => this.#cut(gateway, lost),
          (error: unknown) => gateway.logger.warn({ err: error }, "could not renew the slot pins"),
        )
        .finally(() => {
          this.#renewing = undefined;
        });
    }
    if (this.pins.sharedFiles) {
      this.#releasing ??= this.#releaseIdle(gateway).finally(() => {
        this.#releasing = undefined;
      });
      await this.#releasing;
    }
  }

  /**
   * A graceful stop, once turns drained and before the sandboxes close: removes the container
   * of every pinned slot here (files kept) and gives the pins up, so another replica takes
   * them at once and its container is the only one. Never rejects.
   */
  async release(gateway: GatewayCore): Promise<void> {
    await this.#renewing;
    await this.#releasing;
    // Alone in the cluster, a replica keeps its containers as a single gateway does between
    // processes (a persistent one outlives a restart); with another running, that one may
    // take the slots now, so its container must be the only one working in them.
    const others = await this.#otherRunningReplicas().catch(() => 1);
    for (const { slot } of others > 0 ? this.pins.held() : []) {
      const pin = this.#pinned.get(slot);
      if (pin !== undefined) await this.#removeContainer(gateway, pin);
    }
    const released = await this.pins.releaseAll().catch((error: unknown) => {
      gateway.logger.warn({ err: error }, "could not release the slot pins");
      return 0;
    });
    this.#pinned.clear();
    if (released > 0) gateway.logger.info({ released }, "slots handed over to the other replicas");
  }

  /**
   * At start, before any turn: removes this replica's containers of pinned slots whose pin
   * names another replica's copy now (files kept), e.g. a container a SIGKILL, or a stop while
   * alone in the cluster, left here while the slot moved. A pin still naming this replica, or
   * no pin at all, leaves the container for this replica's next claim. Never rejects.
   */
  async removeLeftovers(gateway: GatewayCore): Promise<void> {
    const moved = await this.pins.homedElsewhere().catch((error: unknown) => {
      gateway.logger.warn({ err: error }, "could not read which slots moved to other replicas");
      return [];
    });
    for (const { slot: key, home } of moved) {
      const spans = slotTraits(key).spansProfiles;
      for (const runtime of gateway.runtimes.values()) {
        const prefix = `${runtime.name}/`;
        const slot = spans ? key : key.startsWith(prefix) ? key.slice(prefix.length) : undefined;
        if (slot === undefined) continue;
        const here = await runtime.sandbox.status(slot).catch(() => undefined);
        if (here === undefined) continue;
        gateway.logger.info(
          { profile: runtime.name, slot, home },
          "the slot moved to another replica while this one was down: its container here is removed, files kept",
        );
        await this.#removeContainer(gateway, { profile: runtime.name, slot, sessions: new Set() });
      }
    }
  }

  async #otherRunningReplicas(): Promise<number> {
    const replicas = await listReplicas(this.#database);
    return replicas.filter((r) => r.id !== this.pins.replicaId && r.alive && r.state === "running")
      .length;
  }

  readonly #liveInstanceOf: LiveInstanceOf = async (replicaId) => {
    const replicas = await listReplicas(this.#database);
    return replicas.find((r) => r.id === replicaId && r.alive && r.state === "running")?.instanceId;
  };

  /**
   * Cuts off the running turns of the sessions of pins this replica lost, then removes its
   * container of each such slot (files kept): the slot's turns run on the pin's new holder,
   * in that one's container.
   */
  async #cut(gateway: GatewayCore, lost: readonly string[]): Promise<void> {
    const { queue } = gateway.services;
    for (const key of lost) {
      const pin = this.#pinned.get(key);
      this.#pinned.delete(key);
      if (pin === undefined) continue;
      for (const sessionKey of pin.sessions) {
        const session = { profile: pin.profile, sessionKey };
        queue.abortRunning(sessionKey, new SessionLeaseLostError(session, "the turn"));
      }
      gateway.logger.warn(
        { profile: pin.profile, slot: pin.slot },
        "lost the slot's pin: its turns are left to the replica that takes it",
      );
      await this.#removeContainer(gateway, pin);
    }
  }

  async #releaseIdle(gateway: GatewayCore): Promise<void> {
    const nowMs = this.#now();
    const { queue } = gateway.services;
    for (const { slot: key, claimedAtMs } of this.pins.held()) {
      if (nowMs - claimedAtMs < this.#idleReleaseMs) continue;
      const pin = this.#pinned.get(key);
      const busy = [...(pin?.sessions ?? [])].some((sessionKey) => queue.busy(sessionKey));
      if (busy) continue;
      if (pin !== undefined) await this.#removeContainer(gateway, pin);
      await this.pins.release(key);
      this.#pinned.delete(key);
      gateway.logger.info({ slot: pin?.slot ?? key }, "idle slot's pin released");
    }
  }

  /** Removes this replica's container of a pinned slot, keeping its files. */
  async #removeContainer(gateway: GatewayCore, pin: Pin): Promise<void> {
    const runtime = gateway.runtimes.get(pin.profile);
    if (runtime === undefined) return;
    await runtime.sandbox
      .cleanup(pin.slot, { force: true, deleteDirs: false })
      .catch((error: unknown) =>
        gateway.logger.warn(
          { err: error, slot: pin.slot },
          "could not remove the container of a slot whose pin is elsewhere",
        ),
      );
  }
}
