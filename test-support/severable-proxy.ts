import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * A TCP proxy whose link can be cut and restored (a host cut off from its database), and whose
 * writes of one statement can be made slow.
 */
export interface SeverableProxy {
  /** The loopback port to connect to instead of the target's. */
  readonly port: number;
  /** Drops every connection at once and refuses new ones until {@link restore}. */
  sever(): void;
  /** Takes connections again. */
  restore(): void;
  /**
   * From now on, a client write that contains `text` (a PostgreSQL statement's SQL, which the
   * protocol sends as text) reaches the server `delayMs` later, and so does every write after it
   * on that connection (their order kept): one statement made slow, the others as they were.
   */
  delayWrites(text: string, delayMs: number): void;
  close(): Promise<void>;
}

/**
 * Starts a TCP proxy on a free loopback port to `host:port`. {@link SeverableProxy.sever}
 * destroys both ends of every connection, so the server sees its clients gone (their
 * sessions, advisory locks and transactions end) and the clients see their sockets fail.
 */
export async function startSeverableProxy(host: string, port: number): Promise<SeverableProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  let delay: { text: Buffer; ms: number } | undefined;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    track(upstream);
    // Each write waits for the one before it, so a delayed one holds back those after it.
    let previous: Promise<void> = Promise.resolve();
    client.on("data", (chunk: Buffer) => {
      const wait = delay !== undefined && chunk.includes(delay.text) ? delay.ms : 0;
      previous = previous.then(async () => {
        if (wait > 0) await sleep(wait);
        if (!upstream.destroyed) upstream.write(chunk);
      });
    });
    client.on("end", () => void previous.then(() => upstream.end()));
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  const sever = () => {
    cut = true;
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: address.port,
    sever,
    restore: () => {
      cut = false;
    },
    delayWrites: (text, ms) => {
      delay = { text: Buffer.from(text), ms };
    },
    close: async () => {
      sever();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A {@link startSeverableProxy} in front of the PostgreSQL server `databaseUrl` names, and the
 * same URL through it (its database, user and options kept).
 */
export async function proxiedDatabase(
  databaseUrl: string,
): Promise<{ proxy: SeverableProxy; url: string }> {
  const server = new URL(databaseUrl);
  const proxy = await startSeverableProxy(server.hostname, Number(server.port));
  const through = new URL(databaseUrl);
  through.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: through.href };
}
