import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isWildcardHost, normalHostName, parseHostName } from "./host-name.js";
import { parseListenAddress } from "./listen-address.js";

describe("parseHostName", () => {
  it("reads names, IPv4 addresses and bracketed IPv6 addresses, in their Host-header form", () => {
    expect(parseHostName("gateway.example.org")).toBe("gateway.example.org");
    expect(parseHostName("Gate.Example")).toBe("gate.example");
    expect(parseHostName("192.168.1.20")).toBe("192.168.1.20");
    expect(parseHostName("[fd00::20]")).toBe("[fd00::20]");
    expect(parseHostName("[2001:DB8::7]")).toBe("[2001:db8::7]");
    expect(parseHostName("localhost")).toBe("localhost");
  });

  it("refuses what no Host header names a server by", () => {
    for (const value of [
      "",
      "x:1",
      "not a name",
      "a..b",
      ".a",
      "-gateway",
      "gateway-",
      "999.1.1.1",
      "1.2.3",
      "[1.2.3.4]",
      "[localhost]",
      "fd00::20",
      "[fd00::20",
      "[::1]:8787",
      "a_b.example",
      `${"a".repeat(64)}.example`,
    ]) {
      expect(parseHostName(value), value).toBeUndefined();
    }
  });

  it("takes every host a listen address takes, IPv6 in brackets", () => {
    const host = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.domain().filter((name) => !/^[\d.]+$/.test(name)),
    );
    fc.assert(
      fc.property(host, (h) => {
        const listened = parseListenAddress(`${h.includes(":") ? `[${h}]` : h}:80`).host;
        expect(parseHostName(normalHostName(listened))).toBe(normalHostName(listened));
      }),
    );
  });
});

describe("isWildcardHost", () => {
  it("knows the any-address however it is written, and nothing else", () => {
    for (const host of ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "::0"]) {
      expect(isWildcardHost(host), host).toBe(true);
    }
    for (const host of ["127.0.0.1", "::1", "[::1]", "0.0.0.1", "00", "0", "localhost", "0.0.0"]) {
      expect(isWildcardHost(host), host).toBe(false);
    }
  });
});
