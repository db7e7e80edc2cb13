import type { LookupAddress } from "node:dns";
import type { RequestListener } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { LocalServers } from "../../test/local-servers.js";
import { DownloadError } from "./download-error.js";
import { DownloadHosts, type DownloadHostsOptions, type ResolveHost } from "./download-hosts.js";
import { httpDownload } from "./http-download.js";

const servers = new LocalServers();
afterEach(() => servers.closeAll());

/** A server on 127.0.0.1 answering with `handler`: its port and the paths it was asked for. */
async function serve(handler: RequestListener): Promise<{ port: number; asked: string[] }> {
  const asked: string[] = [];
  const root = await servers.serve((req, res) => {
    asked.push(req.url ?? "");
    handler(req, res);
  });
  return { port: Number(new URL(root).port), asked };
}

/** A resolver answering `table` (name → addresses), and the names it was asked. */
function resolver(table: Record<string, string[]>): { resolve: ResolveHost; asked: string[] } {
  const asked: string[] = [];
  const resolve: ResolveHost = async (hostname) => {
    asked.push(hostname);
    return (table[hostname] ?? []).map((address) => ({
      address,
      family: address.includes(":") ? 6 : 4,
    }));
  };
  return { resolve, asked };
}

/** The download's body as text, or the refusal it failed with. */
async function outcome(url: string, hosts: DownloadHostsOptions): Promise<string> {
  try {
    const response = await httpDownload(new URL(url), {
      signal: new AbortController().signal,
      headersTimeoutMs: 5_000,
      hosts: new DownloadHosts(hosts),
    });
    let text = "";
    for await (const chunk of response.body) text += Buffer.from(chunk).toString();
    return text;
  } catch (error) {
    if (!(error instanceof DownloadError)) throw error;
    return `${error.failure}: ${error.message}`;
  }
}

/** What the lookup `hosts` admits `url` with hands the socket (`all: true`, as Node asks). */
async function handed(hosts: DownloadHosts, url: string): Promise<LookupAddress[] | Error> {
  const target = new URL(url);
  return new Promise((resolve) => {
    hosts.admit(target, false)(target.hostname, { all: true }, (error, addresses) => {
      resolve(error ?? (addresses as LookupAddress[]));
    });
  });
}

describe("downloads go only to the platform's file hosts", () => {
  it("downloads from the configured root's origin, at its loopback address", async () => {
    const root = await serve((_req, res) => res.end("from the root"));
    const roots = [`http://127.0.0.1:${root.port}/api`];
    expect(await outcome(`http://127.0.0.1:${root.port}/file/x`, { platform: "Test", roots })).toBe(
      "from the root",
    );
    expect(root.asked).toEqual(["/file/x"]);
  });

  it("refuses another port, another name for the same server and a private address, unsent", async () => {
    const root = await serve((_req, res) => res.end("root"));
    const other = await serve((_req, res) => res.end("other"));
    const { resolve, asked } = resolver({ localhost: ["127.0.0.1"] });
    const hosts = { platform: "Test", roots: [`http://127.0.0.1:${root.port}`], resolve };
    const refused = "refused: the address is not one of Test's file hosts";
    for (const url of [
      `http://127.0.0.1:${other.port}/f`,
      `http://localhost:${root.port}/f`,
      `https://127.0.0.1:${root.port}/f`,
      "http://10.0.0.7/f",
      "http://169.254.169.254/latest/meta-data/",
      "http://[fd00::1]/f",
    ]) {
      expect(await outcome(url, hosts)).toBe(refused);
    }
    expect([root.asked, other.asked, asked]).toEqual([[], [], []]);
  });

  it("follows a redirect within the root's origin, and refuses one away from it, unsent", async () => {
    const other = await serve((_req, res) => res.end("stolen"));
    const root = await serve((req, res) => {
      const to = new URL(req.url ?? "/", "http://x").searchParams.get("to");
      if (to === null) res.end("arrived");
      else res.writeHead(302, { location: to }).end();
    });
    const hosts = { platform: "Test", roots: [`http://127.0.0.1:${root.port}`] };
    const via = (to: string) => `http://127.0.0.1:${root.port}/r?to=${encodeURIComponent(to)}`;
    expect(await outcome(via("/final"), hosts)).toBe("arrived");
    const away = "refused: a redirect led away from Test's file hosts";
    for (const to of [
      `http://127.0.0.1:${other.port}/x`,
      `http://localhost:${root.port}/final`,
      "http://10.1.2.3/x",
      "http://192.168.0.1:8080/x",
      "http://[::1]/x",
    ]) {
      expect(await outcome(via(to), hosts)).toBe(away);
    }
    expect(other.asked).toEqual([]);
    expect(root.asked.filter((path) => path === "/final")).toHaveLength(1);
  });

  it("refuses a file host that resolves to a non-public address, unless it is a root (DNS rebinding)", async () => {
    const server = await serve((_req, res) => res.end("served"));
    const { resolve, asked } = resolver({
      "files.test": ["127.0.0.1"],
      "cdn.test": ["127.0.0.1"],
      "mapped.test": ["::ffff:127.0.0.1"],
    });
    const hosts = {
      platform: "Test",
      roots: [`http://files.test:${server.port}`],
      fileHosts: [`http://cdn.test:${server.port}`, `http://mapped.test:${server.port}`],
      resolve,
    };
    expect(await outcome(`http://files.test:${server.port}/a`, hosts)).toBe("served");
    const notPublic = "refused: Test's file host is not on a public address";
    expect(await outcome(`http://cdn.test:${server.port}/b`, hosts)).toBe(notPublic);
    expect(await outcome(`http://mapped.test:${server.port}/c`, hosts)).toBe(notPublic);
    expect(server.asked).toEqual(["/a"]);
    expect(asked).toEqual(["files.test", "cdn.test", "mapped.test"]);
  });

  it("hands the connection only the public addresses a file host resolves to", async () => {
    const { resolve } = resolver({
      "mixed.test": ["127.0.0.1", "93.184.216.34", "10.0.0.1", "2606:2800:220:1::1", "fe80::1"],
    });
    const hosts = new DownloadHosts({
      platform: "Test",
      roots: [],
      fileHosts: ["https://mixed.test", "https://10.0.0.1"],
      resolve,
    });
    expect(await handed(hosts, "https://mixed.test/f")).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ]);
    // An address literal is connected to without a lookup: it is checked when admitted.
    expect(() => hosts.admit(new URL("https://10.0.0.1/f"), false)).toThrow(
      "Test's file host is not on a public address",
    );
  });
});
