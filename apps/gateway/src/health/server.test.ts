import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { Redactor } from "../redact.js";
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

/** A secret of the config the reports below may carry. */
const ApiKey = "sk-live-health-5f2b9c";

/** `method` `path` with the `Host` header given (a browser sends the name it looked up). */
function get(
  url: string,
  path: string,
  host: string = new URL(url).host,
  method = "GET",
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sent = request({ host: hostname, port, path, method, headers: { host } }, (answer) => {
      let body = "";
      answer.setEncoding("utf8");
      answer.on("data", (chunk: string) => {
        body += chunk;
      });
      answer.on("end", () =>
        resolve({ status: answer.statusCode ?? 0, body, headers: answer.headers }),
      );
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
    server = await startHealthServer("127.0.0.1:0", async () => Report, new Redactor());
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

  it("keeps the config's secrets and secret-shaped values out of a failed report's 500", async () => {
    const failure = new Error(
      `listReplicas failed: key ${ApiKey} refused at https://bot123456:AAHsecret@api.example/x`,
    );
    server = await startHealthServer(
      "127.0.0.1:0",
      async () => {
        throw failure;
      },
      new Redactor([ApiKey]),
    );
    const answer = await get(server.url, "/health");
    expect(answer.status).toBe(500);
    expect(answer.body).toMatch(/^health report failed: listReplicas failed: key <redacted>/);
    expect(answer.body).not.toContain(ApiKey);
    expect(answer.body).not.toContain("AAHsecret");
  });

  it("keeps the config's secrets out of the report's own fields", async () => {
    const report: HealthReport = {
      ...Report,
      status: "degraded",
      engine: { reachable: false, detail: `engine refused key ${ApiKey}` },
    };
    server = await startHealthServer("127.0.0.1:0", async () => report, new Redactor([ApiKey]));
    const answer = await get(server.url, "/health");
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).engine).toEqual({
      reachable: false,
      detail: "engine refused key <redacted>",
    });
  });
  it("answers HEAD as GET without a body, and names the methods it takes", async () => {
    let failed = false;
    server = await startHealthServer(
      "127.0.0.1:0",
      async () => (failed ? { ...Report, status: "failed" } : Report),
      new Redactor(),
    );
    const up = await get(server.url, "/health", undefined, "HEAD");
    expect([up.status, up.body, up.headers["content-type"]]).toEqual([200, "", "application/json"]);
    failed = true;
    expect((await get(server.url, "/healthz", undefined, "HEAD")).status).toBe(503);
    const posted = await get(server.url, "/health", undefined, "POST");
    expect([posted.status, posted.headers.allow]).toEqual([405, "GET, HEAD"]);
    expect(posted.body).toBe("method not allowed; use GET or HEAD /health\n");
    expect((await get(server.url, "/metrics")).status).toBe(404);
  });
});
