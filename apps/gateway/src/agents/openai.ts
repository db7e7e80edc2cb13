import OpenAI, { type ClientOptions } from "openai";
import type { ChatCompletion, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { CompletionUsage } from "openai/resources/completions";
import type { Logger } from "pino";
import type { StateStore } from "../state/store.js";
import type { ChatMessage, ChatToolCall } from "../state/types.js";
import {
  type AbortPhase,
  endpointHost,
  OpenAIEndpointError,
  OpenAITurnAbortedError,
  toEndpointError,
} from "./openai-errors.js";
import { functionToolCalls, toAssistantMessage, trimToTurnBoundary } from "./openai-history.js";
import {
  type OpenAIAgentLimits,
  type OpenAIAgentOptions,
  resolveOpenAIOptions,
} from "./openai-options.js";
import { buildSystemPrompt } from "./openai-prompt.js";
import { Transcriber } from "./openai-transcription.js";
import { buildUserTurn } from "./openai-user-turn.js";
import { executeToolCall, TOOL_DEFINITIONS, type ToolCallOutcome } from "./tools.js";
import type { Agent, AgentTurnInput, AgentTurnResult, TokenUsage } from "./types.js";

/** Tool calls beyond this many in one model answer are answered "not executed". */
const MaxCallsPerRound = 16;

const NotExecutedLimit = "not executed: the tool-round limit of this turn was reached";
const NotExecutedTooMany = `not executed: at most ${MaxCallsPerRound} tool calls per answer`;
const EmptyReply = "(the model sent an empty reply)";
/** Handed to the SDK when no API key is configured; never sent (see `#clientOptions`). */
const KeylessPlaceholder = "no-api-key";

/**
 * The `openai` agent (docs/sessions.md): any OpenAI-compatible chat-completions endpoint, with the
 * tools `terminal`, `read_file` and `write_file` executed in the sandbox through the turn's
 * {@link ToolRunner}, and per-session history in the profile's {@link StateStore}.
 *
 * A turn is: load history → build the user turn (the message, a line per file the user sent,
 * transcripts, image inputs: see `buildUserTurn`) → ask the model → execute its tool calls and send the results
 * back → … until it answers without tool calls. After `maxToolRounds` rounds of tool calls
 * the agent stops asking: further calls are answered "not executed", and the reply is the
 * model's last text plus a note saying the limit was reached.
 *
 * History is written once, when the turn completes (user message, assistant tool calls,
 * tool results, final reply, in one transaction). An aborted or failed turn writes nothing:
 * a half exchange (tool calls without results) would make every later request of the
 * session invalid, and the person sees the turn failed anyway and can ask again.
 *
 * Every request is streamed (`stream_options.include_usage`): each piece of text goes to the
 * turn's `onText` as it arrives (docs/streaming.md), tool calls are assembled from their
 * pieces by the SDK's stream helper, and the usage the endpoint reports is summed into the
 * turn's result. The abort signal of the turn is passed to every request and
 * tool call; an abort rejects with {@link OpenAITurnAbortedError}, an endpoint failure with
 * {@link OpenAIEndpointError} (host, status; never the API key).
 */
export class OpenAIAgent implements Agent {
  readonly kind = "openai" as const;
  readonly #client: OpenAI;
  readonly #store: StateStore;
  readonly #log: Logger;
  readonly #model: string;
  readonly #host: string;
  readonly #apiKey: string | undefined;
  readonly #system: string;
  readonly #settings: OpenAIAgentLimits;
  readonly #vision: boolean;
  readonly #transcriber: Transcriber | undefined;

  constructor(options: OpenAIAgentOptions) {
    const settings = resolveOpenAIOptions(options);
    this.#settings = settings;
    this.#store = options.store;
    this.#model = options.model;
    this.#apiKey = options.apiKey;
    this.#host = endpointHost(options.baseUrl);
    this.#system = buildSystemPrompt(options.systemPrompt);
    this.#log = options.logger.child({
      agent: "openai",
      endpoint: this.#host,
      model: options.model,
    });
    this.#client = new OpenAI(this.#clientOptions(options));
    this.#vision = options.vision === true;
    this.#transcriber =
      options.transcription === undefined
        ? undefined
        : new Transcriber(options.transcription, { timeoutMs: settings.timeoutMs });
  }

  #clientOptions(options: OpenAIAgentOptions): ClientOptions {
    const sdkLog = this.#log.child({ component: "openai-sdk" });
    return {
      baseURL: options.baseUrl,
      // The SDK insists on a key; without one, a placeholder satisfies it and the null
      // header below keeps it off the wire, so a keyless server sees no Authorization at all.
      apiKey: options.apiKey ?? KeylessPlaceholder,
      ...(options.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
      // Explicit nulls keep the SDK from reading OPENAI_* variables (config reads env, once).
      organization: null,
      project: null,
      webhookSecret: null,
      adminAPIKey: null,
      timeout: this.#settings.timeoutMs,
      maxRetries: this.#settings.maxRetries,
      logLevel: "warn",
      logger: {
        error: (message: string) => sdkLog.error(message),
        warn: (message: string) => sdkLog.warn(message),
        info: (message: string) => sdkLog.info(message),
        debug: (message: string) => sdkLog.debug(message),
      },
    };
  }

  /** Runs one turn; see the class documentation for history and abort semantics. */
  async runTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
    const { signal, sessionId } = input;
    const log = this.#log.child({ sessionId });
    let rounds = 0;
    const aborted = (phase: AbortPhase) =>
      new OpenAITurnAbortedError({ sessionId, phase, toolRounds: rounds, reason: signal.reason });
    if (signal.aborted) throw aborted("model");

    const history = trimToTurnBoundary(
      await this.#store.loadHistory(sessionId, this.#settings.historyLimit),
    );
    const user = await buildUserTurn(input.text, input.attachments, {
      vision: this.#vision,
      imageMaxBytes: this.#settings.imageMaxBytes,
      imagesMaxBytes: this.#settings.imagesMaxBytes,
      transcriber: this.#transcriber,
      transcriptionMaxBytes: this.#settings.transcriptionMaxBytes,
      readContainerFile: input.readContainerFile,
      signal,
      log,
    }).catch((error: unknown) => {
      throw signal.aborted ? aborted("model") : error;
    });
    if (signal.aborted) throw aborted("model");
    // History keeps the user turn's text; the request carries its image inputs too.
    const turn: ChatMessage[] = [{ role: "user", content: user.text }];
    const text = new TextPieces(input.onText);
    let usage: TokenUsage | undefined;
    let reply: string;
    for (;;) {
      const conversation: ChatCompletionMessageParam[] = [
        ...history,
        { role: "user", content: user.content },
        ...turn.slice(1),
      ];
      const answer = await this.#complete(conversation, signal, () => aborted("model"), text);
      usage = addUsage(usage, answer.usage);
      const message = answer.message;
      const calls = functionToolCalls(message);
      if (calls.length === 0) {
        reply = withNote(
          message.content,
          answer.cutOff ? "(reply cut off: the model hit its length limit)" : undefined,
        );
        turn.push({ role: "assistant", content: reply });
        break;
      }
      turn.push(toAssistantMessage(message, calls));
      if (rounds >= this.#settings.maxToolRounds) {
        for (const call of calls) turn.push(toolMessage(call, NotExecutedLimit));
        reply = withNote(
          message.content,
          `(Stopped after ${rounds} tool rounds, the limit for one message. Send another message to let me continue.)`,
        );
        turn.push({ role: "assistant", content: reply });
        log.warn({ rounds }, "tool-round limit reached");
        break;
      }
      rounds += 1;
      turn.push(...(await this.#executeRound(calls, input, () => aborted("tool"), log, rounds)));
    }
    await this.#save(sessionId, turn, log);
    return {
      reply,
      ...(user.notices.length === 0 ? {} : { notices: user.notices }),
      ...(usage === undefined ? {} : { usage }),
    };
  }

  /**
   * Executes one answer's tool calls in order, returning their tool messages. An abort, or a
   * tool failure while the signal is aborted (a runner may throw instead of returning an
   * `aborted` result), ends the turn.
   */
  async #executeRound(
    calls: readonly ChatToolCall[],
    input: AgentTurnInput,
    aborted: () => OpenAITurnAbortedError,
    log: Logger,
    round: number,
  ): Promise<ChatMessage[]> {
    const { signal, tools } = input;
    const results: ChatMessage[] = [];
    for (const [index, call] of calls.entries()) {
      if (index >= MaxCallsPerRound) {
        results.push(toolMessage(call, NotExecutedTooMany));
        continue;
      }
      if (signal.aborted) throw aborted();
      let outcome: ToolCallOutcome;
      try {
        outcome = await executeToolCall(call, tools, {
          signal,
          timeoutMs: this.#settings.toolTimeoutMs,
          maxOutputChars: this.#settings.maxToolOutputChars,
          readMaxBytes: this.#settings.readMaxBytes,
        });
      } catch (error) {
        if (signal.aborted) throw aborted();
        throw error;
      }
      if (signal.aborted) throw aborted();
      log.debug({ round, tool: call.function.name, ok: outcome.ok }, "tool call done");
      results.push(toolMessage(call, outcome.content));
    }
    return results;
  }

  async #complete(
    conversation: readonly ChatCompletionMessageParam[],
    signal: AbortSignal,
    aborted: () => OpenAITurnAbortedError,
    text: TextPieces,
  ): Promise<{
    message: ChatCompletion["choices"][number]["message"];
    cutOff: boolean;
    usage: CompletionUsage | undefined;
  }> {
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: this.#system },
      ...conversation,
    ];
    let completion: ChatCompletion;
    try {
      const stream = this.#client.chat.completions.stream(
        {
          model: this.#model,
          messages,
          tools: [...TOOL_DEFINITIONS],
          stream_options: { include_usage: true },
        },
        { signal },
      );
      stream.on("content", (delta) => text.push(delta));
      completion = await stream.finalChatCompletion();
      text.answerEnded();
    } catch (error) {
      if (signal.aborted) throw aborted();
      const translated = toEndpointError(error, {
        host: this.#host,
        model: this.#model,
        apiKey: this.#apiKey,
      });
      if (translated) this.#log.warn({ err: translated }, "model request failed");
      throw translated ?? error;
    }
    const choice = completion.choices?.[0];
    if (!choice?.message) {
      throw new OpenAIEndpointError({
        kind: "bad_response",
        host: this.#host,
        model: this.#model,
        detail: "the completion has no choices",
      });
    }
    return {
      message: choice.message,
      cutOff: choice.finish_reason === "length",
      usage: completion.usage,
    };
  }

  /**
   * The reply has been produced: a failing history write is logged, not thrown, so the
   * person still gets the answer (the next turn then lacks this exchange).
   */
  async #save(sessionId: string, turn: readonly ChatMessage[], log: Logger): Promise<void> {
    try {
      await this.#store.appendHistory(sessionId, turn);
    } catch (error) {
      log.error({ err: error }, "could not save the turn's history");
    }
  }
}

