import { type Client, Events } from "discord.js";
import type { Logger } from "pino";
import type { ChannelHealth, ChannelState } from "../types.js";
import { DiscordRequestError, describeError } from "./errors.js";

/** Gateway close codes after which discord.js does not reconnect, and what they mean. */
const FatalCloseCodes: Readonly<Record<number, string>> = {
  4004: "Discord refused the bot token (gateway close 4004): it was reset or revoked",
  4010: "invalid shard (gateway close 4010)",
  4011: "sharding required (gateway close 4011)",
  4012: "invalid API version (gateway close 4012)",
  4013: "invalid intents (gateway close 4013)",
  4014: "disallowed intents (gateway close 4014): enable the Message Content intent in the developer portal",
};

/**
 * The Discord channel's health (docs/durability.md): `starting` until `start` resolves, `up`
 * while the websocket is ready, `retrying` while discord.js reconnects or resumes, `failed` once
 * Discord refused the token or closed for good, `stopped` after `stop`. `lastOkMs` is the last
 * dispatch, READY/RESUMED or heartbeat ack. Once the channel is running, `failed` also calls
 * `onFatal`, once. Token-free by construction: details are close codes and error messages.
 */
export class HealthMonitor {
  #state: ChannelState = "starting";
  #sinceMs: number;
  #lastOkMs: number | undefined;
  #detail: string | undefined;
  /** In a cluster: another replica holds this bot's connection (docs/cluster.md). */
  standby = false;
  /**
   * The first close Discord ended the gateway with for good (4014 disallowed intents, …), also
   * during `start`: a login it failed rejects with this, which says what to do, rather than
   * with discord.js's bare "Used disallowed intents".
   */
  closedForGood: DiscordRequestError | undefined;
  /** Set once `start` resolved: from then on, failures go to it. */
  #onFatal: ((error: Error) => void) | undefined;

  constructor(
    private readonly client: Client,
    private readonly profile: string,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    this.#sinceMs = now();
  }

  /** Follows the client's gateway events (call before `login`). */
  watch(): void {
    const { client, log } = this;
    client.on(Events.Raw, () => this.#ok());
    client.on(Events.ShardReady, () => this.#enter("up"));
    client.on(Events.ShardResume, (_id, replayed) => {
      log.info({ replayed }, "gateway resumed");
      this.#enter("up");
    });
    client.on(Events.ShardReconnecting, () => {
      log.info("gateway reconnecting");
      this.#enter("retrying", "gateway connection lost; reconnecting");
    });
    client.on(Events.ShardDisconnect, (event) => {
      log.warn({ code: event.code }, "gateway closed");
      const reason = FatalCloseCodes[event.code] ?? `gateway closed for good (code ${event.code})`;
      const error = new DiscordRequestError("gateway", undefined, event.code, reason);
      this.closedForGood ??= error;
      this.fatal(error);
    });
    client.on(Events.ShardError, (error) => {
      log.warn({ err: describeError(error) }, "gateway connection error");
      if (this.#state === "retrying") this.#detail = `gateway connection error: ${error.message}`;
    });
  }

  /** `start` resolved: up, and later failures call `onFatal`. */
  running(onFatal: (error: Error) => void): void {
    this.#onFatal = onFatal;
    this.#enter("up");
  }

  /** `start` failed (it rejects; `onFatal` is not called). */
  startFailed(detail: string): void {
    this.#enter("failed", detail);
  }

  stopped(): void {
    this.#set("stopped");
  }

  /** Discord answered 401 to a request: the token was revoked. */
  unauthorized(): void {
    this.fatal(
      new DiscordRequestError("request", 401, undefined, "Discord refused the bot token (401)"),
    );
  }

  /** The running channel cannot go on: `failed`, logged, `onFatal` once. Ignored before. */
  fatal(error: Error): void {
    if (this.#onFatal === undefined || this.#final()) return;
    this.#set("failed", error.message);
    this.log.error({ err: describeError(error) }, "discord channel failed; it cannot go on");
    this.#onFatal(error);
  }

  snapshot(): ChannelHealth {
    for (const shard of this.client.ws.shards.values()) {
      if (shard.lastPingTimestamp > 0 && shard.ping >= 0) {
        this.#ok(shard.lastPingTimestamp + shard.ping);
      }
    }
    return {
      platform: "discord",
      profile: this.profile,
      state: this.#state,
      sinceMs: this.#sinceMs,
      ...(this.#lastOkMs === undefined ? {} : { lastOkMs: this.#lastOkMs }),
      ...(this.#detail === undefined ? {} : { detail: this.#detail }),
      ...(this.standby ? { standby: true } : {}),
    };
  }

  /** `stopped` and `failed` are left only by a new channel. */
  #final(): boolean {
    return this.#state === "stopped" || this.#state === "failed";
  }

  #enter(state: "up" | "retrying" | "failed", detail?: string): void {
    if (!this.#final()) this.#set(state, detail);
  }

  #set(state: ChannelState, detail?: string): void {
    if (state !== this.#state) this.#sinceMs = this.now();
    this.#state = state;
    this.#detail = state === "up" ? undefined : detail;
    if (state === "up") this.#ok();
  }

  #ok(atMs: number = this.now()): void {
    if (this.#lastOkMs === undefined || atMs > this.#lastOkMs) this.#lastOkMs = atMs;
  }
}
