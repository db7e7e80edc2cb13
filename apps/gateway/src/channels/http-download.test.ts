import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { waitUntil } from "../../../../test-support/wait.js";
import {
  DownloadError,
  DownloadHosts,
  type DownloadOptions,
  httpDownload,
} from "./http-download.js";

/** A self-signed certificate for `localhost` and 127.0.0.1 (100 years), made for this test. */
const Fixtures = new URL("../../test/fixtures/", import.meta.url);
const Cert = readFileSync(new URL("tls-localhost.crt", Fixtures));
const Key = readFileSync(new URL("tls-localhost.key", Fixtures));

const servers: (Server | NetServer)[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    if ("closeAllConnections" in server) server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listening<S extends Server | NetServer>(server: S): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return `127.0.0.1:${address.port}`;
}

/** An HTTP server answering with `handler`: its `http://127.0.0.1:<port>` root. */
async function http(handler: RequestListener): Promise<string> {
  return `http://${await listening(createHttpServer(handler))}`;
}

/** A TCP server that writes `answer`'s pieces, one write each, once a request arrived. */
async function raw(answer: (socket: Socket) => void): Promise<string> {
  const server = createNetServer((socket) => {
    socket.once("data", () => answer(socket));
    socket.on("error", () => undefined);
  });
  return `http://${await listening(server)}`;
}

/**
 * A server that promises a 1,000,000-byte body, sends 1000 bytes of it and holds the
 * connection: its root, and whether it has seen the connection close.
 */
async function promisedMegabyte(): Promise<{ root: string; closed: () => boolean }> {
  let closed = false;
  const root = await raw((socket) => {
    socket.on("close", () => {
      closed = true;
    });
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
    socket.write(randomBytes(1000));
  });
  return { root, closed: () => closed };
}

/** Downloads `url`, its own origin the one file host (a root: any address). */
const get = (url: URL, overrides: Partial<DownloadOptions> = {}) =>
  httpDownload(url, {
    signal: new AbortController().signal,
    headersTimeoutMs: 10_000,
    hosts: new DownloadHosts({ platform: "Test", roots: [url.origin] }),
    ...overrides,
  });

/** The body's bytes, copied chunk by chunk (a chunk is valid only until the next). */
async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** What a failed download rejected with. */
async function failure(run: () => Promise<unknown>): Promise<DownloadError> {
  const error = await run().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DownloadError);
  return error as DownloadError;
}

