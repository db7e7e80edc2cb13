import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeReply, StreamShape, TextReply } from "./replies.js";
import { writeStream } from "./sse.js";
import { completionTokens, contextLengthErrorBody, firstTokens, promptTokens } from "./tokens.js";
import {
  derivedUsage,
  type FakeProvider,
  type FakeUsage,
  providerBaseUrl,
  providerPrefix,
  sumUsage,
  usageBody,
} from "./usage.js";

/** One part of a message's content array (`text`, `image_url`, …), loosely typed. */
export interface RequestContentPart {
  readonly type: string;
  readonly text?: string;
  readonly image_url?: { readonly url: string; readonly detail?: string };
}

/** A message as the client sent it (OpenAI chat shape, loosely typed). */
export interface RequestMessage {
  readonly role: string;
  /** A string, or an array of parts when the message carries images. */
  readonly content?: string | null | readonly RequestContentPart[];
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
  /** The request's prompt tokens as the fake counts them (`promptTokens`). */
  readonly promptTokens: number;
  /** True once the client closed the connection before the fake answered. */
  clientAborted: boolean;
  /**
   * The token counts the fake's answer reported (absent for an error, no answer, or a stream
   * that did not ask for `stream_options.include_usage`).
   */
  usage?: FakeUsage;
  /** When a streamed answer's first content went out (`performance.now()`). */
  firstTokenAtMs?: number;
}

/** The text of a message's content: the string, or its text parts joined by newlines. */
export function contentText(content: RequestMessage["content"]): string | null | undefined {
  if (content === null || content === undefined || typeof content === "string") return content;
  return content.flatMap((part) => (part.type === "text" ? [part.text ?? ""] : [])).join("\n");
}

/** A `POST /v1/audio/transcriptions` the fake received, in arrival order. */
export interface RecordedTranscription {
  readonly index: number;
  readonly authorization: string | undefined;
  readonly model: string | undefined;
  /** The file part's filename and Content-Type, and its bytes. */
  readonly filename: string | undefined;
  readonly mime: string | undefined;
  readonly bytes: Buffer;
  /** Every other form field (`response_format`, `language`, …). */
  readonly fields: Readonly<Record<string, string>>;
  /** The status the fake answered. */
  status: number;
}

/** What the fake answers a transcription with: a transcript, or an error status. */
export type TranscriptionReply =
  | { readonly text: string }
  | { readonly status: number; readonly message?: string };

/**
 * The transcript the fake makes of a file nobody scripted: its size and the start of its
 * sha256, so a test knows which bytes arrived.
 */
export function derivedTranscript(bytes: Uint8Array): string {
  const hash = createHash("sha256").update(bytes).digest("hex");
  return `heard ${bytes.length} bytes, sha256 ${hash.slice(0, 16)}`;
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

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
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

const LoneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string anywhere in `value` holds half a surrogate pair (JSON.stringify escapes it). */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return LoneSurrogate.test(value);
  if (typeof value !== "object" || value === null) return false;
  return Object.values(value).some(hasLoneSurrogate);
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
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
  /** Whose compatible API it plays: paths and `usage` shape (see usage.ts). Default `openai`. */
  readonly provider?: FakeProvider;
  /**
   * The model's context size: a chat request counted (`promptTokens`) above it gets OpenAI's
   * 400 `context_length_exceeded`, unscripted. Default: no limit.
   */
  readonly contextTokens?: number;
  /** Scales the fake's token counts (a server tokenizer that counts more). Default 1. */
  readonly tokenScale?: number;
  /**
   * Reads the tool calls of the request's assistant messages as vLLM and Anthropic's and
   * Google's compatible layers do: arguments that are not a JSON object get a 400, unscripted.
   * Default false: OpenAI's own API passes them on as text.
   */
  readonly strictToolArguments?: boolean;
}

/** A `GET /v1/models` the fake answered. */
export interface ModelListing {
  readonly authorization: string | undefined;
  readonly status: number;
}

