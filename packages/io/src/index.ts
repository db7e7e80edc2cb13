// @mediagate/io: the I/O primitives every package shares (bounded waits, retry backoff,
// reused buffers). Each is written once here; the packages call it instead of a copy.
export {
  formatListenAddress,
  isLoopbackHost,
  type ListenAddress,
  ListenAddressError,
  parseListenAddress,
} from "./listen-address.js";
