/**
 * The abort reason of turns the gateway's own stop cuts off at the drain deadline, as opposed
 * to `/stop` or `/reset`: such a turn stays in the journal as started, and the next start
 * tells its chat it was interrupted (docs/durability.md).
 */
export class GatewayStoppingError extends Error {
  override readonly name = "GatewayStoppingError";
  constructor() {
    super("the gateway is stopping");
  }
}

/** Whether `signal` was aborted by the gateway's stop (not by /stop or /reset). */
export function abortedByStop(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof GatewayStoppingError;
}
