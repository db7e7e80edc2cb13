import { lookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { DownloadError } from "./download-error.js";

/** One address a host name resolves to. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** Resolves a host name to all of its addresses (default: `dns.lookup` with `all: true`). */
export type ResolveHost = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** What {@link DownloadHosts} is built from. */
export interface DownloadHostsOptions {
  /** Named in refusals (`Discord`, `Telegram`); a refusal names no host or address. */
  readonly platform: string;
  /**
   * The configured API roots. Their origins are file hosts at whatever address they have,
   * loopback and private ones included: a local Bot API server or a test fake is one.
   */
  readonly roots: readonly string[];
  /** Further origins files come from (Discord's CDN): reached on public addresses only. */
  readonly fileHosts?: readonly string[] | undefined;
  /** How host names are resolved; tests map a name to an address of theirs. */
  readonly resolve?: ResolveHost | undefined;
}

const resolveWithDns: ResolveHost = (hostname) => lookup(hostname, { all: true });

/**
 * The hosts a platform's files may be downloaded from (docs/security.md, "Downloads go only
 * to the platform's file hosts"). An origin (scheme, host, port: `URL#origin`) is admitted when
 * it is exactly one of the configured API roots' or of the platform's own file hosts'; any
 * other is refused, before a connection, and so is a redirect to one.
 *
 * A root's origin may be on any address. Any other origin must be on public unicast addresses
 * only: the connection is made through a lookup that resolves the name, drops every address
 * that is not public (loopback, private, link-local, unique-local, carrier-grade NAT, reserved,
 * multicast, an IPv4-mapped one of these) and connects only to what is left, so a name that
 * resolves to the gateway's own network (DNS rebinding) is refused at the connect, and the
 * address connected to is the address checked.
 */
export class DownloadHosts {
  readonly #platform: string;
  readonly #roots: ReadonlySet<string>;
  readonly #fileHosts: ReadonlySet<string>;
  readonly #resolve: ResolveHost;

  constructor(options: DownloadHostsOptions) {
    this.#platform = options.platform;
    this.#roots = new Set(options.roots.map((root) => originOf(root)));
    this.#fileHosts = new Set((options.fileHosts ?? []).map((host) => originOf(host)));
    this.#resolve = options.resolve ?? resolveWithDns;
  }

  /**
   * Admits `url` (the first request's, or a redirect's when `redirected`) and answers the
   * lookup its connection must use.
   * @throws DownloadError (`refused`) when `url` is not on one of the platform's file hosts
   */
  admit(url: URL, redirected: boolean): LookupFunction {
    const origin = url.origin;
    if (this.#roots.has(origin)) return this.#lookup(() => true);
    if (!this.#fileHosts.has(origin)) {
      throw new DownloadError(
        "refused",
        redirected
          ? `a redirect led away from ${this.#platform}'s file hosts`
          : `the address is not one of ${this.#platform}'s file hosts`,
      );
    }
    // An address literal is connected to without a lookup.
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    if (isIP(host) !== 0 && !isPublic(host)) throw this.#notPublic();
    return this.#lookup(isPublic);
  }

  /** A lookup through `resolve` that hands the socket only the addresses `usable` keeps. */
  #lookup(usable: (address: string) => boolean): LookupFunction {
    return (hostname, options, callback) => {
      this.#resolve(hostname).then(
        (resolved) => {
          const family = options.family === 4 || options.family === 6 ? options.family : 0;
          const found = resolved.filter((entry) => family === 0 || entry.family === family);
          const addresses = found.filter((entry) => usable(entry.address));
          const first = addresses[0];
          if (found.length === 0) {
            callback(Object.assign(new Error("no address"), { code: "ENOTFOUND" }), "");
          } else if (first === undefined) {
            callback(this.#notPublic(), "");
          } else if (options.all === true) {
            callback(
              null,
              addresses.map((entry) => ({ address: entry.address, family: entry.family })),
            );
          } else {
            callback(null, first.address, first.family);
          }
        },
        (error: unknown) => callback(error as NodeJS.ErrnoException, ""),
      );
    };
  }

  #notPublic(): DownloadError {
    return new DownloadError("refused", `${this.#platform}'s file host is not on a public address`);
  }
}

/** The origin of a configured root or host, as `URL#origin` spells it. */
function originOf(address: string): string {
  const { origin } = new URL(address);
  // Not shown: an API root may carry a password.
  if (origin === "null") throw new TypeError("a file host must be an http(s) address");
  return origin;
}

/** Whether `address` is a public unicast address (an IPv4-mapped one as its IPv4). */
function isPublic(address: string): boolean {
  try {
    return ipaddr.process(address).range() === "unicast";
  } catch {
    return false;
  }
}
