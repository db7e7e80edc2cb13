import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeReply } from "./replies.js";

/** A message as the client sent it (OpenAI chat shape, loosely typed). */
export interface RequestMessage {
  readonly role: string;
  readonly content?: string | null;
  readonly tool_calls?: readonly {
    id: string;
    type: string;
    function: { name: string; arguments: string };
  }[];
  readonly tool_call_id?: string;
}

/** The JSON body of a chat-completions request. */
export interface ChatRequestBody {
  readonly model?: string;
  readonly messages: readonly RequestMessage[];
  readonly tools?: readonly { type: string; function: { name: string } }[];
  readonly stream?: boolean;
  readonly [key: string]: unknown;
}

/** One request the fake received, in arrival order. */
export interface RecordedRequest {
  /** 0-based arrival index. */
  readonly index: number;
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: ChatRequestBody;
  /** True once the client closed the connection before the fake answered. */
  clientAborted: boolean;
}

/** Computes the answer to a request when the queue is empty. */
export type ReplyHandler = (request: RecordedRequest) => FakeReply | Promise<FakeReply>;

function isBody(value: unknown): value is ChatRequestBody {
  return (
    typeof value === "object" &&
    value !== null &&
    Array.isArray((value as { messages?: unknown }).messages)
  );
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function errorBody(message: string, type = "invalid_request_error") {
  return { error: { message, type, param: null, code: null } };
}

/** Options of {@link FakeOpenAIServer.start}. */
export interface FakeOpenAIOptions {
  /** Model ids `GET /v1/models` lists (default `["fake-model"]`). */
  readonly models?: readonly string[];
  /** When set, every request without `Authorization: Bearer <apiKey>` gets a 401. */
  readonly apiKey?: string;
}

/** A `GET /v1/models` the fake answered. */
export interface ModelListing {
  readonly authorization: string | undefined;
  readonly status: number;
}

/**
 * A local OpenAI-compatible server: `POST /v1/chat/completions`, non-streaming only (a
 * request with `stream: true` gets a 400, so a client that streams fails its test), and
 * `GET /v1/models` listing the configured models. Answers come from a queue of scripted
 * replies, then from a handler; an unscripted request gets a 500 naming the problem. Records
 * every chat request (body, Authorization) in `requests`, every model listing in
 * `modelListings`. With `apiKey`, a request with another key (or none) gets a 401.
 */
export class FakeOpenAIServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Every `GET /v1/models`, in order. */
  readonly modelListings: ModelListing[] = [];
  readonly #server: Server;
  readonly #models: readonly string[];
  readonly #apiKey: string | undefined;
  readonly #queue: FakeReply[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];
  #handler: ReplyHandler | undefined;
  #nextCallId = 1;
  #port = 0;

  private constructor(options: FakeOpenAIOptions) {
    this.#models = options.models ?? ["fake-model"];
    this.#apiKey = options.apiKey;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody(`fake crashed: ${String(error)}`));
      });
    });
  }

  /** Starts a server on an ephemeral port of 127.0.0.1. */
  static async start(options: FakeOpenAIOptions = {}): Promise<FakeOpenAIServer> {
    const fake = new FakeOpenAIServer(options);
    fake.#server.listen(0, "127.0.0.1");
    await once(fake.#server, "listening");
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  /** Base URL for the SDK: `http://127.0.0.1:<port>/v1`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.#port}/v1`;
  }

  /** Queues replies, answered to the next requests in order. */
  enqueue(...replies: FakeReply[]): this {
    this.#queue.push(...replies);
    return this;
  }

  /** Answers requests the queue has nothing for. */
  respondWith(handler: ReplyHandler): this {
    this.#handler = handler;
    return this;
  }

  /** Replies still queued. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Resolves once `count` requests have arrived (at once if they already have). */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  /** Drops open connections (hanging requests included) and stops listening. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      this.#server.close((error) => (error ? reject(error) : resolve())),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const text = await readBody(req);
    if (this.#apiKey !== undefined && req.headers.authorization !== `Bearer ${this.#apiKey}`) {
      if (path === "/v1/models") {
        this.modelListings.push({ authorization: req.headers.authorization, status: 401 });
      }
      sendJson(res, 401, {
        error: {
          message: "Incorrect API key provided.",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      });
      return;
    }
    if (req.method === "GET" && path === "/v1/models") {
      this.modelListings.push({ authorization: req.headers.authorization, status: 200 });
      sendJson(res, 200, {
        object: "list",
        data: this.#models.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })),
      });
      return;
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      sendJson(res, 404, errorBody(`fake: no route ${req.method} ${path}`));
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      sendJson(res, 400, errorBody("fake: body is not JSON"));
      return;
    }
    if (!isBody(parsed)) {
      sendJson(res, 400, errorBody("fake: body has no messages array"));
      return;
    }
    const record: RecordedRequest = {
      index: this.requests.length,
      method: req.method,
      path,
      authorization: req.headers.authorization,
      body: parsed,
      clientAborted: false,
    };
    this.requests.push(record);
    res.on("close", () => {
      if (!res.writableFinished) record.clientAborted = true;
    });
    this.#notify();

    if (parsed.stream === true) {
      sendJson(res, 400, errorBody("fake: streaming is not supported"));
      return;
    }
    const scripted = this.#queue.shift() ?? (await this.#handler?.(record));
    if (scripted === undefined) {
      sendJson(
        res,
        500,
        errorBody(`fake: no reply scripted for request ${record.index}`, "fake_error"),
      );
      return;
    }
    await this.#answer(scripted, record, res);
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) {
      if (this.requests.length >= waiter.count) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  async #answer(scripted: FakeReply, record: RecordedRequest, res: ServerResponse): Promise<void> {
    if (scripted.type === "hang") return;
    if (scripted.delayMs !== undefined && scripted.delayMs > 0) {
      const delay = scripted.delayMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        res.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (res.destroyed || record.clientAborted) return;
    }
    const headers = { "x-request-id": `req_fake_${record.index}` };
    switch (scripted.type) {
      case "error":
        sendJson(res, scripted.status, errorBody(scripted.message, "server_error"), {
          ...headers,
          ...scripted.headers,
        });
        return;
      case "raw":
        res.writeHead(scripted.status, {
          "content-type": scripted.contentType ?? "application/json",
          ...headers,
        });
        res.end(scripted.body);
        return;
      case "text":
        sendJson(
          res,
          200,
          this.#completion(record, scripted.content, undefined, scripted.finishReason),
          headers,
        );
        return;
      case "tool_calls": {
        const calls = scripted.calls.map((call) => ({
          id: call.id ?? `call_${this.#nextCallId++}`,
          type: "function",
          function: {
            name: call.name,
            arguments:
              typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
          },
        }));
        sendJson(
          res,
          200,
          this.#completion(record, scripted.content ?? null, calls, "tool_calls"),
          headers,
        );
        return;
      }
    }
  }

  #completion(
    record: RecordedRequest,
    content: string | null,
    toolCalls: unknown[] | undefined,
    finishReason: string | undefined,
  ) {
    return {
      id: `chatcmpl-fake-${record.index}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: record.body.model ?? "fake-model",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content,
            refusal: null,
            ...(toolCalls ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: finishReason ?? "stop",
        },
      ],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
  }
}
