import { MediagateError } from "@mediagate/io";
import type { APIConnectionError, APIError } from "openai";
import { loadedOpenaiSdk } from "./openai-sdk.js";
import { safeHead } from "./tools-text.js";

/** How a request to the model endpoint failed. */
export type OpenAIFailureKind = "http" | "connection" | "timeout" | "bad_response";

/** Longest endpoint-provided detail kept in a message (error bodies can be whole HTML pages). */
const MaxDetailChars = 300;

/**
 * The model endpoint failed: it answered an error status (after the chain's retries of 429
 * and 5xx), could not be reached, did not answer in time, or answered something that is
 * not a chat completion. Names the endpoint by host only; never carries the API key (any
 * echo of it in the endpoint's own text is redacted) nor the SDK error as `cause`.
 */
export class OpenAIEndpointError extends MediagateError {
  override readonly name = "OpenAIEndpointError";
  readonly code = "MG_AGENT_ENDPOINT_FAILED";
  readonly kind: OpenAIFailureKind;
  /** `host[:port]` of the base URL, without credentials or path. */
  readonly host: string;
  readonly model: string;
  /** HTTP status for `kind: "http"`. */
  readonly status: number | undefined;
  /** The endpoint's request id (`x-request-id`), when it sent one. */
  readonly requestId: string | undefined;
  /** The endpoint refused the request as longer than the model's context (`isContextLengthError`). */
  readonly contextOverflow: boolean;

  constructor(fields: {
    kind: OpenAIFailureKind;
    host: string;
    model: string;
    detail: string;
    status?: number | undefined;
    requestId?: string | undefined;
    contextOverflow?: boolean | undefined;
  }) {
    const what =
      fields.kind === "http"
        ? `answered HTTP ${fields.status ?? "?"}`
        : fields.kind === "timeout"
          ? "did not answer in time"
          : fields.kind === "connection"
            ? "could not be reached"
            : "sent an unusable answer";
    const detail = fields.detail.trim();
    super(
      `model endpoint ${fields.host} ${what} (model ${JSON.stringify(fields.model)})` +
        (detail ? `: ${detail}` : ""),
    );
    this.kind = fields.kind;
    this.host = fields.host;
    this.model = fields.model;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.contextOverflow = fields.contextOverflow === true;
  }
}

/** Phase of the turn that was running when it was aborted. */
export type AbortPhase = "model" | "tool";

/**
 * The turn was aborted through its signal (`/stop`, `/reset`, shutdown). Nothing of the
 * turn was written to the history. `cause` is the signal's reason.
 */
export class OpenAITurnAbortedError extends MediagateError {
  override readonly name = "OpenAITurnAbortedError";
  readonly code = "MG_AGENT_TURN_ABORTED";
  readonly sessionId: string;
  readonly phase: AbortPhase;
  /** Tool rounds completed before the abort. */
  readonly toolRounds: number;

  constructor(fields: {
    sessionId: string;
    phase: AbortPhase;
    toolRounds: number;
    reason: unknown;
  }) {
    super(`turn of session ${fields.sessionId} aborted during the ${fields.phase} phase`, {
      cause: fields.reason,
    });
    this.sessionId = fields.sessionId;
    this.phase = fields.phase;
    this.toolRounds = fields.toolRounds;
  }
}

/** An `OpenAIAgent` option is missing or malformed; the message says how to fix it. */
export class OpenAIAgentOptionsError extends MediagateError {
  override readonly name = "OpenAIAgentOptionsError";
  readonly code = "MG_AGENT_OPTION_INVALID";
  readonly option: string;

  constructor(option: string, message: string) {
    super(`openai agent option ${option}: ${message}`);
    this.option = option;
  }
}

/**
 * `host[:port]` of a base URL. Credentials and path never appear; an unparsable URL gives
 * `"invalid-url"` rather than echoing it (it might embed a secret).
 */
export function endpointHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host || "invalid-url";
  } catch {
    return "invalid-url";
  }
}

/** Replaces every occurrence of `secret` (when it is long enough to matter) in `text`. */
export function redactSecret(text: string, secret: string): string {
  return secret.length >= 4 ? text.split(secret).join("[redacted]") : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function errorDetail(error: APIError): string {
  const body: unknown = error.error;
  if (isRecord(body) && typeof body.message === "string") return body.message;
  return error.message.replace(/^\d{3}\s*/, "");
}

/**
 * The system's or undici's code of a connection failure: the cause itself when the client is
 * undici's `request` (chat-stream.ts), the cause's cause when it is the platform `fetch`
 * (`TypeError("fetch failed")` around it; the transcription client's).
 */
function connectionDetail(error: APIConnectionError): string {
  const cause: unknown = error.cause;
  if (!isRecord(cause)) return error.message;
  if (typeof cause.code === "string") return cause.code;
  const inner: unknown = cause.cause;
  if (isRecord(inner) && typeof inner.code === "string") return inner.code;
  return typeof cause.message === "string" ? cause.message : error.message;
}

/**
 * Translates an SDK error into an {@link OpenAIEndpointError}; `undefined` for an abort by
 * the caller and for errors that are not the SDK's (those are bugs and stay as they are).
 */
export function toEndpointError(
  error: unknown,
  context: { host: string; model: string; apiKey: string | undefined },
): OpenAIEndpointError | undefined {
  const sdk = loadedOpenaiSdk();
  if (sdk === undefined) return undefined;
  const {
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    APIUserAbortError,
    OpenAIError,
  } = sdk;
  if (error instanceof OpenAIError && !(error instanceof APIError)) {
    // The SDK's stream reader: the endpoint answered something that is not a stream of chunks.
    return new OpenAIEndpointError({
      kind: "bad_response",
      host: context.host,
      model: context.model,
      detail: safeHead(redactSecret(error.message, context.apiKey ?? ""), MaxDetailChars),
    });
  }
  if (!(error instanceof APIError) || error instanceof APIUserAbortError) return undefined;
  // Cut without splitting a surrogate pair: the detail reaches the chat (a compaction's
  // notice, /compact's answer), and Telegram refuses text holding half of one.
  const clean = (text: string) =>
    safeHead(redactSecret(text, context.apiKey ?? "").replace(/\s+/g, " "), MaxDetailChars);
  const base = { host: context.host, model: context.model };
  if (error instanceof APIConnectionTimeoutError) {
    return new OpenAIEndpointError({ ...base, kind: "timeout", detail: "" });
  }
  if (error instanceof APIConnectionError) {
    return new OpenAIEndpointError({
      ...base,
      kind: "connection",
      detail: clean(connectionDetail(error)),
    });
  }
  return new OpenAIEndpointError({
    ...base,
    kind: "http",
    status: error.status,
    requestId: error.requestID ?? undefined,
    detail: clean(errorDetail(error)),
    contextOverflow: isContextLengthError(error),
  });
}

/**
 * The server refused a request as longer than the model's context: OpenAI's 400 with code
 * `context_length_exceeded`, or a compatible server's 400 saying so in words.
 */
export function isContextLengthError(error: unknown): boolean {
  const sdk = loadedOpenaiSdk();
  if (sdk === undefined || !(error instanceof sdk.APIError) || error.status !== 400) return false;
  if (error.code === "context_length_exceeded") return true;
  return /context length|context window|maximum context|too many tokens/i.test(error.message);
}
