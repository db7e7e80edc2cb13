import type { IncomingMessage, ServerResponse } from "node:http";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LocalServers } from "../../test/local-servers.js";
import type { ModelSettings } from "../config/types.js";
import { ModelChain } from "./model-chain.js";
import { OpenAIEndpointError } from "./openai-errors.js";

// The chain's chat streams (chat-stream.ts) against a local server: the request they send,
// the answer they assemble, and what each kind of failure comes out as.

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const servers = new LocalServers();
afterEach(() => servers.closeAll());

async function endpoint(handler: Handler): Promise<ModelSettings> {
  const root = await servers.serve((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (text: string) => {
      body += text;
    });
    req.on("end", () => handler(req, res, body));
  });
  return { name: "local", model: "m-1", baseUrl: `${root}/v1`, apiKey: "sk-k" };
}

function chunk(delta: object, finish: string | null = null, extra: object = {}): string {
  const choices = [{ index: 0, delta, finish_reason: finish }];
  const data = { id: "c", object: "chat.completion.chunk", created: 1, model: "m-1", choices };
  return `data: ${JSON.stringify({ ...data, ...extra })}\n\n`;
}

function chain(waits: number[] = [], maxRetries = 1): ModelChain {
  return new ModelChain({
    logger: pino({ level: "silent" }),
    timeoutMs: 5_000,
    maxRetries,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
}

const ask = (models: ModelChain, entry: ModelSettings, pieces: string[] = []) =>
  models.complete(
    [entry],
    { messages: [{ role: "user", content: "hi" }] },
    new AbortController().signal,
    (piece) => pieces.push(piece),
  );

const stream = (res: ServerResponse, ...events: string[]) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(events.join(""));
};

const caught = (models: ModelChain, entry: ModelSettings, pieces: string[] = []) =>
  ask(models, entry, pieces).catch((e: unknown) => e);

describe("chat streams", () => {
  it("streams an answer, with the request an OpenAI-compatible server expects", async () => {
    let seen:
      | { url: string | undefined; headers: IncomingMessage["headers"]; body: string }
      | undefined;
    const entry = await endpoint((req, res, body) => {
      seen = { url: req.url, headers: req.headers, body };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "" }));
      res.write(chunk({ content: "hello " }));
      res.write(chunk({ content: "there" }));
      const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
      res.end(`${chunk({}, "stop", { usage })}data: [DONE]\n\n`);
    });
    const pieces: string[] = [];
    const answer = await ask(chain(), entry, pieces);
    expect(pieces).toEqual(["hello ", "there"]);
    expect(answer.completion.choices[0]?.message.content).toBe("hello there");
    expect(answer.completion).toMatchObject({ id: "c", object: "chat.completion", model: "m-1" });
    expect(answer.completion.usage?.total_tokens).toBe(5);
    expect(seen?.headers.authorization).toBe("Bearer sk-k");
    expect(seen?.headers["content-type"]).toBe("application/json");
    expect(seen?.url).toBe("/v1/chat/completions");
    expect(JSON.parse(seen?.body ?? "{}")).toEqual({
      messages: [{ role: "user", content: "hi" }],
      model: "m-1",
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("reads an error answer's status, body and retry-after header", async () => {
    let calls = 0;
    const entry = await endpoint((_req, res) => {
      calls++;
      res.writeHead(429, { "content-type": "application/json", "retry-after-ms": "40" });
      res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit" } }));
    });
    const waits: number[] = [];
    const error = await ask(chain(waits), entry).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAIEndpointError);
    expect(error).toMatchObject({ kind: "http", status: 429 });
    expect((error as Error).message).toContain("slow down");
    expect(calls).toBe(2);
    expect(waits).toEqual([40]);
  });

  it("names a connection lost in the middle of an answer", async () => {
    const entry = await endpoint((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "hel" }));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const pieces: string[] = [];
    const error = await ask(chain(), entry, pieces).catch((e: unknown) => e);
    expect(pieces).toEqual(["hel"]);
    expect(error).toBeInstanceOf(OpenAIEndpointError);
    expect((error as Error).message).toMatch(/unusable answer .*: other side closed$/);
  });

  it("reports a refused connection by its code", async () => {
    const entry = await endpoint(() => {});
    await servers.closeAll();
    const error = await ask(chain(), entry).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "connection" });
    expect((error as Error).message).toMatch(/could not be reached .*: ECONNREFUSED$/);
  });
});

