import { once } from "node:events";
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Plain HTTP servers on 127.0.0.1 for one test file, the real client libraries' far side:
 * `serve` starts one and gives its root URL; `closeAll` (each test's end, or a test that
 * needs a port nobody answers on any more) ends them with their open connections.
 */
export class LocalServers {
  readonly #servers: Server[] = [];

  async serve(handler: RequestListener): Promise<string> {
    const server = createServer(handler);
    this.#servers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async closeAll(): Promise<void> {
    for (const server of this.#servers.splice(0)) {
      server.closeAllConnections();
      const closed = once(server, "close");
      server.close();
      await closed;
    }
  }
}