function toolMessage(call: ChatToolCall, content: string): ChatMessage {
  return { role: "tool", tool_call_id: call.id, content };
}

function withNote(content: string | null | undefined, note: string | undefined): string {
  const text = content?.trim() ?? "";
  if (note === undefined) return text === "" ? EmptyReply : text;
  return text === "" ? note : `${text}\n\n${note}`;
}

/**
 * The turn's text as it streams, handed to `onText` piece by piece: a later answer's text
 * comes after a blank line, so the preview only ever grows.
 */
class TextPieces {
  #any = false;
  #gap = false;
  constructor(private readonly onText: ((piece: string) => void) | undefined) {}

  push(piece: string): void {
    if (piece === "" || this.onText === undefined) return;
    if (this.#gap) this.onText("\n\n");
    this.#gap = false;
    this.#any = true;
    this.onText(piece);
  }

  /** One model answer is complete; the next one's text starts a paragraph. */
  answerEnded(): void {
    this.#gap = this.#any;
  }
}

function addUsage(
  sum: TokenUsage | undefined,
  usage: CompletionUsage | undefined,
): TokenUsage | undefined {
  if (usage === undefined || usage === null) return sum;
  return {
    promptTokens: (sum?.promptTokens ?? 0) + usage.prompt_tokens,
    completionTokens: (sum?.completionTokens ?? 0) + usage.completion_tokens,
    totalTokens: (sum?.totalTokens ?? 0) + usage.total_tokens,
  };
}
