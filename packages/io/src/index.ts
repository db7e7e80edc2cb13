// @mediagate/io: the I/O primitives every package shares (bounded waits, retry backoff,
// reused buffers, the grammar of listen addresses and host names) and the base of every error
// class (its stable `code`). Each is written once here; the packages call it instead of a copy.
export type { Backoff, RetryAfter } from "./backoff.js";
export { BackoffDefaults, backoffMs } from "./backoff.js";
export type { Clock } from "./clock.js";
export { systemClock } from "./clock.js";
export type { CombinedSignal } from "./combined-signal.js";
export { combinedSignal, stopController } from "./combined-signal.js";
export type { DeadlineOptions } from "./deadline.js";
export { DeadlineError, deadline, settledWithin, untilAborted } from "./deadline.js";
export { isHostName, isWildcardHost, normalHostName, parseHostName } from "./host-name.js";
export {
  formatListenAddress,
  isLoopbackHost,
  type ListenAddress,
  ListenAddressError,
  parseListenAddress,
} from "./listen-address.js";
export type { ErrorCode } from "./mediagate-error.js";
export { errorCodeOf, isErrorCode, MediagateError } from "./mediagate-error.js";
export type { RefusalPeriod, RefusalTallyOptions } from "./refusal-tally.js";
export { RefusalTally } from "./refusal-tally.js";
export type { RetryFailure, RetryLoopOptions } from "./retry.js";
export { RetryLoopDefaults, retry } from "./retry.js";
export type { BufferRingOptions, ChunkSource, ReadChunksOptions } from "./reused-buffers.js";
export { BufferRing, ByteRing, readChunks } from "./reused-buffers.js";
export type { Schedule } from "./schedule.js";
export { scheduleWithTimer } from "./schedule.js";
export type { Sleep } from "./sleep.js";
export { sleep } from "./sleep.js";
export { UnshownCharClass, unshownChars } from "./unshown-chars.js";
