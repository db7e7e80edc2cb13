import { once } from "node:events";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { testEngineAddress } from "./engine.js";

/** An HTTP proxy in front of the test run's Docker engine that counts what reached it. */
export interface CountingEngineProxy {
  /** `tcp://127.0.0.1:port`, for `connectDocker({ host })`. */
  readonly host: string;
  /** How many requests with this path (without the API version prefix or query) were forwarded. */
  count(path: string): number;
  close(): Promise<void>;
}

/**
 * Starts a loopback proxy that forwards every request to the real engine unchanged and counts
 * them by path (`/_ping`, `/containers/json`), so a test can see how often the code under test
 * asked the engine.
 */
export async function startCountingEngineProxy(): Promise<CountingEngineProxy> {
  const counts = new Map<string, number>();
  const engine = testEngineAddress();
  const server = createServer((incoming, outgoing) => {
    const path = (incoming.url ?? "/").split("?")[0]?.replace(/^\/v\d+\.\d+/, "") ?? "/";
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const upstream = request(
      { ...engine, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on("error", () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    host: `tcp://127.0.0.1:${port}`,
    count: (path) => counts.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
