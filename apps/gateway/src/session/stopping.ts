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

/** Whether `signal` was aborted by the gateway's stop (not by /stop or /reset). */
export function abortedByStop(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof GatewayStoppingError;
}
