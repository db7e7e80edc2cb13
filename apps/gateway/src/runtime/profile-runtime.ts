import { join } from "node:path";
import type { TranslateContext } from "@mediagate/media";
import { type DockerEngine, resolveSlot, Sandbox, type SlotScope } from "@mediagate/sandbox";
import type { Agent } from "../agents/types.js";
import type { ProfileConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { StateStore, stateDbPath } from "../state/store.js";
import { createAgent } from "./agent-factory.js";

/** Everything one profile runs with: its sandbox, state database and agent. */
export interface ProfileRuntimeOptions {
  readonly profile: ProfileConfig;
  readonly engine: DockerEngine;
  /** Root home (`shared:` slots live there). */
  readonly rootHome: string;
  /** Every profile home of the process: their secrets are never delivered as media. */
  readonly protectedHomes: readonly string[];
  readonly logger: Logger;
  /** Replaces the agent the profile's config names (tests, embedding). */
  readonly agent?: ((store: StateStore) => Agent) | undefined;
}

/**
 * One profile's runtime: owns the `Sandbox` (one per profile), the `StateStore`
 * (`<home>/state.db`) and the agent, and answers which slot a session's tool calls use.
 */
export class ProfileRuntime {
  readonly profile: ProfileConfig;
  readonly sandbox: Sandbox;
  readonly store: StateStore;
  readonly agent: Agent;
  readonly #rootHome: string;
  readonly #protectedHomes: readonly string[];

  constructor(options: ProfileRuntimeOptions) {
    this.profile = options.profile;
    this.#rootHome = options.rootHome;
    this.#protectedHomes = options.protectedHomes;
    const logger = options.logger.child({ profile: options.profile.name });
    this.sandbox = new Sandbox({
      engine: options.engine,
      profile: options.profile.name,
      profileHome: options.profile.home,
      rootHome: options.rootHome,
      settings: options.profile.sandbox,
      onWarning: (message, cause) => logger.warn({ err: cause }, message),
    });
    this.store = StateStore.open(stateDbPath(options.profile.home));
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

  /** The slot a session's tool calls run in (SPEC §4, no task id). */
  slotFor(sessionKey: string | undefined): string {
    return resolveSlot(undefined, this.#scope(sessionKey));
  }

  /** Whether the slot's container serves more than one session (profile or shared slot). */
  isSharedSlot(slot: string): boolean {
    return !slot.startsWith("session:");
  }

  /** Slot directories for media translation: shared (if any), profile, legacy per-session. */
  slotDirs(sessionKey: string): string[] {
    const slots: string[] = [];
    if (this.profile.sandbox.sharedKey !== "")
      slots.push(`shared:${this.profile.sandbox.sharedKey}`);
    slots.push(this.profile.name === "default" ? "default" : `profile:${this.profile.name}`);
    slots.push(`session:${sessionKey}`);
    return [...new Set(slots.map((s) => this.sandbox.slotDirectory(s)))];
  }

  /** The media translation context of a session whose tool calls used `slot`. */
  translateContext(sessionKey: string, slot: string): TranslateContext {
    return {
      backend: "docker",
      slotDirs: this.slotDirs(sessionKey),
      volumes: this.profile.sandbox.volumes,
      allowDirs: this.profile.media.allowDirs,
      protectedHomes: this.#protectedHomes,
      container: { read: (path, maxBytes) => this.sandbox.readFile(slot, path, maxBytes) },
      tmpDir: join(this.profile.home, "tmp"),
    };
  }

  /** Awaits the sandbox's outstanding cleanups (bounded) and closes the state database. */
  async close(timeoutMs?: number): Promise<void> {
    try {
      await this.sandbox.shutdown(timeoutMs);
    } finally {
      this.store.close();
    }
  }
}
