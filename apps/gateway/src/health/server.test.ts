import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type HealthReport, type HealthServer, startHealthServer } from "./server.js";

const Report: HealthReport = {
  status: "ok",
  channels: [],
  journal: { writable: true },
  engine: { reachable: true },
  store: { kind: "postgres", where: "db.internal:5432/mediagate", reachable: true },
  queue: { running: 0, queued: 0 },
  outbox: { scheduled: 0 },
};

/** GET `path` with the `Host` header given (a browser sends the name it looked up). */
function get(url: string, path: string, host: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sent = request({ host: hostname, port, path, headers: { host } }, (answer) => {
      let body = "";
      answer.setEncoding("utf8");
      answer.on("data", (chunk: string) => {
        body += chunk;
      });
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, body }));
    });
    sent.on("error", reject);
    sent.end();
  });
}

describe("the health endpoint", () => {
  let server: HealthServer | undefined;

  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("answers loopback names and addresses, and refuses a name a rebinding page would send", async () => {
    server = await startHealthServer("127.0.0.1:0", async () => Report);
    const port = new URL(server.url).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, "127.0.0.1"]) {
      const answer = await get(server.url, "/health", host);
      expect([host, answer.status, JSON.parse(answer.body)]).toEqual([host, 200, Report]);
    }
    // A page on rebound.example whose name now resolves to 127.0.0.1 reads nothing.
    for (const host of [
      `rebound.example:${port}`,
      "rebound.example",
      "localhost.rebound.example",
    ]) {
      const answer = await get(server.url, "/health", host);
      expect([host, answer.status]).toEqual([host, 421]);
      expect(answer.body).not.toContain("db.internal");
      expect(answer.body).toMatch(/^unknown host: /);
    }
  });
});