/**
 * A local OpenAI-compatible server: `POST /v1/chat/completions`, streamed as server-sent
 * events when the request asks for `stream: true` (cut as each reply's `stream` shape says,
 * see `writeStream`), one JSON answer otherwise; usage from the fake's token counts
 * (tokens.ts), a text answer cut at the request's `max_completion_tokens` (or `max_tokens`)
 * and finished `length`, and a request longer than `contextTokens` gets OpenAI's context-length 400,
 * streamed or not, one with half a UTF-16 surrogate pair in a string a 400 as real endpoints
 * answer it (unrecorded);
 * `POST /v1/audio/transcriptions` (multipart `file` + `model`; answers scripted with
 * `enqueueTranscription`/`transcribeWith`, else derived from the bytes; recorded in
 * `transcriptions`), and `GET /v1/models` listing the configured models. Answers come from a queue of scripted
 * replies, then from a handler; an unscripted request gets a 500 naming the problem. Records
 * every chat request (body, Authorization) in `requests`, every model listing in
 * `modelListings`. With `apiKey`, a request with another key (or none) gets a 401.
 */
export class FakeOpenAIServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Every `GET /v1/models`, in order. */
  readonly modelListings: ModelListing[] = [];
  /** Every `POST /v1/audio/transcriptions`, in order. */
  readonly transcriptions: RecordedTranscription[] = [];
  readonly #transcriptionQueue: TranscriptionReply[] = [];
  #transcriptionHandler: ((file: RecordedTranscription) => TranscriptionReply) | undefined;
  readonly #server: Server;
  readonly #models: readonly string[];
  readonly #apiKey: string | undefined;
  readonly #provider: FakeProvider;
  readonly #contextTokens: number | undefined;
  readonly #tokenScale: number;
  readonly #strictToolArguments: boolean;
  readonly #queue: FakeReply[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];
  #handler: ReplyHandler | undefined;
  #nextCallId = 1;
  #port = 0;

  private constructor(options: FakeOpenAIOptions) {
    this.#models = options.models ?? ["fake-model"];
    this.#apiKey = options.apiKey;
    this.#provider = options.provider ?? "openai";
    this.#contextTokens = options.contextTokens;
    this.#tokenScale = options.tokenScale ?? 1;
    this.#strictToolArguments = options.strictToolArguments === true;
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

  /**
   * Base URL for the SDK: `http://127.0.0.1:<port>/v1`, or the form the `provider`'s
   * documentation gives (`…/v1/`, `…/v1beta/openai/`).
   */
  get baseUrl(): string {
    return providerBaseUrl(`http://127.0.0.1:${this.#port}`, this.#provider);
  }

  /** The sum of the token counts the fake reported, over every answered request. */
  reportedUsage(): FakeUsage {
    return sumUsage(this.requests.map((request) => request.usage));
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

  /** Queues answers for the next transcriptions, in order. */
  enqueueTranscription(...replies: TranscriptionReply[]): this {
    this.#transcriptionQueue.push(...replies);
    return this;
  }

  /**
   * Answers transcriptions the queue has nothing for; without a handler the transcript is
   * {@link derivedTranscript} of the file's bytes.
   */
  transcribeWith(handler: (file: RecordedTranscription) => TranscriptionReply): this {
    this.#transcriptionHandler = handler;
    return this;
  }

  /** The `image_url` URLs of the user messages of chat request `index`, in order. */
  imageUrls(index: number): string[] {
    const messages = this.requests[index]?.body.messages ?? [];
    return messages.flatMap((message) =>
      message.role === "user" && Array.isArray(message.content)
        ? message.content.flatMap((part) =>
            part.type === "image_url" && part.image_url !== undefined ? [part.image_url.url] : [],
          )
        : [],
    );
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
    const rawPath = new URL(req.url ?? "/", "http://fake").pathname;
    const path = this.#route(rawPath);
    const raw = await readBody(req);
    const text = raw.toString("utf8");
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
    if (req.method === "POST" && path === "/v1/audio/transcriptions") {
      await this.#transcribe(req, raw, res);
      return;
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      sendJson(res, 404, errorBody(`fake: no route ${req.method} ${rawPath}`));
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
    if (hasLoneSurrogate(parsed)) {
      // OpenAI's and Anthropic's parsers refuse a `\ud83d` escape without its pair.
      sendJson(
        res,
        400,
        errorBody("The request body is not valid JSON: no low surrogate in string"),
      );
      return;
    }
    const record: RecordedRequest = {
      index: this.requests.length,
      method: req.method,
      path: rawPath,
      authorization: req.headers.authorization,
      body: parsed,
      promptTokens: promptTokens(parsed, this.#tokenScale),
      clientAborted: false,
    };
    this.requests.push(record);
    res.on("close", () => {
      if (!res.writableFinished) record.clientAborted = true;
    });
    this.#notify();

    if (this.#overflows(record, res)) return;
    if (this.#badToolArguments(record, res)) return;
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

  /**
   * `POST /v1/audio/transcriptions` as OpenAI answers it: multipart with `file` and `model`
   * (a 400 without them), `{"text": …}` by default, the bare text for `response_format: text`.
   */
  async #transcribe(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    let form: FormData;
    try {
      form = await new Request("http://fake/", {
        method: "POST",
        headers: { "content-type": req.headers["content-type"] ?? "" },
        body: raw,
      }).formData();
    } catch {
      sendJson(res, 400, errorBody("fake: the body is not multipart/form-data"));
      return;
    }
    const file = form.get("file");
    const model = form.get("model");
    const fields: Record<string, string> = {};
    for (const [key, value] of form.entries()) {
      if (key !== "file" && key !== "model" && typeof value === "string") fields[key] = value;
    }
    const record: RecordedTranscription = {
      index: this.transcriptions.length,
      authorization: req.headers.authorization,
      model: typeof model === "string" ? model : undefined,
      filename: typeof file === "string" || file === null ? undefined : file.name,
      mime: typeof file === "string" || file === null ? undefined : file.type,
      bytes:
        typeof file === "string" || file === null
          ? Buffer.alloc(0)
          : Buffer.from(await file.arrayBuffer()),
      fields,
      status: 200,
    };
    this.transcriptions.push(record);
    if (typeof file === "string" || file === null || record.model === undefined) {
      record.status = 400;
      sendJson(res, 400, errorBody("fake: a transcription needs a file and a model"));
      return;
    }
    const answer = this.#transcriptionQueue.shift() ??
      this.#transcriptionHandler?.(record) ?? { text: derivedTranscript(record.bytes) };
    if ("status" in answer) {
      record.status = answer.status;
      sendJson(
        res,
        answer.status,
        errorBody(answer.message ?? `fake transcription error ${answer.status}`, "server_error"),
      );
      return;
    }
    if (fields.response_format === "text") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(answer.text);
      return;
    }
    sendJson(res, 200, { text: answer.text });
  }

  /** The provider's paths, read as the OpenAI ones (`/v1beta/openai/x` is `/v1/x`). */
  #route(path: string): string {
    const prefix = providerPrefix(this.#provider);
    return path.startsWith(`${prefix}/`) ? `/v1${path.slice(prefix.length)}` : `/unrouted${path}`;
  }

  /** Answers the 400 of a request longer than `contextTokens`, as OpenAI does. */
  #overflows(record: RecordedRequest, res: ServerResponse): boolean {
    if (this.#contextTokens === undefined || record.promptTokens <= this.#contextTokens) {
      return false;
    }
    sendJson(res, 400, contextLengthErrorBody(this.#contextTokens, record.promptTokens), {
      "x-request-id": `req_fake_${record.index}`,
    });
    return true;
  }

  /** With `strictToolArguments`, answers the 400 of a tool call whose arguments are not an object. */
  #badToolArguments(record: RecordedRequest, res: ServerResponse): boolean {
    if (!this.#strictToolArguments) return false;
    const position = record.body.messages.findIndex((message) =>
      (message.tool_calls ?? []).some((call) => !isJsonObject(call.function.arguments)),
    );
    if (position === -1) return false;
    sendJson(
      res,
      400,
      errorBody(
        `messages.${position}.tool_calls: function.arguments must be a valid JSON object string`,
      ),
    );
    return true;
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
      case "text": {
        const { content, finishReason } = this.#withinMaxTokens(record, scripted);
        if (record.body.stream === true) {
          await this.#stream(
            record,
            res,
            content,
            [],
            finishReason,
            scripted.stream,
            scripted.usage,
          );
          return;
        }
        sendJson(
          res,
          200,
          this.#completion(record, content, undefined, finishReason, scripted.usage),
          headers,
        );
        return;
      }
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
        if (record.body.stream === true) {
          await this.#stream(
            record,
            res,
            scripted.content ?? null,
            calls,
            "tool_calls",
            scripted.stream,
            scripted.usage,
          );
          return;
        }
        sendJson(
          res,
          200,
          this.#completion(record, scripted.content ?? null, calls, "tool_calls", scripted.usage),
          headers,
        );
        return;
      }
    }
  }

  /**
   * A text reply as a server sends it under the request's `max_completion_tokens` (or the
   * older `max_tokens`; the first wins when both are there, as OpenAI reads them): cut after
   * that many tokens (divided by `tokenScale`), finished `length`.
   */
  #withinMaxTokens(
    record: RecordedRequest,
    scripted: TextReply,
  ): { content: string; finishReason: string } {
    const finishReason = scripted.finishReason ?? "stop";
    const limit = record.body.max_completion_tokens ?? record.body.max_tokens;
    if (typeof limit !== "number") return { content: scripted.content, finishReason };
    const tokens = Math.max(0, Math.floor(limit / this.#tokenScale));
    if (completionTokens(scripted.content) <= tokens) {
      return { content: scripted.content, finishReason };
    }
    return { content: firstTokens(scripted.content, tokens), finishReason: "length" };
  }

  /**
   * The answer's tokens as the fake counts them: its text and its tool calls' names and
   * arguments, times `tokenScale`.
   */
  #answerTokens(content: string | null, toolCalls: unknown[] | undefined): number {
    const calls = (toolCalls ?? []) as { function: { name: string; arguments: string } }[];
    const tokens = calls.reduce(
      (sum, call) =>
        sum + completionTokens(call.function.name) + completionTokens(call.function.arguments),
      completionTokens(content),
    );
    return Math.ceil(tokens * this.#tokenScale);
  }

  async #stream(
    record: RecordedRequest,
    res: ServerResponse,
    content: string | null,
    toolCalls: readonly { id: string; function: { name: string; arguments: string } }[],
    finishReason: string,
    shape: StreamShape | undefined,
    scripted: FakeUsage | undefined,
  ): Promise<void> {
    const options = record.body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage === true) {
      record.usage =
        scripted ??
        derivedUsage(record.body, record.promptTokens, this.#answerTokens(content, [...toolCalls]));
    }
    await writeStream(res, {
      id: `chatcmpl-fake-${record.index}`,
      model: record.body.model ?? "fake-model",
      content,
      toolCalls: toolCalls.map((call) => ({ id: call.id, ...call.function })),
      finishReason,
      usage: record.usage === undefined ? undefined : usageBody(record.usage, this.#provider),
      shape: shape ?? {},
      onFirstContent: () => {
        record.firstTokenAtMs = performance.now();
      },
    });
  }

  #completion(
    record: RecordedRequest,
    content: string | null,
    toolCalls: unknown[] | undefined,
    finishReason: string | undefined,
    scripted: FakeUsage | undefined,
  ) {
    const usage =
      scripted ??
      derivedUsage(record.body, record.promptTokens, this.#answerTokens(content, toolCalls));
    record.usage = usage;
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
      usage: usageBody(usage, this.#provider),
    };
  }
}
