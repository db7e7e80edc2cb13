import { BlockList, isIP, isIPv6 } from "node:net";
import { isHostName } from "./host-name.js";
import { MediagateError } from "./mediagate-error.js";

/** A `host:port` a server listens on, split. */
export interface ListenAddress {
  /** A host name, an IPv4 address, or an IPv6 address without its brackets. */
  readonly host: string;
  /** 0 to 65535; 0 asks the system for a free port. */
  readonly port: number;
}

/**
 * A listen address that is not `host:port`. `expected` says what was wanted, in the words of
 * a configuration error ("a port from 0 to 65535 after the last `:`"); the message adds the
 * value.
 */
export class ListenAddressError extends MediagateError {
  override readonly name = "ListenAddressError";
  readonly code = "MG_CONFIG_LISTEN_ADDRESS";
  constructor(
    readonly value: string,
    readonly expected: string,
  ) {
    super(`${JSON.stringify(value)} is not a listen address: expected ${expected}`);
  }
}

const Example = '"127.0.0.1:8787" or "[::1]:8787"';

/**
 * Splits `host:port`: `127.0.0.1:8787`, `localhost:0`, `[::1]:8787` (an IPv6 address in
 * brackets, which the returned host drops). The port is 0 to 65535; the host is a DNS name
 * or an IP address.
 * @throws ListenAddressError saying what is wrong: no port, a port out of range, no host, an
 * IPv6 address without brackets, or a host that is neither a name nor an address.
 */
export function parseListenAddress(value: string): ListenAddress {
  const { host, portPart } = value.startsWith("[") ? splitBracketed(value) : splitPlain(value);
  if (!/^\d{1,5}$/.test(portPart) || Number(portPart) > 65535) {
    throw new ListenAddressError(value, 'a port from 0 to 65535 after the last ":"');
  }
  return { host, port: Number(portPart) };
}

/** `[v6]:port`. */
function splitBracketed(value: string): { host: string; portPart: string } {
  const close = value.indexOf("]");
  if (close < 0 || value[close + 1] !== ":") {
    throw new ListenAddressError(value, '":port" after the bracketed address, e.g. "[::1]:8787"');
  }
  const host = value.slice(1, close);
  if (!isIPv6(host)) {
    throw new ListenAddressError(value, 'an IPv6 address inside the brackets, e.g. "[::1]:8787"');
  }
  return { host, portPart: value.slice(close + 2) };
}

/** `name:port` or `v4:port`. */
function splitPlain(value: string): { host: string; portPart: string } {
  const colon = value.lastIndexOf(":");
  if (colon < 0) throw new ListenAddressError(value, `a "host:port", e.g. ${Example}`);
  const host = value.slice(0, colon);
  if (host === "") throw new ListenAddressError(value, `a host before the ":", e.g. ${Example}`);
  if (host.includes(":")) {
    throw new ListenAddressError(value, 'an IPv6 address in brackets, e.g. "[::1]:8787"');
  }
  if (!isHostName(host)) {
    throw new ListenAddressError(value, 'a host name or an IP address before the ":"');
  }
  return { host, portPart: value.slice(colon + 1) };
}

/** `host:port` again, the IPv6 host in brackets: the inverse of {@link parseListenAddress}. */
export function formatListenAddress(address: ListenAddress): string {
  return isIPv6(address.host)
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
}

const Loopback = new BlockList();
Loopback.addSubnet("127.0.0.0", 8, "ipv4");
Loopback.addAddress("::1", "ipv6");

/**
 * Whether `host` (as {@link parseListenAddress} returns it) is a loopback address: `localhost`,
 * `127.0.0.0/8`, `::1` however it is written, and IPv4-mapped `::ffff:127.x.x.x`.
 */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  const family = isIP(host);
  if (family === 0) return false;
  return Loopback.check(host, family === 4 ? "ipv4" : "ipv6");
}
