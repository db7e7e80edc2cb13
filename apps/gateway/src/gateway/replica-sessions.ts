import type { Schedule } from "@mediagate/io";
import { listReplicas } from "../cluster/replica-registry.js";
import { stopSession, stopSlot } from "../commands/stop.js";
import { Defaults } from "../defaults.js";
import type { PostgresJournal } from "../durable/postgres-journal.js";
import {
  type LeasedSession,
  type LeaseRequest,
  SessionLeaseLostError,
  type SessionLeases,
} from "../durable/session-leases.js";
import type { SessionHold } from "../pipeline/types.js";
import { buildSessionKey, parseSessionKey } from "../session/key.js";
import { RunLater } from "../session/queue.js";
import { type GatewayCore, type ReplicaLoop, track } from "./core.js";
import { recover, recoverEntries } from "./recovery.js";
import { ReplicaSlots } from "./replica-slots.js";

/** Options of {@link ReplicaSessions}. */
export interface ReplicaSessionsOptions {
  readonly leases: SessionLeases;
  readonly journal: PostgresJournal;
  /** The timer of the loop. Default: the gateway's `replicaSchedule`, else a real timer. */
  readonly schedule: Schedule;
  /** Default `Defaults.sessionLeases.pollMs`. */
  readonly pollMs?: number;
  /** Default `Defaults.sessionLeases.renewMs`. */
  readonly renewMs?: number;
  /** Default `Defaults.sessionLeases.idleReleaseMs`. */
  readonly idleReleaseMs?: number;
  /** Default `Defaults.sessionLeases.orderCheckMs`. */
  readonly orderCheckMs?: number;
  /** Default `Defaults.sessionLeases.orderWaitMs`. */
  readonly orderWaitMs?: number;
  /** The clock of the renewals and idle releases (the leases' own). */
  readonly now: () => number;
  /** The pins of persistent and `shared:` slots (replica-slots.ts); none: no slot is pinned. */
  readonly slots?: ReplicaSlots | undefined;
}

/**
 * The replicas' side of the gateway (docs/cluster.md, "Sessions across replicas"): a turn runs
 * on the replica that holds its session's lease ({@link acquire}); a message for a session
 * another live replica holds is handed to it. Every `pollMs` a loop renews this process's
 * leases when `renewMs` is due (a lost one cuts its turn off), picks up the messages handed to
 * it, takes over what dead replicas left (their messages, cut-off turns and replies, as a
 * restart would) and releases the leases of sessions idle for `idleReleaseMs`.
 */
export class ReplicaSessions implements SessionHold, ReplicaLoop {
  readonly leases: SessionLeases;
  readonly slots: ReplicaSlots | undefined;
  readonly #journal: PostgresJournal;
  readonly #schedule: Schedule;
  readonly #pollMs: number;
  readonly #renewMs: number;
  readonly #idleReleaseMs: number;
  readonly #orderCheckMs: number;
  readonly #orderWaitMs: number;
  readonly #now: () => number;
  /** When each turn held back for its session's older messages first waited (#inOrder). */
  readonly #waitingSince = new Map<string, number>();
  /** Entries to give back to the cluster, kept until the database takes the write. */
  readonly #givenBack = new Set<number>();
  /**
   * The entries #inOrder took to run before a newer message, from when they are dispatched
   * until their message is in its session's queue ({@link queued}; forgotten after
   * `2 × orderWaitMs` if it never gets there): a turn held back behind one looks again as soon
   * as it arrives. Dispatched, it is this process's own but still on its way through the
   * pipeline's first steps (a database read among them), and a look at the queue before then
   * finds it neither taken nor waiting there.
   */
  readonly #onTheirWay = new Map<
    number,
    { readonly sinceMs: number; readonly arrived: Promise<void>; readonly arrive: () => void }
  >();
  #gateway: GatewayCore | undefined;
  #cancel: (() => void) | undefined;
  #lastRenewMs = Number.NEGATIVE_INFINITY;
  /** Whether new work is taken from the cluster (handed or taken over); false once stopping. */
  #taking = false;
  #running = false;
  #tick: Promise<void> = Promise.resolve();
  /** The round's work (hand-overs, take-overs, requests) while it runs. */
  #work: Promise<void> | undefined;
  /** The renewal under way. */
  #renewing: Promise<void> | undefined;

