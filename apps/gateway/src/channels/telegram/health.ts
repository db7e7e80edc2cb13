import type { ChannelHealth, ChannelState, Platform } from "../types.js";

/** Keeps one channel's {@link ChannelHealth}: its state, since when, the last good receive. */
export class HealthTracker {
  private state: ChannelState = "starting";
  private sinceMs: number;
  private lastOkMs: number | undefined;
  private detail: string | undefined;
  /** How updates arrive (Telegram's two modes); shown by the health endpoint and `/status`. */
  mode: ChannelHealth["mode"];
  /** The platform's last webhook delivery error; `undefined` once it delivers again. */
  webhookError: ChannelHealth["webhookError"];
  /** In a cluster: another replica holds this bot's connection (docs/cluster.md). */
  standby = false;

  constructor(
    private readonly platform: Platform,
    private readonly profile: string,
    private readonly now: () => number = Date.now,
  ) {
    this.sinceMs = now();
  }

  get current(): ChannelState {
    return this.state;
  }

  /** Moves to `state`; `sinceMs` changes only when the state does. `detail` must be token-free. */
  set(state: ChannelState, detail?: string): void {
    if (state !== this.state) this.sinceMs = this.now();
    this.state = state;
    this.detail = state === "up" ? undefined : detail;
  }

  /** The platform answered a receive call: up. */
  ok(): void {
    this.lastOkMs = this.now();
    this.set("up");
  }

  snapshot(): ChannelHealth {
    return {
      platform: this.platform,
      profile: this.profile,
      state: this.state,
      sinceMs: this.sinceMs,
      ...(this.lastOkMs === undefined ? {} : { lastOkMs: this.lastOkMs }),
      ...(this.detail === undefined ? {} : { detail: this.detail }),
      ...(this.mode === undefined ? {} : { mode: this.mode }),
      ...(this.webhookError === undefined ? {} : { webhookError: this.webhookError }),
      ...(this.standby ? { standby: true } : {}),
    };
  }
}
