import { MediagateError } from "@mediagate/io";
/**
 * The abort reason of turns the gateway's own stop cuts off at the drain deadline, as opposed
 * to `/stop` or `/reset`: such a turn stays in the journal as started, and the next start
 * tells its chat it was interrupted (docs/durability.md).
 */
export class GatewayStoppingError extends MediagateError {
  override readonly name = "GatewayStoppingError";
  readonly code = "MG_GATEWAY_STOPPING";
  constructor() {
    super("the gateway is stopping");
  }
}

/**
 * Whether `signal` was aborted by the gateway's stop, or because this replica lost the
 * session's lease (`MG_SESSION_LEASE_LOST`, docs/cluster.md), not by /stop or /reset: either
 * way the turn's messages are kept for whoever runs the session next.
 */
export function abortedByStop(signal: AbortSignal | undefined): boolean {
  if (signal?.aborted !== true) return false;
  const reason: unknown = signal.reason;
  return (
    reason instanceof GatewayStoppingError ||
    (reason instanceof MediagateError && reason.code === "MG_SESSION_LEASE_LOST")
  );
}