  constructor(options: ReplicaSessionsOptions) {
    this.leases = options.leases;
    this.#journal = options.journal;
    this.#schedule = options.schedule;
    this.#pollMs = options.pollMs ?? Defaults.sessionLeases.pollMs;
    this.#renewMs = options.renewMs ?? Defaults.sessionLeases.renewMs;
    this.#idleReleaseMs = options.idleReleaseMs ?? Defaults.sessionLeases.idleReleaseMs;
    this.#orderCheckMs = options.orderCheckMs ?? Defaults.sessionLeases.orderCheckMs;
    this.#orderWaitMs = options.orderWaitMs ?? Defaults.sessionLeases.orderWaitMs;
    this.#now = options.now;
    this.slots = options.slots;
  }

  async acquire(turn: Parameters<SessionHold["acquire"]>[0]): Promise<boolean | typeof RunLater> {
    const session = { profile: turn.profile, sessionKey: turn.sessionKey };
    let step = "claim the session's lease";
    try {
      const claim = await this.leases.claim(session);
      if (!claim.held) {
        step = "hand the message to the session's holder";
        const handed = await this.#journal.handOver(
          turn.entryIds,
          claim.holder,
          turn.recovered === true,
        );
        turn.log.info(
          { holder: claim.holder, entries: handed.length },
          "another replica holds the session: its message is handed to it",
        );
        return false;
      }
      step = "pin the session's slot to this replica";
      if (!(await this.#pinHere(turn, session))) return false;
    } catch (error) {
      turn.log.warn(
        { err: error, step },
        `could not ${step}; the message is kept for the replica that can`,
      );
      this.giveBack(turn.entryIds);
      return false;
    }
    try {
      return await this.#inOrder(turn);
    } catch (error) {
      turn.log.warn(
        { err: error },
        "could not look up the session's older messages; the message is kept for the replica that can",
      );
      this.giveBack(turn.entryIds);
      return false;
    }
  }

  /**
   * Whether the held session's turn of `turn.entryIds` runs now: first the session's older
   * open entries that are this process's to run (handed to it, released, left by a gone
   * replica, its own cut off by a lost lease) are taken and run before it (dispatched, or their
   * cut-off notice delivered); while one of them waits in the queue the turn goes back behind
   * it ({@link RunLater}); while an older one is still on its way (a live replica's, or this
   * one's not queued yet) it goes back too, held back for `orderCheckMs`, or until the one it
   * dispatched is queued ({@link queued}), whichever comes first (its place among the running
   * turns given up meanwhile), for `orderWaitMs` at most in all.
   */
  async #inOrder(turn: Parameters<SessionHold["acquire"]>[0]): Promise<boolean | typeof RunLater> {
    const gateway = this.#gateway;
    const runtime = gateway?.runtimes.get(turn.profile);
    const chat = parseSessionKey(turn.sessionKey);
    if (gateway === undefined || runtime === undefined || chat === undefined) return true;
    if (turn.entryIds.length === 0) return true;
    const beforeId = Math.min(...turn.entryIds);
    const { queue } = gateway.services;
    const waitKey = `${turn.sessionKey}\0${beforeId}`;
    const sinceMs = this.#waitingSince.get(waitKey) ?? this.#now();
    this.#waitingSince.delete(waitKey);
    for (;;) {
      if (turn.signal?.aborted === true) return RunLater;
      const older = await this.#journal.takeOlder({
        profile: turn.profile,
        platform: chat.platform,
        chatId: chat.chatId,
        beforeId,
        sameSession: (message) => buildSessionKey(message, runtime.profile) === turn.sessionKey,
        reclaim: this.#givenBack,
      });
      if (older.taken.length > 0) {
        for (const entry of older.taken) {
          this.#givenBack.delete(entry.id);
          let arrive = (): void => {};
          const arrived = new Promise<void>((resolve) => {
            arrive = resolve;
          });
          this.#onTheirWay.set(entry.id, { sinceMs: this.#now(), arrived, arrive });
        }
        turn.log.info(
          { entries: older.taken.map((entry) => entry.id) },
          "older messages of the session taken to run first",
        );
        const notices = await recoverEntries(gateway, older.taken);
        // A cut-off turn's notice goes out before the answers of the messages after it.
        if (notices.length > 0) await gateway.outbox.resume(notices);
        // Those dispatched are this process's now, on their way to the queue: look again.
        continue;
      }
      if (queue.waitingBefore(turn.sessionKey, beforeId)) return RunLater;
      const { waiting } = older;
      if (waiting.length === 0) return true;
      if (this.#now() - sinceMs >= this.#orderWaitMs) {
        turn.log.warn(
          { olderEntries: waiting, waitedMs: this.#now() - sinceMs },
          "older messages of the session are still open elsewhere: this one runs before them",
        );
        return true;
      }
      // A turn dropped while held back (/stop) never comes back for its entry, and a message
      // dispatched may end before its queue (a command, a refusal): forget them.
      for (const [key, since] of this.#waitingSince) {
        if (this.#now() - since > 2 * this.#orderWaitMs) this.#waitingSince.delete(key);
      }
      this.#forgetStale();
      this.#waitingSince.set(waitKey, sinceMs);
      // Waits out of the replica's running turns: the older message may itself wait for a
      // free one here, or on a replica whose turns wait the same way. One this process
      // dispatched is looked for again as soon as it is queued, the others a check later.
      const arriving = waiting.flatMap(({ id }) => this.#onTheirWay.get(id)?.arrived ?? []);
      queue.holdBack(
        turn.sessionKey,
        new Promise<void>((resolve) => {
          const cancel = this.#schedule(resolve, this.#orderCheckMs);
          if (arriving.length === 0) return;
          void Promise.all(arriving).then(() => {
            cancel();
            resolve();
          });
        }),
      );
      return RunLater;
    }
  }

  queued(entryIds: readonly number[]): void {
    for (const id of entryIds) this.#arrived(id);
    this.#forgetStale();
  }

  /** Forgets the entries dispatched `2 × orderWaitMs` ago that never reached the queue. */
  #forgetStale(): void {
    for (const [id, way] of this.#onTheirWay) {
      if (this.#now() - way.sinceMs > 2 * this.#orderWaitMs) this.#arrived(id);
    }
  }

  #arrived(id: number): void {
    const way = this.#onTheirWay.get(id);
    if (way === undefined) return;
    this.#onTheirWay.delete(id);
    way.arrive();
  }

