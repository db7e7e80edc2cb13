import { createServer, type ServerResponse } from "node:http";

/** One request the fake daemon received. */
export interface SeenRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** True once the client cut the connection of a request that was never answered. */
  cutOff: boolean;
}

/**
 * A local HTTP server speaking just enough of the Engine API for the sandbox's lifecycle
 * calls, where chosen routes never answer (a wedged daemon). `/_ping` and `/version`
 * answer; `GET /containers/json` answers `[]`; every image is present (its inspect answers
 * 200, so nothing is pulled); container calls on unknown containers
 * answer 404; routes in `hang` (`"POST /containers/create"`, `"GET /containers/json"`)
 * keep the request open until the client gives up.
 */
export interface WedgedDaemon {
  readonly host: string;
  readonly requests: readonly SeenRequest[];
  close(): Promise<void>;
}

export async function startWedgedDaemon(hang: readonly string[]): Promise<WedgedDaemon> {
  const requests: SeenRequest[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://daemon");
    const seen: SeenRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      cutOff: false,
    };
    requests.push(seen);
    req.resume();
    if (hang.includes(`${seen.method} ${seen.path}`)) {
      open.add(res);
      res.on("close", () => {
        open.delete(res);
        if (!res.writableEnded) seen.cutOff = true;
      });
      return;
    }
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (seen.path === "/_ping") res.end("OK");
    else if (seen.path === "/version") json(200, { ApiVersion: "1.41", Version: "fake" });
    else if (seen.path === "/containers/json") json(200, []);
    else if (/^\/images\/.+\/json$/.test(seen.path)) json(200, { Id: "sha256:fake" });
    else json(404, { message: "No such container" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    host: `tcp://127.0.0.1:${address.port}`,
    requests,
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