describe("chat streams, odd answers", () => {
  it("calls a 204 (a status that may have no body) an unusable answer, not no connection", async () => {
    const entry = await endpoint((_req, res) => {
      res.writeHead(204).end();
    });
    const error = await caught(chain(), entry);
    expect(error).toBeInstanceOf(OpenAIEndpointError);
    expect(error).toMatchObject({ kind: "bad_response" });
    expect((error as Error).message).toMatch(/without sending any chunks$/);
  });

  it("sends no Authorization header for an entry without a key, and joins a base URL's slash", async () => {
    let seen: { url: string | undefined; authorization: string | undefined } | undefined;
    const entry = await endpoint((req, res) => {
      seen = { url: req.url, authorization: req.headers.authorization };
      stream(res, chunk({ role: "assistant", content: "ok" }, "stop"), "data: [DONE]\n\n");
    });
    const keyless = { ...entry, baseUrl: `${entry.baseUrl}/`, apiKey: undefined };
    const answer = await ask(chain(), keyless);
    expect(answer.completion.choices[0]?.message.content).toBe("ok");
    expect(seen).toEqual({ url: "/v1/chat/completions", authorization: undefined });
  });

  it("assembles tool calls sent in pieces, and names one sent without an id", async () => {
    const call = (index: number, fields: object) => ({ tool_calls: [{ index, ...fields }] });
    const entry = await endpoint((_req, res) => {
      stream(
        res,
        chunk({ role: "assistant", content: null }),
        chunk(
          call(0, { id: "call_a", type: "function", function: { name: "shell", arguments: "" } }),
        ),
        chunk(call(0, { function: { arguments: '{"command":' } })),
        chunk(
          call(1, { type: "function", function: { name: "shell", arguments: '{"command":"ls"}' } }),
        ),
        chunk(call(0, { function: { arguments: '"pwd"}' } })),
        chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
      );
    });
    const answer = await ask(chain(), entry);
    const message = answer.completion.choices[0]?.message;
    expect(message?.content).toBeNull();
    expect(message?.tool_calls?.[0]).toEqual({
      id: "call_a",
      type: "function",
      function: { name: "shell", arguments: '{"command":"pwd"}' },
    });
    expect(message?.tool_calls?.[1]).toMatchObject({
      type: "function",
      function: { name: "shell", arguments: '{"command":"ls"}' },
    });
    expect(message?.tool_calls?.[1]?.id).toMatch(/^call_[0-9a-f-]{36}$/);
    expect(answer.completion.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("reads an error the server sends inside the stream as its error, with the text so far kept", async () => {
    const entry = await endpoint((_req, res) => {
      stream(
        res,
        chunk({ role: "assistant", content: "par" }),
        `data: ${JSON.stringify({ error: { message: "the model is overloaded", type: "server_error" } })}\n\n`,
      );
    });
    const pieces: string[] = [];
    const error = await caught(chain(), entry, pieces);
    expect(pieces).toEqual(["par"]);
    expect(error).toMatchObject({ kind: "http" });
    expect((error as Error).message).toContain("the model is overloaded");
  });

  it("calls an event that is not JSON, a chunk with a wild index and an endless event unusable", async () => {
    const answers = [
      "data: {not json\n\n",
      chunk({ role: "assistant", content: "x" }).replace('"index":0', '"index":1000000000'),
      `data: ${"x".repeat(9 * 1024 * 1024)}`,
    ];
    const entry = await endpoint((_req, res) => {
      stream(res, answers.shift() ?? "");
    });
    const messages: string[] = [];
    const once = chain([], 0);
    for (let i = 0; i < 3; i++) {
      const error = await caught(once, entry);
      expect(error).toMatchObject({ kind: "bad_response" });
      messages.push((error as Error).message);
    }
    expect(messages[0]).toMatch(/an event of the stream is not JSON/);
    expect(messages[1]).toMatch(/a chunk's choice index is 1000000000, expected 0 to 1023/);
    expect(messages[2]).toMatch(/an event of the stream is over 8388608 characters/);
  });

  it("ends an answer that streams past 16 Mi characters as unusable", async () => {
    let events = 0;
    const entry = await endpoint((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const piece = chunk({ role: "assistant", content: "y".repeat(1024 * 1024) });
      const more = () => {
        while (events < 64) {
          events++;
          if (!res.write(piece)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    });
    const pieces: string[] = [];
    const error = await caught(chain([], 0), entry, pieces);
    expect(error).toMatchObject({ kind: "bad_response" });
    expect((error as Error).message).toMatch(/the answer is over 16777216 characters$/);
    expect(pieces.join("")).toHaveLength(16 * 1024 * 1024);
    expect(events).toBeLessThan(64);
  });

  it("reads no more than 64 KiB of an error answer's body", async () => {
    let written = 0;
    const entry = await endpoint((_req, res) => {
      res.writeHead(500, { "content-type": "text/html" });
      const page = "<p>broken</p>".repeat(1000);
      const more = () => {
        while (written < 64 * 1024 * 1024) {
          written += page.length;
          if (!res.write(page)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    });
    const error = await caught(chain(), { ...entry, name: "other" });
    expect(error).toMatchObject({ kind: "http", status: 500 });
    expect((error as Error).message).toContain("<p>broken</p>");
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });
});
