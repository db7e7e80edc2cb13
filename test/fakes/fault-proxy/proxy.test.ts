import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FaultProxy } from "./proxy.js";
import { botMethod, floodWait } from "./telegram.js";

/** An upstream that counts what it handled and echoes the body length. */
let upstream: Server;
let handled: string[];
let proxy: FaultProxy;

beforeEach(async () => {
  handled = [];
  upstream = createServer((req, res) => {
    let length = 0;
    req.on("data", (chunk: Buffer) => {
      length += chunk.length;
    });
    req.on("end", () => {
      handled.push(req.url ?? "");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, length }));
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  const { port } = upstream.address() as AddressInfo;
  proxy = new FaultProxy(`http://127.0.0.1:${port}`);
  await proxy.start();
});

afterEach(async () => {
  await proxy.stop();
  upstream.close();
  upstream.closeAllConnections();
});

const post = (path: string, body = "hello", signal?: AbortSignal) =>
  fetch(`${proxy.url}${path}`, { method: "POST", body, ...(signal ? { signal } : {}) });

describe("FaultProxy", () => {
  it("passes requests without a rule through, bodies intact", async () => {
    const res = await post("/bot1:x/sendMessage", "x".repeat(100_000));
    expect(await res.json()).toEqual({ ok: true, length: 100_000 });
    expect(handled).toEqual(["/bot1:x/sendMessage"]);
    expect(proxy.requests[0]).toMatchObject({ forwarded: true, upstreamStatus: 200 });
  });

  it("answers a status before forwarding: the upstream never sees it", async () => {
    proxy.add(botMethod("sendMessage"), floodWait(3600));
    const res = await post("/bot1:x/sendMessage");
    expect(res.status).toBe(429);
    expect(await res.json()).toMatchObject({ error_code: 429, parameters: { retry_after: 3600 } });
    expect(handled).toEqual([]);
    await post("/bot1:x/sendMessage");
    expect(handled).toHaveLength(1);
  });

  it("replaces the answer after the upstream handled the request", async () => {
    proxy.add(
      { path: /sendDocument$/ },
      { kind: "respond", stage: "after", status: 502, body: "bad" },
    );
    const res = await post("/bot1:x/sendDocument");
    expect(res.status).toBe(502);
    expect(await res.text()).toBe("bad");
    expect(handled).toEqual(["/bot1:x/sendDocument"]);
  });

  it("resets before and after forwarding", async () => {
    proxy.add({ path: "/a" }, { kind: "reset", stage: "before" });
    proxy.add({ path: "/b" }, { kind: "reset", stage: "after" });
    await expect(post("/a")).rejects.toThrow();
    await expect(post("/b")).rejects.toThrow();
    expect(handled).toEqual(["/b"]);
  });

  it("hangs before or after forwarding until the client gives up", async () => {
    proxy.add({ path: "/before" }, { kind: "hang", stage: "before" });
    proxy.add({ path: "/after" }, { kind: "hang", stage: "after" });
    await expect(post("/before", "x", AbortSignal.timeout(200))).rejects.toThrow();
    await expect(post("/after", "x", AbortSignal.timeout(200))).rejects.toThrow();
    expect(handled).toEqual(["/after"]);
  });

  it("applies a rule as many times as asked, then forwards again", async () => {
    proxy.add({ method: "POST", path: "/c" }, { kind: "respond", status: 409 }, 2);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post("/c")).status);
    expect(statuses).toEqual([409, 409, 200]);
    expect(proxy.requests.map((r) => r.forwarded)).toEqual([false, false, true]);
  });
});
