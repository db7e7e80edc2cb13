/**
 * What `signal` holds in collections under its own symbols (Node's are its listeners and, once
 * `AbortSignal.any` used it, its dependant signals), by symbol: the non-empty ones. A stop signal
 * a component keeps for its life must hold nothing for calls that have ended: on Node 20,
 * `AbortSignal.any([stop, …])` adds to it for every call and never takes away.
 */
export function heldBy(signal: AbortSignal): Record<string, number> {
  const record = signal as unknown as Record<symbol, { size?: unknown } | undefined>;
  const held: Record<string, number> = {};
  for (const key of Object.getOwnPropertySymbols(signal)) {
    const size = record[key]?.size;
    if (typeof size === "number" && size > 0) held[key.toString()] = size;
  }
  return held;
}
