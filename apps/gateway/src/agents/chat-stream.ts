import { randomUUID } from "node:crypto";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageFunctionToolCall,
} from "openai/resources/chat/completions";
import { Agent, type Dispatcher, request } from "undici";
import { wellFormed } from "../state/chat-repair.js";
import { openaiSdk } from "./openai-sdk.js";

/** One request of {@link ChatStreams.complete}. */
export interface ChatStreamRequest {
  /** The endpoint's base URL (`…/v1`); the request goes to `<baseUrl>/chat/completions`. */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer …`; none: no Authorization header at all. */
  readonly apiKey: string | undefined;
  readonly params: ChatCompletionCreateParamsStreaming;
  /** Aborts the request and the stream; its abort error comes out as thrown. */
  readonly signal: AbortSignal;
  /** Told as each event of the stream arrives (the caller re-arms its stall timer). */
  readonly onEvent: () => void;
  /** Told each non-empty piece of the answer's text, in order. */
  readonly onContent: (piece: string) => void;
}

/** Most bytes of an error answer's body read (its detail is cut to 300 characters anyway). */
const MaxErrorBodyBytes = 64 * 1024;
/** Most characters of one event the parser holds: a stream that never ends an event is refused. */
const MaxEventChars = 8 * 1024 * 1024;
/**
 * Most characters of an answer's text, refusal and tool-call arguments together: far past any
 * model's output limit, so only an endpoint streaming without end meets it (the stall timer
 * does not, as long as its events keep coming).
 */
const MaxAnswerChars = 16 * 1024 * 1024;
/** Highest choice or tool-call index taken from a chunk (the arrays are indexed by it). */
const MaxIndex = 1023;

/**
 * Streamed chat completions over undici's `request` on one keep-alive agent, parsed with
 * `eventsource-parser` and assembled here, in place of the `openai` SDK's
 * `chat.completions.stream` helper. Chosen by measure (`pnpm bench:http-client`, bench/README
 * "a chat stream without the SDK"): the SDK's request building, web-stream adapter and stream
 * helper cost 0.28–0.36 ms of client CPU per three-chunk answer on the dev machine once warm,
 * this client 0.085–0.088; and the SDK was the largest library share of the gateway's main
 * thread per text-only answer (bench:e2e `--cpu-prof`: 17.5 % in the SDK, 6.6 % in the
 * `fetch` adapter under it).
 *
 * The SDK stays what the rest of the gateway knows: failures come out as its error classes,
 * built the way its client builds them (`APIError.generate` for an error status with the
 * answer's JSON body and headers, `APIConnectionError` around undici's error for no
 * connection, `OpenAIError` for an answer that is not a stream of chunks), so `toEndpointError`
 * and `retry-after` read them unchanged; and the completion is assembled and checked as its
 * `ChatCompletionStream` does (a choice needs a role and a finish reason, a tool call its type,
 * name and arguments; a tool call without an id gets `call_<uuid>`). Time bounds are the
 * caller's, through `signal`: undici's own header and body timeouts are off.
 */
export class ChatStreams {
  readonly #dispatcher: Dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

  async complete(call: ChatStreamRequest): Promise<ChatCompletion> {
    const { signal } = call;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(chatUrl(call.baseUrl), {
        method: "POST",
        headers: requestHeaders(call.apiKey),
        body: JSON.stringify(call.params),
        signal,
        dispatcher: this.#dispatcher,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new (openaiSdk().APIConnectionError)({ cause: asError(error) });
    }
    const { statusCode, body } = response;
    if (statusCode < 200 || statusCode > 299) {
      const text = await errorText(body, signal);
      const json = parseJson(text);
      throw openaiSdk().APIError.generate(
        statusCode,
        json,
        json === undefined ? text : undefined,
        responseHeaders(response.headers),
      );
    }
    const completion = new CompletionSnapshot(call.onContent, response.headers);
    let failure: Error | undefined;
    const parser = createParser({
      maxBufferSize: MaxEventChars,
      onEvent: (event) => {
        if (failure !== undefined) return;
        call.onEvent();
        failure = completion.add(event);
      },
      onError: (error) => {
        // Unknown fields are skipped, as the SDK's reader does; only an endless event fails.
        if (error.type === "max-buffer-size-exceeded") {
          failure ??= new (openaiSdk().OpenAIError)(
            `an event of the stream is over ${MaxEventChars} characters`,
          );
        }
      },
    });
    body.setEncoding("utf8");
    try {
      for await (const text of body as AsyncIterable<string>) {
        parser.feed(text);
        if (failure !== undefined) break;
      }
    } catch (error) {
      if (signal.aborted) throw error;
      throw new (openaiSdk().OpenAIError)(asError(error).message);
    } finally {
      body.destroy();
    }
    if (failure !== undefined) throw failure;
    return completion.finish();
  }
}

/** The SDK's URL join: one slash between the base URL and the path. */
function chatUrl(baseUrl: string): string {
  return `${baseUrl.endsWith("/") ? baseUrl.slice(0, -1) : baseUrl}/chat/completions`;
}

function requestHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    accept: "application/json",
    "content-type": "application/json",
  };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}

/** undici's response headers as the `Headers` the SDK's errors carry (`retry-after`, request id). */
function responseHeaders(raw: Dispatcher.ResponseData["headers"]): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/** The first {@link MaxErrorBodyBytes} of an error answer's body, as text. */
async function errorText(
  body: Dispatcher.ResponseData["body"],
  signal: AbortSignal,
): Promise<string> {
  const pieces: Buffer[] = [];
  let size = 0;
  try {
    for await (const piece of body as AsyncIterable<Buffer>) {
      pieces.push(piece);
      size += piece.length;
      if (size >= MaxErrorBodyBytes) break;
    }
  } catch (error) {
    if (signal.aborted) throw error;
    return asError(error).message;
  } finally {
    body.destroy();
  }
  return Buffer.concat(pieces).subarray(0, MaxErrorBodyBytes).toString("utf8");
}

function parseJson(text: string): object | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A choice as it is assembled; checked and completed by `finish`. */
interface ChoiceSnapshot {
  index: number;
  finish_reason: ChatCompletion.Choice["finish_reason"] | null;
  logprobs: null;
  message: {
    role?: "assistant";
    content?: string;
    refusal?: string;
    tool_calls?: Partial<Mutable<ChatCompletionMessageFunctionToolCall>>[];
  };
}

/**
 * The answer as its chunks arrive, the way the SDK's `ChatCompletionStream` accumulates it: the
 * first chunk's fields, then those of every later chunk with an id (the last one carries the
 * usage; unlike the SDK, a chunk without an id still gives its usage), and per choice the role, the text and refusal appended, and the tool calls by index
 * with their arguments appended.
 */
class CompletionSnapshot {
  #base: Record<string, unknown> | undefined;
  readonly #choices: ChoiceSnapshot[] = [];
  readonly #onContent: (piece: string) => void;
  /** The answer's headers, for the error an error object inside the stream becomes. */
  readonly #headers: Dispatcher.ResponseData["headers"];
  #done = false;
  #chars = 0;

  constructor(onContent: (piece: string) => void, headers: Dispatcher.ResponseData["headers"]) {
    this.#onContent = onContent;
    this.#headers = headers;
  }

  /** Takes one event of the stream; answers the error that ends it, if it does. */
  add(event: EventSourceMessage): Error | undefined {
    if (this.#done) return undefined;
    if (event.data.startsWith("[DONE]")) {
      this.#done = true;
      return undefined;
    }
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch (error) {
      return new (openaiSdk().OpenAIError)(
        `an event of the stream is not JSON: ${asError(error).message}`,
      );
    }
    if (typeof data !== "object" || data === null) {
      return new (openaiSdk().OpenAIError)("an event of the stream is not a chunk");
    }
    const { error, choices, ...rest } = data as Record<string, unknown>;
    if (error)
      return new (openaiSdk().APIError)(
        undefined,
        error,
        undefined,
        responseHeaders(this.#headers),
      );
    if (this.#base === undefined) this.#base = rest;
    else if (rest.id) Object.assign(this.#base, rest);
    // A server whose chunks carry no id (OpenVINO's, Google's in 2025) still reports usage:
    // where the SDK would drop it, every call would count 0 tokens and the budget nothing.
    else if (rest.usage) this.#base.usage = rest.usage;
    if (!Array.isArray(choices)) return undefined;
    for (const choice of choices as ChatCompletionChunk.Choice[]) {
      const failure = this.#addChoice(choice);
      if (failure !== undefined) return failure;
    }
    return undefined;
  }

  #addChoice(chunk: ChatCompletionChunk.Choice): Error | undefined {
    const { index, delta, finish_reason } = chunk;
    if (!isIndex(index)) return badIndex("choice", index);
    let choice = this.#choices[index];
    if (choice === undefined) {
      choice = { index, finish_reason: null, logprobs: null, message: {} };
      this.#choices[index] = choice;
    }
    if (finish_reason) choice.finish_reason = finish_reason;
    if (!delta) return undefined;
    const { message } = choice;
    this.#chars += textLength(delta.content) + textLength(delta.refusal);
    for (const call of delta.tool_calls ?? []) this.#chars += textLength(call.function?.arguments);
    if (this.#chars > MaxAnswerChars) {
      return new (openaiSdk().OpenAIError)(`the answer is over ${MaxAnswerChars} characters`);
    }
    if (delta.role) message.role = delta.role as "assistant";
    if (delta.refusal) message.refusal = (message.refusal ?? "") + delta.refusal;
    if (delta.content) {
      message.content = (message.content ?? "") + delta.content;
      if (message.role === "assistant") this.#onContent(delta.content);
    }
    for (const { index: at, id, type, function: fn } of delta.tool_calls ?? []) {
      if (!isIndex(at)) return badIndex("tool call", at);
      message.tool_calls ??= [];
      let call = message.tool_calls[at];
      if (call === undefined) {
        call = {};
        message.tool_calls[at] = call;
      }
      if (id) call.id = id;
      if (type) call.type = type;
      if (fn) call.function ??= { name: fn.name ?? "", arguments: "" };
      if (fn?.name && call.function) call.function.name = fn.name;
      if (fn?.arguments && call.function) call.function.arguments += fn.arguments;
    }
    return undefined;
  }

  /** The completion, or the SDK's error for what the stream left out. */
  finish(): ChatCompletion {
    const { OpenAIError } = openaiSdk();
    if (this.#base === undefined) throw new OpenAIError("request ended without sending any chunks");
    const choices = this.#choices.map(({ message, finish_reason, index, logprobs }) => {
      if (!finish_reason) throw new OpenAIError(`missing finish_reason for choice ${index}`);
      if (!message.role) throw new OpenAIError(`missing role for choice ${index}`);
      // Made well-formed once whole (a pair's halves may come in two chunks): half of a pair
      // stored in the history would be invalid JSON in every later request of the session.
      const answer: ChatCompletion.Choice["message"] = {
        role: message.role,
        content: message.content === undefined ? null : wellFormed(message.content),
        refusal: message.refusal === undefined ? null : wellFormed(message.refusal),
      };
      if (message.tool_calls) {
        answer.tool_calls = Array.from(message.tool_calls, (call, at) => {
          const missing = (what: string) =>
            new OpenAIError(`missing choices[${index}].tool_calls[${at}].${what}`);
          if (call?.type == null) throw missing("type");
          if (call.function?.name == null) throw missing("function.name");
          return {
            id: call.id || `call_${randomUUID()}`,
            type: call.type,
            function: {
              name: wellFormed(call.function.name),
              arguments: wellFormed(call.function.arguments),
            },
          };
        });
      }
      return { index, finish_reason, logprobs, message: answer };
    });
    return { ...this.#base, object: "chat.completion", choices } as unknown as ChatCompletion;
  }
}

function textLength(value: unknown): number {
  return typeof value === "string" ? value.length : 0;
}

function isIndex(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MaxIndex;
}

function badIndex(what: string, value: unknown): Error {
  return new (openaiSdk().OpenAIError)(
    `a chunk's ${what} index is ${JSON.stringify(value)}, expected 0 to ${MaxIndex}`,
  );
}
