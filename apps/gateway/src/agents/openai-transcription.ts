import { MediagateError } from "@mediagate/io";
import type OpenAI from "openai";
import type { TranscriptionSettings } from "../config/types.js";
import { endpointHost, type OpenAIEndpointError, toEndpointError } from "./openai-errors.js";
import { openaiSdk } from "./openai-sdk.js";

/** Handed to the SDK when no API key is configured; kept off the wire by a null header. */
const KeylessPlaceholder = "no-api-key";

/** The transcription endpoint failed; `reason` is a sentence for the chat (host, status). */
export class TranscriptionError extends MediagateError {
  override readonly name = "TranscriptionError";
  readonly code = "MG_TRANSCRIPTION_FAILED";
  constructor(
    readonly reason: string,
    options?: { cause?: OpenAIEndpointError },
  ) {
    super(reason, options);
  }
}

/** One file to transcribe: its name and type as the endpoint is told, and its bytes, streamed. */
export interface TranscriptionSource {
  readonly name: string;
  readonly mime: string;
  readonly bytes: AsyncIterable<Uint8Array>;
}

/**
 * Voice notes and audio to text, through an OpenAI-compatible `/audio/transcriptions` endpoint
 * (`agent.transcription`, docs/inbound-media.md) with the official SDK. The file is streamed
 * into the multipart request, never held whole. Not retried: a streamed body cannot be sent
 * twice, and a failure costs only the transcript (the agent still gets the file).
 */
export class Transcriber {
  readonly #client: OpenAI;
  readonly #model: string;
  readonly #host: string;
  readonly #apiKey: string | undefined;

  constructor(settings: TranscriptionSettings, options: { timeoutMs: number }) {
    this.#model = settings.model;
    this.#apiKey = settings.apiKey;
    this.#host = endpointHost(settings.baseUrl);
    this.#client = new (openaiSdk().OpenAI)({
      baseURL: settings.baseUrl,
      apiKey: settings.apiKey ?? KeylessPlaceholder,
      ...(settings.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
      // Explicit nulls keep the SDK from reading OPENAI_* variables (config reads env, once).
      organization: null,
      project: null,
      webhookSecret: null,
      adminAPIKey: null,
      timeout: options.timeoutMs,
      maxRetries: 0,
      logLevel: "off",
    });
  }

  /** The endpoint's `host[:port]`, for logs. */
  get host(): string {
    return this.#host;
  }

  /**
   * The transcript of `source`. Rejects with a {@link TranscriptionError} when the endpoint
   * fails; an abort through `signal` rejects with the SDK's abort error.
   */
  async transcribe(source: TranscriptionSource, signal: AbortSignal): Promise<string> {
    try {
      const result = await this.#client.audio.transcriptions.create(
        {
          file: openaiSdk().toStreamingFile(source.bytes, source.name, { type: source.mime }),
          model: this.#model,
        },
        { signal },
      );
      if (typeof result.text !== "string") {
        throw new TranscriptionError(`${this.#host} answered without a transcript`);
      }
      return result.text.trim();
    } catch (error) {
      if (error instanceof TranscriptionError || signal.aborted) throw error;
      const endpoint = toEndpointError(error, {
        host: this.#host,
        model: this.#model,
        apiKey: this.#apiKey,
      });
      if (endpoint === undefined) {
        throw new TranscriptionError(
          `the file could not be sent to ${this.#host} (${error instanceof Error ? error.message : String(error)})`,
        );
      }
      throw new TranscriptionError(reasonOf(endpoint), { cause: endpoint });
    }
  }
}

function reasonOf(error: OpenAIEndpointError): string {
  switch (error.kind) {
    case "http":
      return `${error.host} answered HTTP ${error.status ?? "?"}`;
    case "timeout":
      return `${error.host} did not answer in time`;
    case "connection":
      return `${error.host} could not be reached`;
    case "bad_response":
      return `${error.host} sent an unusable answer`;
  }
}
