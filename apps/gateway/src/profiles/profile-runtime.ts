import { join } from "node:path";
import type { Schedule } from "@mediagate/io";
import type { TranslateContext } from "@mediagate/media";
import {
  type DockerEngine,
  type ReplicaLabels,
  resolveSlot,
  Sandbox,
  type SlotScope,
  slotTraits,
} from "@mediagate/sandbox";
import { PairingRefusals } from "../access-control/pairing-refusals.js";
import { createAgent } from "../agents/agent-factory.js";
import type { Agent } from "../agents/types.js";
import type { ProfileConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import type { StateStore } from "../state/state-store.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";

/** Everything one profile runs with: its sandbox, state database and agent. */
export interface ProfileRuntimeOptions {
  readonly profile: ProfileConfig;
  readonly engine: DockerEngine;
  /** Root home (`shared:` slots live there). */
  readonly rootHome: string;
  /** The cluster and replica its containers are labelled with (docs/cluster.md); none on SQLite. */
  readonly replica?: ReplicaLabels | undefined;
  /**
   * Where persistent and `shared:` slots keep their files instead of the homes: a replica's
   * `cluster.slotsDir` (docs/cluster.md). None on SQLite.
   */
  readonly dataSlotsRoot?: string | undefined;
  /** Every profile home of the process: their secrets are never delivered as media. */
  readonly protectedHomes: readonly string[];
  readonly logger: Logger;
  /** Replaces the agent the profile's config names (tests, embedding). */
  readonly agent?: ((store: StateStore) => Agent) | undefined;
  /** The state database's clock (pairing codes expire by it). Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /** The timer of the pairing refusals' summary (default real timers); tests fire it by hand. */
  readonly refusalSchedule?: Schedule | undefined;
  /** How long opening the state database waits for its check. Default `StateStoreDefaults`. */
  readonly integrityWaitMs?: number | undefined;
  /**
   * Opens the profile's state store on the install's store (docs/store.md). Default: the
   * SQLite file of the profile's home.
   */
  readonly openStore?: (() => Promise<StateStore>) | undefined;
}

/**
 * One profile's runtime: owns the `Sandbox` (one per profile), the `StateStore`
 * (`<home>/state.db`) and the agent, and answers which slot a session's tool calls use.
 */
export class ProfileRuntime {
  readonly profile: ProfileConfig;
  /** The process's logger with the profile's name. */
  readonly log: Logger;
  readonly sandbox: Sandbox;
  readonly store: StateStore;
  readonly agent: Agent;
  /** Code requests refused while the profile's pending codes are full, summarized. */
  readonly pairingRefusals: PairingRefusals;
  readonly #rootHome: string;
  readonly #protectedHomes: readonly string[];

  /** Opens the profile's state database (in its worker thread) and builds the runtime. */
  static async open(options: ProfileRuntimeOptions): Promise<ProfileRuntime> {
    const store =
      (await options.openStore?.()) ??
      (await SqliteStateStore.open(stateDbPath(options.profile.home), {
        ...(options.now === undefined ? {} : { now: options.now }),
        ...(options.integrityWaitMs === undefined
          ? {}
          : { integrityWaitMs: options.integrityWaitMs }),
      }));
    try {
      return new ProfileRuntime(options, store);
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
  }

  private constructor(options: ProfileRuntimeOptions, store: StateStore) {
    this.profile = options.profile;
    this.#rootHome = options.rootHome;
    this.#protectedHomes = options.protectedHomes;
    const logger = options.logger.child({ profile: options.profile.name });
    this.log = logger;
    this.sandbox = new Sandbox({
      engine: options.engine,
      profile: options.profile.name,
      profileHome: options.profile.home,
      rootHome: options.rootHome,
      replica: options.replica,
      dataSlotsRoot: options.dataSlotsRoot,
      settings: options.profile.sandbox,
      onWarning: (message, cause) => logger.warn({ err: cause }, message),
      onPullProgress: (progress) => logger.info({ pull: progress }, progress.text),
    });
    this.store = store;
    this.pairingRefusals = new PairingRefusals({
      logger,
      maxPendingCodes: options.profile.pairing.maxPendingCodes,
      now: options.now,
      schedule: options.refusalSchedule,
    });
    this.agent =
      options.agent?.(this.store) ??
      createAgent(options.profile.agent, { store: this.store, logger });
  }

  get name(): string {
    return this.profile.name;
  }

  #scope(sessionKey: string | undefined): SlotScope {
    return {
      backend: "docker",
      persistent: this.profile.sandbox.persistent,
      profile: this.profile.name,
      sessionKey,
      sharedKey: this.profile.sandbox.sharedKey,
    };
  }

  /** The slot a session's tool calls run in (docs/sandbox.md, no task id). */
  slotFor(sessionKey: string | undefined): string {
    return resolveSlot(undefined, this.#scope(sessionKey));
  }

  /**
   * Whether the slot's container may serve more than one session (a profile, shared or task
   * slot), as the slot-key grammar says.
   */
  isSharedSlot(slot: string): boolean {
    return slotTraits(slot).sharedBySessions;
  }

  /**
   * Slot directories for media translation: only the one the container of `slot` binds as
   * `/workspace` and `/root`, because a `/workspace/...` path in a reply names that
   * container's files. None with `filesystem: tmpfs` (the container binds no directory). No
   * other layout is offered: not the shared slot's dir to a profile whose container does not
   * use it (non-persistent, or no shared key), and not the per-session dir an earlier
   * non-persistent configuration left behind (the old "legacy session" fallback).
   */
  slotDirs(slot: string): string[] {
    if (this.profile.sandbox.filesystem !== "bind") return [];
    return [this.sandbox.slotDirectory(slot)];
  }

  /**
   * The media translation context of a turn of `sessionKey` whose tool calls ran in `slot`'s
   * container: a file found on the host (a bind slot's directory, a volume) is sent only if
   * that session's user could read it in the container, and a file read out of the live
   * container is read as that user (docs/security.md, "Files in replies").
   */
  translateContext(slot: string, sessionKey: string, signal?: AbortSignal): TranslateContext {
    const runtime = this;
    let slotDirs: string[] | undefined;
    return {
      signal,
      backend: "docker",
      // Worked out when a reply names a file: most name none, and the slot's directory costs
      // a hash and a path (1.5 % of the main thread's profile at 100 text-only users).
      get slotDirs() {
        slotDirs ??= runtime.slotDirs(slot);
        return slotDirs;
      },
      volumes: this.profile.sandbox.volumes,
      allowDirs: this.profile.media.allowDirs,
      protectedHomes: this.#protectedHomes,
      reader: () => this.sandbox.sessionIdentity(slot, sessionKey),
      container: {
        read: (path, maxBytes) => this.sandbox.readFile(slot, path, maxBytes, { sessionKey }),
      },
      tmpDir: join(this.profile.home, "tmp"),
    };
  }

  /**
   * Writes the pairing refusals' summary still owed, awaits the sandbox's outstanding cleanups
   * (bounded) and closes the state database.
   */
  async close(timeoutMs?: number): Promise<void> {
    this.pairingRefusals.flush();
    try {
      await this.sandbox.shutdown(timeoutMs);
    } finally {
      await this.store.close();
    }
  }
}
