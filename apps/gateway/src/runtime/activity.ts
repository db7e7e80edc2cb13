import type { ChannelAdapter, ChatTarget } from "../channels/types.js";
import { Defaults } from "../defaults.js";

/** Defaults of {@link startActivity}. */
export const ActivityDefaults = {
  ...Defaults.activity,
  stillWorkingAfterMs: Defaults.stillWorkingAfterSeconds * 1000,
} as const;

/** Options of {@link startActivity}. */
export interface ActivityOptions {
  readonly intervalMs?: number | undefined;
  readonly stillWorkingAfterMs?: number | undefined;
  readonly stillWorkingText?: string | undefined;
  /**
   * Whether the one-time "still working" message is sent (default true); off when the turn
   * has a live status message instead (runtime/progress.ts).
   */
  readonly stillWorking?: boolean | undefined;
  /** Reports a failed "still working" send (best effort). */
  readonly onError?: (error: unknown) => void;
  /** The turn's signal: once aborted, nothing more is sent and requests in flight give up. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Shows that a turn is running: a typing indicator now and every `intervalMs`, and once,
 * after `stillWorkingAfterMs`, a "still working…" message (unless `stillWorking` is false: the
 * turn's live status message replaces it). Returns the function that stops both.
 */
export function startActivity(
  channel: ChannelAdapter,
  target: ChatTarget,
  options: ActivityOptions = {},
): () => void {
  const intervalMs = options.intervalMs ?? ActivityDefaults.intervalMs;
  const afterMs = options.stillWorkingAfterMs ?? ActivityDefaults.stillWorkingAfterMs;
  const text = options.stillWorkingText ?? ActivityDefaults.stillWorkingText;
  const { signal } = options;
  const typing = () => {
    if (signal?.aborted) return;
    channel.showActivity(target, signal).catch(() => {});
  };
  typing();
  const interval = setInterval(typing, intervalMs);
  const stillWorking = setTimeout(() => {
    if (signal?.aborted || options.stillWorking === false) return;
    channel.sendText(target, text, signal).catch((error: unknown) => {
      if (!signal?.aborted) options.onError?.(error);
    });
  }, afterMs);
  interval.unref?.();
  stillWorking.unref?.();
  const stop = () => {
    clearInterval(interval);
    clearTimeout(stillWorking);
    signal?.removeEventListener("abort", stop);
  };
  signal?.addEventListener("abort", stop, { once: true });
  return stop;
}
