import type { Sleep } from "@mediagate/io";
import type { Logger } from "pino";
import type { BudgetSettings, ModelSettings, TranscriptionSettings } from "../config/types.js";
import { Defaults } from "../defaults.js";
import type { StateStore } from "../state/state-store.js";
import { endpointHost, OpenAIAgentOptionsError } from "./openai-errors.js";

/**
 * Options of `OpenAIAgent`. The models are either `models` (with `defaultModel`, `fallback`)
 * or the single-model `baseUrl`, `model` and `apiKey`, which make a one-entry list.
 */
export interface OpenAIAgentOptions {
  /** Base URL of the OpenAI-compatible API, e.g. `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined;
  /**
   * Sent as `Authorization: Bearer …`; never logged nor put into errors. Absent: no
   * `Authorization` header at all (a local server such as Ollama or vLLM that needs none).
   */
  readonly apiKey?: string | undefined;
  readonly model?: string | undefined;
  /**
   * The single-model form's context size in tokens (with `models`, each entry has its own);
   * the conversation is kept under a share of it (`Defaults.compaction.budgetShare`) by
   * compaction. Default: as `contextTokensOf` decides (the model's known size, else
   * `Defaults.models.contextTokens`).
   */
  readonly contextTokens?: number | undefined;
  /** The named endpoints (docs/models-and-usage.md); replaces `baseUrl`/`model`/`apiKey`. */
  readonly models?: readonly ModelSettings[] | undefined;
  /** The entry a session without a `/model` pick uses. Default: the first. */
  readonly defaultModel?: string | undefined;
  /** Tried in order after the session's model fails (docs/models-and-usage.md, "Fallback"). */
  readonly fallback?: readonly string[] | undefined;
  /** The profile's daily limit; absent: none. */
  readonly budget?: BudgetSettings | undefined;
  /** The wait between retries of a model call. Default: a timer. */
  readonly sleep?: Sleep | undefined;
  /** The profile's state database; history is kept per session id. */
  readonly store: StateStore;
  readonly logger: Logger;
  /**
   * Model answers whose tool calls are executed, per turn. Default:
   * `Defaults.openaiAgent.maxToolRounds`.
   */
  readonly maxToolRounds?: number;
  /** Extra instructions, appended to the built-in sandbox/MEDIA prompt. */
  readonly systemPrompt?: string | undefined;
  /** Time limit of one model request. Default: `Defaults.openaiAgent.timeoutMs`. */
  readonly timeoutMs?: number;
  /**
   * SDK retries of 408/409/429/5xx, timeouts and connection errors, honouring the
   * endpoint's `retry-after(-ms)`. Default: `Defaults.openaiAgent.maxRetries`.
   */
  readonly maxRetries?: number;
  /** Time limit of one `terminal` command. Default: `Defaults.openaiAgent.toolTimeoutMs`. */
  readonly toolTimeoutMs?: number;
  /**
   * Cap on a tool result sent back to the model, in chars (middle dropped). Default:
   * `Defaults.openaiAgent.maxToolOutputChars`.
   */
  readonly maxToolOutputChars?: number;
  /** Cap on the bytes `read_file` reads. Default: `Defaults.openaiAgent.readMaxBytes`. */
  readonly readMaxBytes?: number;
  /**
   * Images the user sends are also passed as image inputs (`image_url` parts), each up to
   * `imageMaxBytes`. Default false: the model gets the file's line only.
   */
  readonly vision?: boolean | undefined;
  /** Largest image passed as an image input. Default: `Defaults.openaiAgent.imageMaxBytes`. */
  readonly imageMaxBytes?: number;
  /** All image inputs of one message together. Default: `Defaults.openaiAgent.imagesMaxBytes`. */
  readonly imagesMaxBytes?: number;
  /** Voice notes and audio are transcribed at this OpenAI-compatible endpoint. */
  readonly transcription?: TranscriptionSettings | undefined;
  /**
   * Largest audio file sent for transcription. Default (OpenAI's limit):
   * `Defaults.openaiAgent.transcriptionMaxBytes`.
   */
  readonly transcriptionMaxBytes?: number;
}

/** Defaults of the optional numeric {@link OpenAIAgentOptions}. */
export const OpenAIAgentDefaults = Defaults.openaiAgent satisfies Partial<OpenAIAgentOptions>;

/** The limits an agent runs with, defaults applied and checked. */
export type OpenAIAgentLimits = { readonly [K in keyof typeof OpenAIAgentDefaults]: number };

