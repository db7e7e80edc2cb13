import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatListenAddress,
  isLoopbackHost,
  ListenAddressError,
  parseListenAddress,
} from "./listen-address.js";

describe("parseListenAddress", () => {
  it("splits names, IPv4 and bracketed IPv6 addresses from their port", () => {
    expect(parseListenAddress("127.0.0.1:8787")).toEqual({ host: "127.0.0.1", port: 8787 });
    expect(parseListenAddress("localhost:0")).toEqual({ host: "localhost", port: 0 });
    expect(parseListenAddress("gateway.internal:65535")).toEqual({
      host: "gateway.internal",
      port: 65535,
    });
    expect(parseListenAddress("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    expect(parseListenAddress("[::]:9464")).toEqual({ host: "::", port: 9464 });
    expect(parseListenAddress("[2001:db8::7]:443")).toEqual({ host: "2001:db8::7", port: 443 });
  });

  it("says what is wrong with each address it refuses", () => {
    const cases: [string, RegExp][] = [
      ["8787", /a "host:port"/],
      [":8787", /a host before the ":"/],
      ["127.0.0.1:", /a port from 0 to 65535/],
      ["127.0.0.1:65536", /a port from 0 to 65535/],
      ["127.0.0.1:80a", /a port from 0 to 65535/],
      ["127.0.0.1:-1", /a port from 0 to 65535/],
      ["::1:8080", /an IPv6 address in brackets/],
      ["[::1]", /":port" after the bracketed address/],
      ["[::1]8080", /":port" after the bracketed address/],
      ["[localhost]:8080", /an IPv6 address inside the brackets/],
      ["[127.0.0.1]:8080", /an IPv6 address inside the brackets/],
      ["my host:80", /a host name or an IP address/],
      ["999.1.1.1:80", /a host name or an IP address/],
      ["-gateway:80", /a host name or an IP address/],
    ];
    for (const [value, expected] of cases) {
      const error = (() => {
        try {
          parseListenAddress(value);
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error, value).toBeInstanceOf(ListenAddressError);
      const refused = error as ListenAddressError;
      expect(refused.value).toBe(value);
      expect(refused.expected, value).toMatch(expected);
      expect(refused.message, value).toContain(JSON.stringify(value));
    }
  });

  it("reads back what formatListenAddress writes, for every port and address family", () => {
    const host = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.domain().filter((name) => !/^[\d.]+$/.test(name)),
    );
    fc.assert(
      fc.property(host, fc.integer({ min: 0, max: 65535 }), (h, port) => {
        expect(parseListenAddress(formatListenAddress({ host: h, port }))).toEqual({
          host: h,
          port,
        });
      }),
    );
  });
});

describe("isLoopbackHost", () => {
  it("knows loopback however it is written, and nothing else", () => {
    for (const host of [
      "127.0.0.1",
      "127.1.2.3",
      "127.255.255.254",
      "localhost",
      "LOCALHOST",
      "::1",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
    ])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ["0.0.0.0", "128.0.0.1", "192.168.1.2", "::", "::2", "example.org", "[::1]"])
      expect(isLoopbackHost(host), host).toBe(false);
  });
});
