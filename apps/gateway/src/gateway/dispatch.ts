import type { ChannelAdapter, InboundMessage } from "../channels/types.js";
import { handleMessage } from "../pipeline/pipeline.js";
import type { MessageContext } from "../pipeline/types.js";
import { type GatewayCore, targetOf, track } from "./core.js";

/** Runs the message through the pipeline; `recovered`: taken over from the journal. */
export function dispatch(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  entryId: number,
  recovered = false,
): void {
  const runtime = gateway.runtimes.get(message.profile);
  if (runtime === undefined) {
    gateway.logger.warn({ profile: message.profile }, "message for an unknown profile; ignored");
    void gateway.journal.finished(entryId, "refused").catch(() => {});
    return;
  }
  const ctx: MessageContext = {
    message,
    channel,
    runtime,
    services: gateway.services,
    target: targetOf(message),
    entryId,
    recovered,
    log: gateway.logger.child({ profile: message.profile, platform: message.platform }),
  };
  // The pipeline's error boundary reports what its steps did not handle (by step name).
  track(
    gateway,
    handleMessage(ctx).then(() => channel.settled?.(message)),
  );
}
