import { isIPv4, isIPv6 } from "node:net";

/** A DNS name: dot-separated labels of letters, digits and inner hyphens, an optional final dot. */
const DnsName =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/**
 * Whether `host` is a DNS name or an IPv4 address (an IPv6 address is neither: it is written
 * apart, in brackets). Dotted digits that are no IPv4 address (`999.1.1.1`) are refused: they
 * would pass as a name, and are a typo.
 */
export function isHostName(host: string): boolean {
  return isIPv4(host) || (DnsName.test(host) && !/^[\d.]+$/.test(host));
}

/**
 * `host` as a `Host` header carries it: lower case, an IPv6 address in brackets (given with or
 * without them).
 */
export function normalHostName(host: string): string {
  const lower = host.trim().toLowerCase();
  return isIPv6(lower) ? `[${lower}]` : lower;
}

/**
 * Reads a host name without port, as a `Host` header names a server (`web.allowedHosts`): a
 * DNS name, an IPv4 address, or an IPv6 address in brackets. Answers its
 * {@link normalHostName}, or `undefined` when `value` is none of them (a port, a space, empty
 * labels `a..b`, `999.1.1.1`, an IPv4 address in brackets).
 */
export function parseHostName(value: string): string | undefined {
  if (value.startsWith("[") && value.endsWith("]")) {
    const inside = value.slice(1, -1);
    return isIPv6(inside) ? normalHostName(inside) : undefined;
  }
  return isHostName(value) ? normalHostName(value) : undefined;
}

/**
 * Whether `host` (as a listen address names it, brackets optional) is the any-address: an IPv4
 * or IPv6 address whose every digit is 0 (`0.0.0.0`, `::`, `0:0:0:0:0:0:0:0`).
 */
export function isWildcardHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIPv4(bare)) return /^0+(\.0+){3}$/.test(bare);
  return isIPv6(bare) && /^[0:]+$/.test(bare);
}
