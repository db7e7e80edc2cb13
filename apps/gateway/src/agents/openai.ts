import OpenAI, { type ClientOptions } from "openai";
import type { ChatCompletion, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { Logger } from "pino";
import type { Conversation } from "../state/conversation.js";
import type { StateStore } from "../state/store.js";
import type { ChatMessage, ChatToolCall } from "../state/types.js";
import { type CompactionReport, ContextKeeper, isContextLengthError } from "./context-keeper.js";
import { contextTokensFor } from "./model-context.js";
import {
  type AbortPhase,
  endpointHost,
  OpenAIEndpointError,
  OpenAITurnAbortedError,
  toEndpointError,
} from "./openai-errors.js";
import { functionToolCalls, toAssistantMessage } from "./openai-history.js";
import {
  type OpenAIAgentLimits,
  type OpenAIAgentOptions,
  resolveOpenAIOptions,
} from "./openai-options.js";
import { buildSystemPrompt } from "./openai-prompt.js";
import {
  clampSummary,
  type SummaryRequest,
  summaryInput,
  summaryInstructions,
} from "./openai-summary.js";
import { Transcriber } from "./openai-transcription.js";
import { buildUserTurn } from "./openai-user-turn.js";
import { textTokens } from "./token-estimate.js";
import { executeToolCall, TOOL_DEFINITIONS, type ToolCallOutcome } from "./tools.js";
import type {
  Agent,
  AgentTurnInput,
  AgentTurnResult,
  CompactRequest,
  CompactResult,
} from "./types.js";

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
 * Requests are kept under the model's context budget by a {@link ContextKeeper} (older tool
 * outputs trimmed, then older turns summarized into a stored summary; docs/sessions.md,
 * "Context budget and compaction"); the chat is told through the result's `notices`.
 *
 * Requests are never streamed. The abort signal of the turn is passed to every request and
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
  readonly #context: ContextKeeper;

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
    this.#context = new ContextKeeper({
      store: options.store,
      summarize: (request) => this.#summarize(request),
      contextTokens: contextTokensFor(options.model, options.contextTokens),
      fixedTokens: textTokens(JSON.stringify(TOOL_DEFINITIONS)),
      log: this.#log,
    });
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

    let conversation: Conversation = await this.#store.loadConversation(sessionId);
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
    const notices = [...user.notices];
    let summaryFailed = false;
    let reply: string;
    for (;;) {
      const fit = async (force: boolean) => {
        const fitted = await this.#context
          .fit({
            sessionId,
            system: this.#system,
            conversation,
            turn: [{ role: "user", content: user.content }, ...turn.slice(1)],
            signal,
            force,
            summaryFailed,
          })
          .catch((error: unknown) => {
            throw signal.aborted ? aborted("model") : error;
          });
        conversation = fitted.conversation;
        summaryFailed = fitted.summaryFailed;
        if (fitted.notice !== undefined) notices.push(fitted.notice);
        return fitted.messages;
      };
      const answer = await this.#completeWithin(fit, signal, () => aborted("model"));
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
    return notices.length === 0 ? { reply } : { reply, notices };
  }

  /**
   * `/compact [focus]`: summarizes the session's older turns now (all but the newest
   * `Defaults.compaction.keepRecentTurns`), guided by `focus`.
   */
  async compact(request: CompactRequest): Promise<CompactResult> {
    const report: CompactionReport = await this.#context.compact(request.sessionId, {
      signal: request.signal,
      force: true,
      focus: request.focus,
      system: this.#system,
    });
    return {
      summarizedMessages: report.summarizedMessages,
      beforeTokens: report.beforeTokens,
      afterTokens: report.afterTokens,
    };
  }

  /**
   * A model call with the request `fit` makes under the budget; when the server still says it
   * is longer than the context (400 `context_length_exceeded`), once more after a forced
   * compaction.
   */
  async #completeWithin(
    fit: (force: boolean) => Promise<ChatCompletionMessageParam[]>,
    signal: AbortSignal,
    aborted: () => OpenAITurnAbortedError,
  ): Promise<{ message: ChatCompletion["choices"][number]["message"]; cutOff: boolean }> {
    const messages = await fit(false);
    try {
      return await this.#complete(messages, signal, aborted);
    } catch (error) {
      if (!(error instanceof OpenAIEndpointError && overflows.has(error))) throw error;
      this.#log.warn(
        { budget: this.#context.budgetTokens },
        "the server said the context overflowed",
      );
      this.#context.overflowed(error.message);
      const retry = await fit(true);
      return await this.#complete(retry, signal, aborted);
    }
  }

  /** One summary request: no tools, the summary instructions, the transcript. */
  async #summarize(request: SummaryRequest): Promise<string> {
    let completion: ChatCompletion;
    try {
      completion = await this.#client.chat.completions.create(
        {
          model: this.#model,
          messages: [
            { role: "system", content: summaryInstructions(request) },
            { role: "user", content: summaryInput(request) },
          ],
        },
        { signal: request.signal },
      );
    } catch (error) {
      throw (
        toEndpointError(error, { host: this.#host, model: this.#model, apiKey: this.#apiKey }) ??
        error
      );
    }
    const text = completion.choices?.[0]?.message?.content?.trim() ?? "";
    if (text === "") {
      throw new OpenAIEndpointError({
        kind: "bad_response",
        host: this.#host,
        model: this.#model,
        detail: "the summary came back empty",
      });
    }
    return clampSummary(text, request.maxTokens);
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
    messages: ChatCompletionMessageParam[],
    signal: AbortSignal,
    aborted: () => OpenAITurnAbortedError,
  ): Promise<{ message: ChatCompletion["choices"][number]["message"]; cutOff: boolean }> {
    let completion: ChatCompletion;
    try {
      completion = await this.#client.chat.completions.create(
        { model: this.#model, messages, tools: [...TOOL_DEFINITIONS] },
        { signal },
      );
    } catch (error) {
      if (signal.aborted) throw aborted();
      const translated = toEndpointError(error, {
        host: this.#host,
        model: this.#model,
        apiKey: this.#apiKey,
      });
      if (translated !== undefined && isContextLengthError(error)) overflows.add(translated);
      if (translated) this.#log.warn({ err: translated }, "model request failed");
      throw translated ?? error;
    }
    this.#context.observe(messages, completion.usage?.prompt_tokens ?? 0);
    const choice = completion.choices?.[0];
    if (!choice?.message) {
      throw new OpenAIEndpointError({
        kind: "bad_response",
        host: this.#host,
        model: this.#model,
        detail: "the completion has no choices",
      });
    }
    return { message: choice.message, cutOff: choice.finish_reason === "length" };
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

/** The endpoint errors that say the request was longer than the model's context. */
const overflows = new WeakSet<OpenAIEndpointError>();

function toolMessage(call: ChatToolCall, content: string): ChatMessage {
  return { role: "tool", tool_call_id: call.id, content };
}

function withNote(content: string | null | undefined, note: string | undefined): string {
  const text = content?.trim() ?? "";
  if (note === undefined) return text === "" ? EmptyReply : text;
  return text === "" ? note : `${text}\n\n${note}`;
}
