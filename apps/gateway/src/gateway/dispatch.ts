import type { ChannelAdapter, InboundMessage } from "../channels/types.js";
import { lazyChild } from "../log.js";
import { handleMessage } from "../pipeline/pipeline.js";
import type { MessageContext, PipelineServices } from "../pipeline/types.js";
import { type GatewayCore, targetOf, track } from "./core.js";

/**
 * Runs the message through the pipeline; `recovered`: taken over from the journal (`handed`:
 * handed over by the replica that just received it, queued as just received: docs/cluster.md);
 * `merged`: the entries of the other messages it stands for (an album's items recorded one by
 * one), started, closed and answered with `entryId`. Resolves when the pipeline is done with it
 * (never rejects); `services` replaces the gateway's for this message (a scheduled run
 * watches how its journal entry ends).
 */
export function dispatch(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  entryId: number,
  recovered: boolean | "handed" = false,
  merged: readonly number[] = [],
  services: PipelineServices = gateway.services,
): Promise<void> {
  const runtime = gateway.runtimes.get(message.profile);
  if (runtime === undefined) {
    gateway.logger.warn({ profile: message.profile }, "message for an unknown profile; ignored");
    void gateway.journal.finished([entryId, ...merged], "refused").catch(() => {});
    return Promise.resolve();
  }
  const ctx: MessageContext = {
    message,
    channel,
    runtime,
    services,
    target: targetOf(message),
    entryId,
    ...(merged.length > 0 ? { mergedEntryIds: merged } : {}),
    recovered: recovered !== false,
    ...(recovered === "handed" ? { handed: true } : {}),
    log: lazyChild(gateway.logger, { profile: message.profile, platform: message.platform }),
  };
  // The pipeline's error boundary reports what its steps did not handle (by step name).
  const handled = handleMessage(ctx).then(() => channel.settled?.(message));
  track(gateway, handled);
  return handled.then(
    () => undefined,
    () => undefined,
  );
}
