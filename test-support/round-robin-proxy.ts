import { once } from "node:events";
import { createServer, request } from "node:http";

/** A load balancer in front of gateway replicas: each request to the next target in turn. */
export interface RoundRobinProxy {
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  /** The target each request went to, in order, and the status it answered (502: refused). */
  readonly routed: { target: string; status: number }[];
  close(): Promise<void>;
}

/**
 * Starts an HTTP proxy on a free loopback port that passes each request, as it came, to the
 * next of `targets` (`host:port`) in turn; a target that does not answer gets the request
 * answered 502, as a load balancer in front of a dead replica does (Telegram then retries it).
 */
export async function startRoundRobinProxy(targets: readonly string[]): Promise<RoundRobinProxy> {
  let next = 0;
  const routed: { target: string; status: number }[] = [];
  const server = createServer((incoming, answer) => {
    const target = targets[next++ % targets.length] ?? "";
    const [host, port] = target.split(":");
    const outgoing = request(
      {
        host,
        port: Number(port),
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (response) => {
        routed.push({ target, status: response.statusCode ?? 0 });
        answer.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(answer);
      },
    );
    outgoing.on("error", () => {
      routed.push({ target, status: 502 });
      if (!answer.headersSent) answer.writeHead(502);
      answer.end();
    });
    incoming.pipe(outgoing);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no proxy port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    routed,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