describe("httpDownload", () => {
  it("hands a body over byte for byte as views of one reused buffer", async () => {
    const bytes = randomBytes(6 * 1024 * 1024);
    const root = await http((_req, res) => {
      res.writeHead(200, { "content-length": String(bytes.length) });
      res.end(bytes);
    });
    const response = await get(new URL(`${root}/f`));
    expect(response.status).toBe(200);
    expect(response.length).toBe(bytes.length);
    const memory = new Set<ArrayBufferLike>();
    const hash = createHash("sha256");
    let chunks = 0;
    for await (const chunk of response.body) {
      memory.add(chunk.buffer);
      hash.update(chunk);
      chunks++;
      await new Promise(setImmediate); // the inbox's write: the socket reads on meanwhile
    }
    expect(hash.digest("hex")).toBe(sha(bytes));
    expect(chunks).toBeGreaterThan(10);
    expect(memory.size).toBe(1); // fetch and node:http give every chunk memory of its own
  });

  it("reads the same bytes over TLS, the socket pausing while the reader holds a chunk", async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    const server = createHttpsServer({ cert: Cert, key: Key }, (_req, res) => {
      res.writeHead(200, { "content-length": String(bytes.length) });
      res.end(bytes);
    });
    const root = `https://${(await listening(server)).replace("127.0.0.1", "localhost")}`;
    const response = await get(new URL(`${root}/f`), { ca: Cert });
    const hash = createHash("sha256");
    for await (const chunk of response.body) {
      hash.update(chunk);
      for (let i = 0; i < 3; i++) await new Promise(setImmediate);
    }
    expect(hash.digest("hex")).toBe(sha(bytes));
  });

  it("refuses a certificate Node does not trust", async () => {
    const server = createHttpsServer({ cert: Cert, key: Key }, (_req, res) => res.end("x"));
    const root = `https://${await listening(server)}`;
    const error = await failure(() => get(new URL(`${root}/f`)));
    expect(error.failure).toBe("unreachable");
  });

  it("reads a chunked body with extensions and trailers, split at every byte of the head", async () => {
    const root = await raw((socket) => {
      const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nX-A: 2\r\n\r\n";
      for (const byte of head) socket.write(byte);
      socket.write("5;name=value\r\nhello\r\n");
      socket.write("7\r\n, world");
      socket.write("\r\n0\r\nX-Trailer: yes\r\n\r\n");
      socket.write("garbage after the end");
    });
    const response = await get(new URL(`${root}/f`));
    expect(response.headers.get("x-a")).toBe("1, 2");
    expect(response.length).toBeUndefined();
    expect((await readAll(response.body)).toString()).toBe("hello, world");
  });

  it("reads answers that drip in one byte per write, chunked or with a length", async () => {
    const answers = [
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde",
    ];
    for (const answer of answers) {
      const root = await raw(async (socket) => {
        socket.setNoDelay(true);
        for (const byte of answer) {
          await new Promise((resolve) => socket.write(byte, resolve));
        }
      });
      const response = await get(new URL(`${root}/f`));
      expect((await readAll(response.body)).toString()).toBe("abcde");
    }
  });

  it("reads a body without a length until the connection closes, skipping interim answers", async () => {
    const root = await raw((socket) => {
      socket.write("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n");
      socket.end("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it");
    });
    const response = await get(new URL(`${root}/f`));
    expect(response.status).toBe(200);
    expect((await readAll(response.body)).toString()).toBe("all of it");
  });

  it("sends a plain GET for the path and query, with no credentials", async () => {
    let seen: Record<string, string | undefined> = {};
    const root = await http((req, res) => {
      seen = {
        url: req.url,
        host: req.headers.host,
        auth: req.headers.authorization,
        encoding: req.headers["accept-encoding"],
      };
      res.end("ok");
    });
    const url = new URL(`${root}/a%20b/c?x=1&y=%2F`);
    url.username = "user";
    url.password = "secret";
    await readAll((await get(url)).body);
    expect(seen).toEqual({
      url: "/a%20b/c?x=1&y=%2F",
      host: url.host,
      auth: undefined,
      encoding: "identity",
    });
  });

  it("follows redirects, up to the limit, to web addresses only", async () => {
    const root = await http((req, res) => {
      const hops = Number(/^\/hop\/(\d+)$/.exec(req.url ?? "")?.[1] ?? Number.NaN);
      if (hops > 0) res.writeHead(302, { location: `/hop/${hops - 1}` }).end();
      else if (hops === 0) res.end("arrived");
      else res.writeHead(301, { location: "file:///etc/passwd" }).end();
    });
    const followed = await get(new URL(`${root}/hop/3`), { maxRedirects: 3 });
    expect((await readAll(followed.body)).toString()).toBe("arrived");
    const tooMany = await failure(() => get(new URL(`${root}/hop/4`), { maxRedirects: 3 }));
    expect(tooMany.failure).toBe("redirects");
    const local = await failure(() => get(new URL(`${root}/elsewhere`)));
    expect(local.failure).toBe("redirects");
  });

  it("answers any status; the body of a 404 is there to read", async () => {
    const root = await http((_req, res) => res.writeHead(404).end("gone"));
    const response = await get(new URL(`${root}/f`));
    expect(response.status).toBe(404);
    expect((await readAll(response.body)).toString()).toBe("gone");
  });

  it("fails a body cut short, a stalled body and a head that never comes", async () => {
    const cutRoot = await raw((socket) => {
      socket.end("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
    });
    const cut = await get(new URL(`${cutRoot}/f`));
    const broken = await failure(() => readAll(cut.body));
    expect(broken.failure).toBe("broken");

    const heldRoot = await raw((socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome");
    });
    const held = await get(new URL(`${heldRoot}/f`), { stallTimeoutMs: 50 });
    const stalled = await failure(() => readAll(held.body));
    expect([stalled.failure, stalled.message]).toEqual(["stalled", "nothing arrived for 50 ms"]);

    const silentRoot = await raw(() => undefined);
    const silent = await failure(() => get(new URL(`${silentRoot}/f`), { headersTimeoutMs: 50 }));
    expect(silent.failure).toBe("timeout");
  });

  it("stops at once when the signal aborts, closing the connection", async () => {
    const { root, closed } = await promisedMegabyte();
    const stop = new AbortController();
    const response = await get(new URL(`${root}/f`), { signal: stop.signal });
    const error = await failure(async () => {
      for await (const _ of response.body) stop.abort();
    });
    expect(error.failure).toBe("aborted");
    await waitUntil(() => closed(), "the server saw the connection close");
  });

  it("closes the connection when the reader gives up early", async () => {
    const { root, closed } = await promisedMegabyte();
    const response = await get(new URL(`${root}/f`));
    for await (const _ of response.body) break;
    await waitUntil(() => closed(), "the server saw the connection close");
  });

  it("names the system error of a refused connection, and no address", async () => {
    const url = new URL(`http://127.0.0.1:${await closedPort()}/secret-path`);
    const error = await failure(() => get(url));
    expect([error.failure, error.systemCode]).toEqual(["unreachable", "ECONNREFUSED"]);
    expect(error.message).not.toContain("127.0.0.1");
    expect(error.message).not.toContain("secret-path");
  });

  it("refuses answers it cannot read: not HTTP, a head too large, a bad chunk, compressed", async () => {
    const answers = [
      "SSH-2.0-OpenSSH\r\n\r\n",
      `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`,
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc",
    ];
    const reasons: string[] = [];
    for (const answer of answers) {
      const root = await raw((socket) => socket.end(answer));
      const error = await failure(async () => readAll((await get(new URL(`${root}/f`))).body));
      expect(error.failure).toBe("protocol");
      reasons.push(error.message);
    }
    expect(reasons).toEqual([
      "not an HTTP/1.1 answer",
      "a head too large",
      "a bad chunk size",
      "a compressed body (gzip)",
      "a bad content-length",
    ]);
  });
});
