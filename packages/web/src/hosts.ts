/**
 * Which `Host` names the console answers (DNS rebinding, docs/web-console.md): a page on a
 * name the attacker controls that resolves to the console's address sends that name; the
 * console answers only names it was told are its own. What a host name is, and which listen
 * host is the any-address, is @mediagate/io's grammar (the config's checks use it too).
 */
import { isWildcardHost, MediagateError, normalHostName, parseHostName } from "@mediagate/io";

/** The loopback names, answered on every listen address (no other site can send them). */
export const LoopbackHostNames = ["127.0.0.1", "localhost", "[::1]"] as const;

/** `web.listen` answers on every address of the host and names none, or `web.allowedHosts` is wrong. */
export class WebHostsError extends MediagateError {
  override readonly name = "WebHostsError";
  readonly code = "MG_WEB_HOSTS_INVALID";
  constructor(
    /** The `host:port` the console was to listen on. */
    readonly listen: string,
    message: string,
  ) {
    super(message);
  }
}

/** The name of a `Host` header (`name:port`, `[v6]:port`, `name`), lower case, without port. */
export function hostNameOf(header: string): string {
  const lower = header.trim().toLowerCase();
  if (lower.startsWith("[")) return lower.slice(0, lower.indexOf("]") + 1);
  const colon = lower.indexOf(":");
  return colon === -1 ? lower : lower.slice(0, colon);
}

/**
 * Whether a console listening on `host` needs `allowedHosts` to know its names: a wildcard
 * address answers on every address of the host and names none of them.
 */
export function needsAllowedHosts(
  host: string,
  allowedHosts: readonly string[] | undefined,
): boolean {
  return allowedHosts === undefined && isWildcardHost(host);
}

function missingAllowedHosts(listen: string): string {
  return `web.listen "${listen}" answers on every address of this host, so the console cannot tell its own names from a stranger's: list the host names browsers use to reach it in web.allowedHosts, e.g. allowedHosts: ["gateway.example.org", "192.168.1.20"] ([] answers the loopback names only, e.g. behind a port published on the host's 127.0.0.1)`;
}

/**
 * The `Host` names a console listening on `host` answers: the loopback names, `host` itself
 * unless it is a wildcard, and each of `allowedHosts`. Ports are not compared: a rebinding page
 * sends its own name, whatever port it uses.
 * @throws WebHostsError for a wildcard `host` without `allowedHosts`, or an entry that is not a
 *   host name.
 */
export function answeredHostNames(
  listen: string,
  host: string,
  allowedHosts: readonly string[] | undefined,
): ReadonlySet<string> {
  if (needsAllowedHosts(host, allowedHosts)) {
    throw new WebHostsError(listen, missingAllowedHosts(listen));
  }
  const names = new Set<string>(LoopbackHostNames);
  if (!isWildcardHost(host)) names.add(normalHostName(host));
  for (const name of allowedHosts ?? []) {
    const parsed = parseHostName(name);
    if (parsed === undefined) {
      throw new WebHostsError(
        listen,
        `web.allowedHosts: ${JSON.stringify(name)} is not a host name; write a name, an IPv4 address or [IPv6] without port, e.g. "gateway.example.org"`,
      );
    }
    names.add(parsed);
  }
  return names;
}
