import { backoffMs, sleep as realSleep, type Sleep } from "@mediagate/io";
import type {
  ChatCompletion,
  ChatCompletionCreateParamsStreaming,
} from "openai/resources/chat/completions";
import type { Logger } from "pino";
import type { ModelSettings } from "../config/types.js";
import { Defaults } from "../defaults.js";
import { ChatStreams } from "./chat-stream.js";
import { endpointHost, OpenAIEndpointError, toEndpointError } from "./openai-errors.js";
import { loadedOpenaiSdk } from "./openai-sdk.js";

/** A request of the chain: everything but the model and the streaming options it sets. */
export type ChainParams = Omit<
  ChatCompletionCreateParamsStreaming,
  "model" | "stream" | "stream_options"
>;

/** What {@link ModelChain.complete} answers: the completion and the entry that gave it. */
export interface ChainAnswer {
  readonly completion: ChatCompletion;
  readonly entry: ModelSettings;
  /** The failures of the entries tried before it (empty when the first one answered). */
  readonly failures: readonly OpenAIEndpointError[];
}

/**
 * Told each piece of an answer's text as it streams in. A call that already told a piece is
 * neither retried nor handed to the next model when it fails (docs/streaming.md, "When the
 * model fails mid-answer"): the text is in the chat, and a second answer would not continue it.
 */
export type OnContent = (piece: string) => void;

/** Options of {@link ModelChain}. */
export interface ModelChainOptions {
  readonly logger: Logger;
  /** Time limit of one request of an entry without `timeoutMs`. */
  readonly timeoutMs: number;
  /** Retries of one entry: of a 429 within `rateLimitWaitMs`, and of any failure of the last entry. */
  readonly maxRetries: number;
  /** Default: `Defaults.models.rateLimitWaitMs`. */
  readonly rateLimitWaitMs?: number | undefined;
  /** The wait between attempts (tests record it and go on). Default: a timer. */
  readonly sleep?: Sleep | undefined;
}

/**
 * The retry and fallback policy of model calls (docs/models-and-usage.md, "Fallback"). A
 * request of an entry that fails with a 5xx, a timeout or a connection error moves on to the
 * next entry of the chain at once; a 429 is retried on the same entry while its `retry-after` asks for at
 * most `rateLimitWaitMs` (and `maxRetries` allow), then moves on. The last entry of the chain
 * retries like a single model did (`maxRetries`, doubling waits, honouring `retry-after`).
 * Any other error (400, 401, 404: a request or a configuration the next model would not fix
 * either) fails at once.
 *
 * Every request is streamed (`stream_options.include_usage`, so the last chunk carries the
 * usage and the assembled completion has it as a non-streamed one would): the policy above
 * applies to failures before the answer's first piece of text; a failure after it fails the
 * call at once (see {@link OnContent}).
 */
export class ModelChain {
  /** One keep-alive HTTP client for every entry (chat-stream.ts). */
  readonly #streams = new ChatStreams();
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #rateLimitWaitMs: number;
  readonly #sleep: Sleep;

  constructor(options: ModelChainOptions) {
    this.#log = options.logger;
    this.#timeoutMs = options.timeoutMs;
    this.#maxRetries = options.maxRetries;
    this.#rateLimitWaitMs = options.rateLimitWaitMs ?? Defaults.models.rateLimitWaitMs;
    this.#sleep = options.sleep ?? realSleep;
  }

  /**
   * Asks the entries of `chain` in order until one answers, streaming each answer's text to
   * `onContent`. `signal` aborts the request in flight (its abort error comes out as thrown,
   * for the caller to see `signal.aborted`).
   */
  async complete(
    chain: readonly ModelSettings[],
    params: ChainParams,
    signal: AbortSignal,
    onContent?: OnContent,
  ): Promise<ChainAnswer> {
    const failures: OpenAIEndpointError[] = [];
    for (const [index, entry] of chain.entries()) {
      const last = index === chain.length - 1;
      const outcome = await this.#attempt(entry, params, signal, last, onContent);
      if ("completion" in outcome) return { completion: outcome.completion, entry, failures };
      failures.push(outcome.failure);
      if (last) throw outcome.failure;
      this.#log.warn(
        { err: outcome.failure, model: entry.name, next: chain[index + 1]?.name },
        "model failed; trying the next one",
      );
    }
    throw new RangeError("ModelChain.complete needs at least one model");
  }

  async #attempt(
    entry: ModelSettings,
    params: ChainParams,
    signal: AbortSignal,
    last: boolean,
    onContent: OnContent | undefined,
  ): Promise<{ completion: ChatCompletion } | { failure: OpenAIEndpointError }> {
    for (let attempt = 1; ; attempt++) {
      let streamed = false;
      // One bound for the whole request: no answer's headers, or no event of its stream, for
      // that long abandons it as a timeout.
      const stalled = new AbortController();
      const stallMs = entry.timeoutMs ?? this.#timeoutMs;
      // Re-armed by each event in place (`refresh`): a fresh timer per chunk cost a timer
      // object and two list operations for every piece of every answer.
      const timer = setTimeout(() => stalled.abort(), stallMs);
      try {
        const completion = await this.#streams.complete({
          baseUrl: entry.baseUrl,
          apiKey: entry.apiKey,
          params: {
            ...params,
            model: entry.model,
            stream: true,
            stream_options: { include_usage: true },
          },
          signal: AbortSignal.any([signal, stalled.signal]),
          onEvent: () => timer.refresh(),
          onContent: (piece) => {
            streamed = true;
            onContent?.(piece);
          },
        });
        return { completion };
      } catch (error) {
        if (signal.aborted) throw error;
        const failure = stalled.signal.aborted
          ? new OpenAIEndpointError({
              kind: "timeout",
              host: endpointHost(entry.baseUrl),
              model: entry.model,
              detail: "",
            })
          : toEndpointError(error, {
              host: endpointHost(entry.baseUrl),
              model: entry.model,
              apiKey: entry.apiKey,
            });
        if (failure === undefined) throw error;
        if (streamed || !canFallBack(failure)) throw failure;
        const retryAfter = retryAfterMs(error);
        const retries = attempt <= this.#maxRetries;
        const rateLimited = failure.status === 429;
        const waitable = retryAfter === undefined || retryAfter <= this.#rateLimitWaitMs;
        if (retries && (last || (rateLimited && waitable))) {
          const waitMs = backoffMs(
            attempt,
            { baseMs: Defaults.models.retryBaseMs, maxMs: Defaults.models.retryMaxMs },
            { retryAfterMs: waitable ? retryAfter : undefined },
          );
          this.#log.info({ model: entry.name, status: failure.status, waitMs }, "model retry");
          await this.#sleep(waitMs, signal);
          if (signal.aborted) throw error;
          continue;
        }
        return { failure };
      } finally {
        clearTimeout(timer);
      }
    }
  }
}

/** A failure another model may not have: 5xx, 408, 409, 429, a timeout, no connection. */
export function canFallBack(failure: OpenAIEndpointError): boolean {
  if (failure.kind !== "http") return true;
  const status = failure.status ?? 0;
  return status >= 500 || status === 408 || status === 409 || status === 429;
}

/** The wait an error response asked for (`retry-after-ms`, `retry-after` seconds or date). */
function retryAfterMs(error: unknown): number | undefined {
  const sdk = loadedOpenaiSdk();
  if (sdk === undefined || !(error instanceof sdk.APIError) || error.headers === undefined)
    return undefined;
  const ms = Number(error.headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const after = error.headers.get("retry-after");
  if (after === null) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
