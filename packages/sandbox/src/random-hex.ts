import { randomFillSync } from "node:crypto";

/**
 * Random bytes for the sandbox's markers and names, taken from a buffer refilled 4 KiB at a
 * time. A warm command takes two (its end marker and its id), and a `randomBytes` call for
 * each cost 2.4–3 µs in a loop and about 9 µs in a warm call's profile (bench/README.md,
 * "Sandbox"); a slice of the pool a tenth of that. The bytes are the same CSPRNG's, and each
 * is handed out once.
 */
const pool = Buffer.allocUnsafe(4096);
let next = pool.length;

/** `bytes` random bytes (at most 4,096) as lowercase hex. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > pool.length) {
    throw new RangeError(`randomHex: ${bytes} bytes, expected 1 to ${pool.length}`);
  }
  if (next + bytes > pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const hex = pool.toString("hex", next, next + bytes);
  next += bytes;
  return hex;
}