function checkCount(option: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new OpenAIAgentOptionsError(option, `expected an integer ≥ ${min}, got ${value}`);
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const protocol = new URL(value).protocol;
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

function checkTranscription(settings: TranscriptionSettings): void {
  if (!isHttpUrl(settings.baseUrl)) {
    throw new OpenAIAgentOptionsError(
      "transcription.baseUrl",
      "expected an http(s) URL such as https://api.openai.com/v1",
    );
  }
  if (settings.model.trim() === "") {
    throw new OpenAIAgentOptionsError(
      "transcription.model",
      "set the transcription model the endpoint serves (e.g. whisper-1)",
    );
  }
  if (settings.apiKey === "") {
    throw new OpenAIAgentOptionsError(
      "transcription.apiKey",
      "set a non-empty API key, or leave it out for an endpoint that needs none",
    );
  }
}

/**
 * Applies {@link OpenAIAgentDefaults} and checks every option, throwing
 * {@link OpenAIAgentOptionsError} with a message that says how to fix it.
 */
export function resolveOpenAIOptions(
  options: Omit<OpenAIAgentOptions, "store" | "logger">,
): OpenAIAgentLimits {
  if (options.models === undefined) {
    checkEndpoint(
      { baseUrl: options.baseUrl ?? "", model: options.model ?? "", apiKey: options.apiKey },
      "",
    );
    if (options.contextTokens !== undefined) checkCount("contextTokens", options.contextTokens, 1);
  } else {
    if (options.contextTokens !== undefined) {
      throw new OpenAIAgentOptionsError(
        "contextTokens",
        "set contextTokens on each models entry: with models, every entry has its own size",
      );
    }
    if (options.models.length === 0) {
      throw new OpenAIAgentOptionsError("models", "list at least one model entry");
    }
    for (const [index, entry] of options.models.entries()) {
      checkEndpoint(entry, `models[${index}].`);
      if (entry.contextTokens !== undefined) {
        checkCount(`models[${index}].contextTokens`, entry.contextTokens, 1);
      }
    }
    const names = options.models.map((entry) => entry.name);
    for (const name of [options.defaultModel ?? names[0]!, ...(options.fallback ?? [])]) {
      if (!names.includes(name)) {
        throw new OpenAIAgentOptionsError(
          "models",
          `no entry is named ${JSON.stringify(name)} (entries: ${names.join(", ")})`,
        );
      }
    }
  }
  const limits: OpenAIAgentLimits = {
    maxToolRounds: options.maxToolRounds ?? OpenAIAgentDefaults.maxToolRounds,
    timeoutMs: options.timeoutMs ?? OpenAIAgentDefaults.timeoutMs,
    maxRetries: options.maxRetries ?? OpenAIAgentDefaults.maxRetries,
    toolTimeoutMs: options.toolTimeoutMs ?? OpenAIAgentDefaults.toolTimeoutMs,
    maxToolOutputChars: options.maxToolOutputChars ?? OpenAIAgentDefaults.maxToolOutputChars,
    readMaxBytes: options.readMaxBytes ?? OpenAIAgentDefaults.readMaxBytes,
    imageMaxBytes: options.imageMaxBytes ?? OpenAIAgentDefaults.imageMaxBytes,
    imagesMaxBytes: options.imagesMaxBytes ?? OpenAIAgentDefaults.imagesMaxBytes,
    transcriptionMaxBytes:
      options.transcriptionMaxBytes ?? OpenAIAgentDefaults.transcriptionMaxBytes,
  };
  checkCount("maxToolRounds", limits.maxToolRounds, 0);
  checkCount("maxRetries", limits.maxRetries, 0);
  checkCount("timeoutMs", limits.timeoutMs, 1);
  checkCount("toolTimeoutMs", limits.toolTimeoutMs, 1);
  checkCount("maxToolOutputChars", limits.maxToolOutputChars, 1);
  checkCount("readMaxBytes", limits.readMaxBytes, 1);
  checkCount("imageMaxBytes", limits.imageMaxBytes, 1);
  checkCount("imagesMaxBytes", limits.imagesMaxBytes, 1);
  checkCount("transcriptionMaxBytes", limits.transcriptionMaxBytes, 1);
  if (options.transcription !== undefined) checkTranscription(options.transcription);
  return limits;
}

/** Checks one endpoint's URL, model and key; `prefix` names its place (`models[1].`). */
function checkEndpoint(
  entry: { baseUrl: string; model: string; apiKey?: string | undefined },
  prefix: string,
): void {
  let protocol = "";
  try {
    protocol = new URL(entry.baseUrl).protocol;
  } catch {
    // reported below, without echoing the value (it may embed a secret)
  }
  if (
    (protocol !== "http:" && protocol !== "https:") ||
    endpointHost(entry.baseUrl) === "invalid-url"
  ) {
    throw new OpenAIAgentOptionsError(
      `${prefix}baseUrl`,
      "expected an http(s) URL such as https://api.openai.com/v1",
    );
  }
  if (entry.model.trim() === "") {
    throw new OpenAIAgentOptionsError(`${prefix}model`, "set the model name the endpoint serves");
  }
  if (entry.apiKey === "") {
    throw new OpenAIAgentOptionsError(
      `${prefix}apiKey`,
      "set a non-empty API key, or leave it out for an endpoint that needs none",
    );
  }
}

/** The models of an agent: the entries, the default and the fallback names. */
export interface AgentModels {
  readonly models: readonly ModelSettings[];
  readonly defaultModel: string;
  readonly fallback: readonly string[];
}

/**
 * The models `options` name: `models` as given, or the single-model form as one entry named
 * after its model, with its `contextTokens`. Call after {@link resolveOpenAIOptions} checked them.
 */
export function agentModelsOf(
  options: Pick<
    OpenAIAgentOptions,
    "models" | "defaultModel" | "fallback" | "baseUrl" | "model" | "apiKey" | "contextTokens"
  > & { readonly timeoutMs?: number | undefined },
): AgentModels {
  const models: readonly ModelSettings[] = options.models ?? [
    {
      name: options.model ?? "",
      baseUrl: options.baseUrl ?? "",
      model: options.model ?? "",
      apiKey: options.apiKey,
      contextTokens: options.contextTokens,
    },
  ];
  return {
    models,
    defaultModel: options.defaultModel ?? models[0]!.name,
    fallback: options.fallback ?? [],
  };
}