  async dropWaiting(sessions: readonly LeasedSession[]): Promise<number> {
    // One read of the journal's open entries per profile and platform, however many sessions:
    // `/stop all` names every session its slot has known here, which can be thousands.
    const groups = new Map<string, { profile: string; platform: string; keys: Set<string> }>();
    const chats = new Set<string>();
    for (const session of sessions) {
      const chat = parseSessionKey(session.sessionKey);
      if (chat === undefined) continue;
      const id = `${session.profile}\n${chat.platform}`;
      const group = groups.get(id) ?? {
        profile: session.profile,
        platform: chat.platform,
        keys: new Set<string>(),
      };
      groups.set(id, group);
      group.keys.add(session.sessionKey);
      chats.add(chat.chatId);
    }
    const ids: number[] = [];
    for (const { profile, platform, keys } of groups.values()) {
      const runtime = this.#gateway?.runtimes.get(profile);
      if (runtime === undefined) continue;
      const waiting = await this.#journal.takeOlder({
        profile,
        platform,
        chatId: chats.size === 1 ? [...chats][0] : undefined,
        beforeId: Number.MAX_SAFE_INTEGER,
        sameSession: (message) => keys.has(buildSessionKey(message, runtime.profile)),
        reclaim: this.#givenBack,
      });
      for (const entry of waiting.taken) ids.push(entry.id);
    }
    for (const id of ids) this.#givenBack.delete(id);
    if (ids.length > 0) await this.#journal.finished(ids, "stopped");
    return ids.length;
  }

  /**
   * A turn in a pinned slot runs on the pin's holder: when that is another replica, this one
   * gives the session's lease up and hands the messages to it.
   */
  async #pinHere(
    turn: Parameters<SessionHold["acquire"]>[0],
    session: LeasedSession,
  ): Promise<boolean> {
    if (this.slots === undefined || turn.slot === undefined || !ReplicaSlots.pinned(turn.slot))
      return true;
    const pinned = await this.slots.pin({
      ...session,
      slot: turn.slot,
      log: turn.log,
      tell: turn.tell,
    });
    if (pinned === true) return true;
    await this.leases.release(session);
    const handed = await this.#journal.handOver(
      turn.entryIds,
      pinned.holder,
      turn.recovered === true,
    );
    turn.log.info(
      { holder: pinned.holder, slot: turn.slot, entries: handed.length },
      "another replica holds the slot's pin: its message is handed to it",
    );
    return false;
  }

  /** A graceful stop, before the sandboxes close: the slots' pins go to the other replicas. */
  async releaseSlots(): Promise<void> {
    const gateway = this.#gateway;
    if (gateway !== undefined) await this.slots?.release(gateway);
  }

  askHolder(session: LeasedSession): Promise<string | undefined> {
    return this.leases.ask(session, "stop");
  }

  /**
   * Asks every other live replica (lease holders and the registry's running replicas) to stop
   * what it runs on the session's slot. The registry failing to answer leaves the lease
   * holders; the leases failing rejects.
   */
  async askEveryReplica(session: LeasedSession): Promise<readonly string[]> {
    const gateway = this.#gateway;
    const database = gateway?.cluster?.database;
    const registered =
      database === undefined
        ? []
        : await listReplicas(database).then(
            (replicas) =>
              replicas.filter((r) => r.alive && r.state === "running").map((r) => r.instanceId),
            (error: unknown) => {
              gateway?.logger.warn({ err: error }, "could not list the replicas");
              return [];
            },
          );
    return this.leases.askEvery(session, "stop-slot", registered);
  }

  sessionsHeld(): number {
    return this.leases.held().length;
  }

  giveBack(entryIds: readonly number[]): void {
    for (const id of entryIds) this.#givenBack.add(id);
  }

  async prepare(gateway: GatewayCore): Promise<void> {
    // Turns recovered at start are acquired as any other: without the gateway bound, #inOrder
    // let them run before the session's older messages still on their way (the chaos run,
    // FAULT_SEED=1653993695: a restarted replica ran a message it had left before an older
    // one another replica was handing over).
    this.#gateway = gateway;
    await this.slots?.removeLeftovers(gateway);
  }

  /** Starts the loop for `gateway` (after its start-up recovery). */
  start(gateway: GatewayCore): void {
    this.#gateway = gateway;
    this.#taking = true;
    this.#running = true;
    this.#next();
  }

  /**
   * The gateway's stop begins: no new work is taken from the cluster; the leases are still
   * renewed while running turns drain.
   */
  quiesce(): void {
    this.#taking = false;
  }

  /**
   * Ends the loop and gives every lease up, so other replicas take this one's sessions at
   * once (with the journal's `release`, the messages left). Never rejects.
   */
  async stop(): Promise<void> {
    this.#taking = false;
    this.#running = false;
    this.#cancel?.();
    await this.#tick;
    await this.#renewing;
    await this.#work;
    const released = await this.leases.releaseAll().catch((error: unknown) => {
      this.#gateway?.logger.warn({ err: error }, "could not release the session leases");
      return 0;
    });
    if (released > 0)
      this.#gateway?.logger.info({ released }, "sessions handed over to the other replicas");
  }

  /** One round of the loop, now (tests; the loop calls it every `pollMs`). */
  runOnce(): Promise<void> {
    this.#tick = this.#tick.then(() => this.#round());
    return this.#tick;
  }

  #next(): void {
    if (!this.#running) return;
    this.#cancel = this.#schedule(() => {
      void this.runOnce().finally(() => this.#next());
    }, this.#pollMs);
  }

  /**
   * Cuts off the sessions whose lease lapsed by this process's clock, then starts a renewal
   * when one is due and the round's work, unless the last ones are still going: a renewal may
   * wait for a server that stopped answering (`Defaults.postgres.queryTimeoutMs`), and a
   * take-over may wait out `Defaults.postgres.ownerGraceMs` after the server restarted; the
   * next round's lapse check must not wait behind either.
   */
  async #round(): Promise<void> {
    const gateway = this.#gateway;
    if (gateway === undefined) return;
    this.#cut(gateway, this.leases.lapsed());
    const nowMs = this.#now();
    if (this.#renewing === undefined && nowMs - this.#lastRenewMs >= this.#renewMs) {
      this.#lastRenewMs = nowMs;
      this.#renewing = this.leases
        .renew()
        .then(
          (lost) => this.#cut(gateway, lost),
          (error: unknown) =>
            gateway.logger.warn({ err: error }, "could not renew the session leases"),
        )
        .finally(() => {
          this.#renewing = undefined;
        });
    }
    const slots = this.slots?.round(gateway).catch((error: unknown) => {
      gateway.logger.warn({ err: error }, "slot pins' round failed; it runs again");
    });
    this.#work ??= Promise.all([slots, this.#takeWork(gateway)])
      .then(() => {})
      .finally(() => {
        this.#work = undefined;
      });
  }

  async #takeWork(gateway: GatewayCore): Promise<void> {
    const log = gateway.logger;
    try {
      if (this.#givenBack.size > 0) {
        const ids = [...this.#givenBack];
        await this.#journal.releaseEntries(ids);
        for (const id of ids) this.#givenBack.delete(id);
      }
      for (const request of await this.leases.requests()) await this.#act(gateway, request);
      if (!this.#taking) return;
      const notices = await recoverEntries(gateway, await this.#journal.takeHandedOver());
      if (notices.length > 0) track(gateway, gateway.outbox.resume(notices));
      const replies = await recover(gateway);
      if (replies.length > 0) track(gateway, gateway.outbox.resume(replies));
      await this.#releaseIdle(gateway);
    } catch (error) {
      log.warn({ err: error }, "replica round's take-over failed; it runs again");
    }
  }

  /** Cuts off the running turns of sessions whose lease was lost. */
  #cut(gateway: GatewayCore, lost: readonly LeasedSession[]): void {
    const { queue } = gateway.services;
    for (const session of lost) {
      const cut = queue.abortRunning(
        session.sessionKey,
        new SessionLeaseLostError(session, "the turn"),
      );
      gateway.logger.warn(
        { profile: session.profile, sessionKey: session.sessionKey, turnCutOff: cut },
        "lost the session's lease: its turns are left to the replica that takes it",
      );
    }
  }

  /** Stops a session (or its slot, for `/stop all`) here for an admin who asked on another replica. */
  async #act(gateway: GatewayCore, request: LeaseRequest): Promise<void> {
    const { session } = request;
    const runtime = gateway.runtimes.get(session.profile);
    if (runtime === undefined) return;
    const fields = { profile: session.profile, sessionKey: session.sessionKey };
    if (request.action === "stop-slot") {
      const summary = await stopSlot(runtime, gateway.services, session.sessionKey);
      gateway.logger.info(
        { ...fields, ...summary },
        "slot stopped for an admin who asked /stop all on another replica",
      );
      return;
    }
    const summary = await stopSession(runtime, gateway.services, session.sessionKey);
    gateway.logger.info(
      { ...fields, ...summary },
      "session stopped for an admin who asked on another replica",
    );
  }

  async #releaseIdle(gateway: GatewayCore): Promise<void> {
    const nowMs = this.#now();
    const { queue } = gateway.services;
    for (const { session, claimedAtMs } of this.leases.held()) {
      if (nowMs - claimedAtMs < this.#idleReleaseMs) continue;
      if (queue.busy(session.sessionKey)) continue;
      await this.leases.release(session);
    }
  }
}
