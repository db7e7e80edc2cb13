import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";

/** A TCP proxy whose link can be cut and restored: a host cut off from its database. */
export interface SeverableProxy {
  /** The loopback port to connect to instead of the target's. */
  readonly port: number;
  /** Drops every connection at once and refuses new ones until {@link restore}. */
  sever(): void;
  /** Takes connections again. */
  restore(): void;
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
    client.pipe(upstream);
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
    close: async () => {
      sever();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
