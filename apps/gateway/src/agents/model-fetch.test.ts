import type { IncomingMessage, ServerResponse } from "node:http";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LocalServers } from "../../test/local-servers.js";
import type { ModelSettings } from "../config/types.js";
import { ModelChain } from "./model-chain.js";
import { modelFetch } from "./model-fetch.js";
import { OpenAIEndpointError } from "./openai-errors.js";

// The model clients' fetch (undici's `request`, model-fetch.ts) under the real `openai` SDK,
// against a local server: what the SDK reads of an answer, and what a failure comes out as.

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

function chain(waits: number[] = []): ModelChain {
  return new ModelChain({
    logger: pino({ level: "silent" }),
    timeoutMs: 5_000,
    maxRetries: 1,
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

describe("model requests over undici", () => {
  it("streams an answer, with the request the SDK built", async () => {
    let seen: { headers: IncomingMessage["headers"]; body: string } | undefined;
    const entry = await endpoint((req, res, body) => {
      seen = { headers: req.headers, body };
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
    expect(answer.completion.usage?.total_tokens).toBe(5);
    expect(seen?.headers.authorization).toBe("Bearer sk-k");
    expect(seen?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(seen?.body ?? "{}")).toMatchObject({ model: "m-1", stream: true });
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

describe("model requests over undici, odd answers", () => {
  it("calls a 204 (a status that may have no body) an unusable answer, not no connection", async () => {
    const entry = await endpoint((_req, res) => {
      res.writeHead(204).end();
    });
    const error = await ask(chain(), entry).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAIEndpointError);
    expect(error).toMatchObject({ kind: "bad_response" });
  });

  it("sends a form-data body as multipart, as the platform fetch does", async () => {
    let seen: { type: string | undefined; body: string } | undefined;
    const entry = await endpoint((req, res, body) => {
      seen = { type: req.headers["content-type"], body };
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    const form = new FormData();
    form.set("model", "whisper-1");
    const response = await modelFetch()(`${entry.baseUrl}/audio/transcriptions`, {
      method: "POST",
      body: form,
    });
    expect(response.status).toBe(200);
    expect(seen?.type).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen?.body).toContain('name="model"');
    expect(seen?.body).toContain("whisper-1");
  });
});
