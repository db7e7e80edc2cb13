import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reply } from "./replies.js";
import { FakeOpenAIServer } from "./server.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

function post(body: unknown, init: RequestInit = {}) {
  return fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-fake" },
    body: JSON.stringify(body),
    ...init,
  });
}

const request = { model: "m", messages: [{ role: "user", content: "hi" }] };

describe("FakeOpenAIServer", () => {
  it("answers queued replies in order and records bodies and the Authorization header", async () => {
    server.enqueue(reply.toolCall("terminal", { command: "ls" }), reply.text("done"));
    const first = (await (await post(request)).json()) as {
      choices: {
        message: { tool_calls: { id: string; function: { arguments: string } }[] };
        finish_reason: string;
      }[];
    };
    const second = (await (await post({ ...request, tools: [] })).json()) as {
      model: string;
      choices: { message: { content: string } }[];
    };
    expect(first.choices[0]?.finish_reason).toBe("tool_calls");
    expect(first.choices[0]?.message.tool_calls[0]?.function.arguments).toBe('{"command":"ls"}');
    expect(first.choices[0]?.message.tool_calls[0]?.id).toMatch(/^call_\d+$/);
    expect(second.model).toBe("m");
    expect(second.choices[0]?.message.content).toBe("done");
    expect(server.requests.map((r) => [r.index, r.authorization, r.body.model])).toEqual([
      [0, "Bearer sk-fake", "m"],
      [1, "Bearer sk-fake", "m"],
    ]);
    expect(server.requests[1]?.body.tools).toEqual([]);
  });

  it("falls back to the handler once the queue is empty", async () => {
    server.enqueue(reply.text("queued")).respondWith((r) => reply.text(`handled ${r.index}`));
    await post(request);
    const body = (await (await post(request)).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(body.choices[0]?.message.content).toBe("handled 1");
  });

  it("answers an unscripted request with a 500 that says so", async () => {
    const res = await post(request);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/no reply scripted for request 0/);
  });

  it("injects errors with their headers", async () => {
    server.enqueue(reply.rateLimited(25), reply.error(503, "overloaded"));
    const limited = await post(request);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after-ms")).toBe("25");
    const down = await post(request);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ error: { message: "overloaded" } });
  });

  it("refuses streaming requests", async () => {
    server.enqueue(reply.text("never sent"));
    const res = await post({ ...request, stream: true });
    expect(res.status).toBe(400);
    expect(server.pending).toBe(1);
  });

  it("rejects other routes and bodies without messages", async () => {
    expect((await fetch(`${server.baseUrl}/embeddings`)).status).toBe(404);
    expect((await post({ model: "m" })).status).toBe(400);
    expect(server.requests).toEqual([]);
  });

  it("lists its models on GET /models and records who asked", async () => {
    const res = await fetch(`${server.baseUrl}/models`, {
      headers: { authorization: "Bearer sk-list" },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: "list", data: [{ id: "fake-model" }] });
    expect(server.modelListings).toEqual([{ authorization: "Bearer sk-list", status: 200 }]);
    expect(server.requests).toEqual([]);
  });

  it("answers 401 to every request without its API key, when it has one", async () => {
    const keyed = await FakeOpenAIServer.start({ apiKey: "sk-right", models: ["a", "b"] });
    try {
      const wrong = await fetch(`${keyed.baseUrl}/models`, {
        headers: { authorization: "Bearer sk-wrong" },
      });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ error: { code: "invalid_api_key" } });
      const right = await fetch(`${keyed.baseUrl}/models`, {
        headers: { authorization: "Bearer sk-right" },
      });
      expect(await right.json()).toMatchObject({ data: [{ id: "a" }, { id: "b" }] });
      expect(keyed.modelListings.map((l) => l.status)).toEqual([401, 200]);
    } finally {
      await keyed.close();
    }
  });

  it("holds a hanging request until the client gives up, and records that", async () => {
    server.enqueue(reply.hang());
    const controller = new AbortController();
    const pending = post(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(() => server.requests[0]?.clientAborted).toBe(true);
  });

  it("delays a reply and drops it when the client leaves first", async () => {
    server.enqueue(reply.text("slow", { delayMs: 60_000 }), reply.text("quick", { delayMs: 1 }));
    const controller = new AbortController();
    const slow = post(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();
    await expect(slow).rejects.toThrow();
    const quick = (await (await post(request)).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(quick.choices[0]?.message.content).toBe("quick");
  });
});
