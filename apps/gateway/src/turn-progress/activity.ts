import type { ChannelAdapter, ChatTarget } from "../channels/types.js";
import { Defaults } from "../defaults.js";

/** Defaults of {@link startActivity}. */
export const ActivityDefaults = {
  ...Defaults.activity,
  stillWorkingAfterMs: Defaults.stillWorkingAfterSeconds * 1000,
} as const;

/** Options of {@link startActivity}. */
export interface ActivityOptions {
  /**
   * How long the turn runs before the first typing indicator (default
   * `Defaults.activity.typingAfterMs`): a turn that ends
   * sooner shows none, and costs no request for it.
   */
  readonly typingAfterMs?: number | undefined;
  readonly intervalMs?: number | undefined;
  readonly stillWorkingAfterMs?: number | undefined;
  readonly stillWorkingText?: string | undefined;
  /**
   * Whether the one-time "still working" message is sent (default true); off when the turn
   * has a live status message instead (turn-progress/progress.ts).
   */
  readonly stillWorking?: boolean | undefined;
  /** Reports a failed "still working" send (best effort). */
  readonly onError?: (error: unknown) => void;
  /** The turn's signal: once aborted, nothing more is sent and requests in flight give up. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Shows that a turn is running: a typing indicator once it ran `typingAfterMs` and from then
 * on every `intervalMs`, and once, after `stillWorkingAfterMs`, a "still working…" message
 * (unless `stillWorking` is false: the turn's live status message replaces it). Returns the
 * function that stops both.
 */
export function startActivity(
  channel: ChannelAdapter,
  target: ChatTarget,
  options: ActivityOptions = {},
): () => void {
  const intervalMs = options.intervalMs ?? ActivityDefaults.intervalMs;
  const typingAfterMs = options.typingAfterMs ?? ActivityDefaults.typingAfterMs;
  const afterMs = options.stillWorkingAfterMs ?? ActivityDefaults.stillWorkingAfterMs;
  const text = options.stillWorkingText ?? ActivityDefaults.stillWorkingText;
  const { signal } = options;
  const typing = () => {
    if (signal?.aborted) return;
    channel.showActivity(target, signal).catch(() => {});
  };
  let interval: NodeJS.Timeout | undefined;
  const firstTyping = setTimeout(() => {
    typing();
    interval = setInterval(typing, intervalMs);
    interval.unref?.();
  }, typingAfterMs);
  firstTyping.unref?.();
  const stillWorking = setTimeout(() => {
    if (signal?.aborted || options.stillWorking === false) return;
    channel.sendText(target, text, signal).catch((error: unknown) => {
      if (!signal?.aborted) options.onError?.(error);
    });
  }, afterMs);
  stillWorking.unref?.();
  const stop = () => {
    clearTimeout(firstTyping);
    clearInterval(interval);
    clearTimeout(stillWorking);
    signal?.removeEventListener("abort", stop);
  };
  signal?.addEventListener("abort", stop, { once: true });
  return stop;
}
