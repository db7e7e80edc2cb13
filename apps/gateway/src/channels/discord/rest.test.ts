import { getEventListeners, once, setMaxListeners } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { REST, Routes } from "discord.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallSignalRest } from "./rest.js";

/** Discord's REST as far as these requests go: 204 at once, or never for `/held/`. */
let server: Server;
let api = "";
const held: (() => void)[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const answer = () => response.writeHead(204).end();
    if (request.url?.includes("/channels/held/") === true) held.push(answer);
    else answer();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});

afterAll(async () => {
  for (const answer of held.splice(0)) answer();
  server.close();
  await once(server, "close");
});

function rest(kind: typeof REST): REST {
  return new kind({ api, retries: 0, timeout: 5_000 }).setToken("rest-test-token");
}

describe("CallSignalRest", () => {
  it("leaves the caller's signal as it was after each request (discord.js's own REST does not)", async () => {
    const plain = new AbortController();
    // Past 10 kept listeners Node would print its leak warning in this test's output.
    setMaxListeners(0, plain.signal);
    const own = new AbortController();
    for (let i = 0; i < 12; i++) {
      await rest(REST).post(Routes.channelTyping("1"), { signal: plain.signal });
      await rest(CallSignalRest).post(Routes.channelTyping("1"), { signal: own.signal });
    }
    // @discordjs/rest 2.6.3 keeps one listener per request: if this changes, the class can go.
    expect(getEventListeners(plain.signal, "abort")).toHaveLength(12);
    expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
  });

  it("still aborts a request in flight when the caller's signal aborts", async () => {
    const stop = new AbortController();
    const client = rest(CallSignalRest);
    const request = client.post(Routes.channelTyping("held"), { signal: stop.signal });
    await expect.poll(() => held.length).toBe(1);
    stop.abort(new Error("stopping"));
    await expect(request).rejects.toThrow();
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });
});
