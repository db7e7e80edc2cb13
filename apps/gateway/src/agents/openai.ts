import type { ChatCompletion, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { Logger } from "pino";
import type { BudgetSettings, ModelSettings } from "../config/types.js";
import { lazyChild } from "../log.js";
import type { Conversation } from "../state/conversation.js";
import type { StateStore } from "../state/state-store.js";
import type { ChatMessage, ChatToolCall } from "../state/types.js";
import { budgetStop } from "./budget.js";
import { type CompactionReport, ContextKeeper } from "./context-keeper.js";
import { type ChainAnswer, ModelChain } from "./model-chain.js";
import { contextTokensOf, costOf, modelChain, type TokenUsage, usageOf } from "./models.js";
import {
  type AbortPhase,
  endpointHost,
  OpenAIEndpointError,
  OpenAITurnAbortedError,
} from "./openai-errors.js";
import { functionToolCalls, toAssistantMessage } from "./openai-history.js";
import {
  type AgentModels,
  agentModelsOf,
  type OpenAIAgentLimits,
  type OpenAIAgentOptions,
  resolveOpenAIOptions,
} from "./openai-options.js";
import { buildSystemPrompt } from "./openai-prompt.js";
import {
  clampSummary,
  type SummaryRequest,
  summaryAnswerMaxTokens,
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

/** Whom a model call is recorded for (docs/models-and-usage.md, "Usage"). */
type UsageOwner = Pick<AgentTurnInput, "sessionKey" | "sessionId" | "user">;

/** What `#complete` gives back: the answer's message and the entry that gave it. */
interface CompleteAnswer {
  readonly message: ChatCompletion["choices"][number]["message"];
  readonly cutOff: boolean;
  /** The answer as it came, for its usage record (written by the turn, {@link OpenAIAgent.runTurn}). */
  readonly completion: ChatCompletion;
  readonly entry: ModelSettings;
  readonly failures: ChainAnswer["failures"];
  /** The call's usage as the endpoint reported it (undefined when it did not). */
  readonly usage: TokenUsage | undefined;
}

/** Tool calls beyond this many in one model answer are answered "not executed". */
const MaxCallsPerRound = 16;

const NotExecutedLimit = "not executed: the tool-round limit of this turn was reached";
const NotExecutedTooMany = `not executed: at most ${MaxCallsPerRound} tool calls per answer`;
const EmptyReply = "(the model sent an empty reply)";
const CompactionRunning =
  "A compaction of this conversation is already running; its answer comes when it is done.";

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
 * Requests are kept under the context budget of the model the session uses (a share of its
 * entry's `contextTokensOf`) by a {@link ContextKeeper} per model entry (older tool outputs
 * trimmed, then older turns summarized into a stored summary; docs/sessions.md, "Context budget
 * and compaction"); the chat is told through the result's `notices`. Summaries are asked of the
 * turn's model chain like any call, and recorded as usage.
 *
 * Every request is streamed (`stream_options.include_usage`): each piece of text goes to the
 * turn's `onText` as it arrives (docs/streaming.md), tool calls are assembled from their
 * pieces (chat-stream.ts), and the usage the endpoint reports is summed into the
 * turn's result; a summary's text is never shown. A context overflow (400) comes before any
 * text, so its forced compaction and retry stay unseen too. The abort signal of the turn is
 * passed to every request and
 * tool call; an abort rejects with {@link OpenAITurnAbortedError}, an endpoint failure with
 * {@link OpenAIEndpointError} (host, status; never the API key).
 */
export class OpenAIAgent implements Agent {
  readonly kind = "openai" as const;
  readonly #chain: ModelChain;
  readonly #models: AgentModels;
  readonly #budget: BudgetSettings | undefined;
  readonly #store: StateStore;
  readonly #log: Logger;
  readonly #system: string;
  readonly #settings: OpenAIAgentLimits;
  readonly #vision: boolean;
  readonly #transcriber: Transcriber | undefined;
  /** One per model entry: each has its own context size and learns its own token ratio. */
  readonly #keepers = new Map<string, ContextKeeper>();
  readonly #fixedTokens = textTokens(JSON.stringify(TOOL_DEFINITIONS));
  /** Session ids with a `/compact` running (this process's). */
  readonly #compacting = new Set<string>();

  constructor(options: OpenAIAgentOptions) {
    const settings = resolveOpenAIOptions(options);
    this.#settings = settings;
    this.#store = options.store;
    this.#models = agentModelsOf(options);
    this.#budget = options.budget;
    this.#system = buildSystemPrompt(options.systemPrompt);
    this.#log = options.logger.child({ agent: "openai", defaultModel: this.#models.defaultModel });
    this.#chain = new ModelChain({
      logger: this.#log,
      timeoutMs: settings.timeoutMs,
      maxRetries: settings.maxRetries,
      sleep: options.sleep,
    });
    this.#vision = options.vision === true;
    this.#transcriber =
      options.transcription === undefined
        ? undefined
        : new Transcriber(options.transcription, { timeoutMs: settings.timeoutMs });
  }

  /** Runs one turn; see the class documentation for history and abort semantics. */
  async runTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
    const { signal, sessionId } = input;
    const log = lazyChild(this.#log, { sessionId });
    let rounds = 0;
    const aborted = (phase: AbortPhase) =>
      new OpenAITurnAbortedError({ sessionId, phase, toolRounds: rounds, reason: signal.reason });
    if (signal.aborted) throw aborted("model");
    const stopped = await this.#budgetStop(log);
    if (stopped !== undefined) return { reply: stopped };

    // Read together: one message to the store's thread (sqlite/database-worker.ts).
    const chosenModel = this.#chosenModel(input.sessionKey, log);
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
    let chain = modelChain(this.#models, await chosenModel);
    const tooLong = this.#tooLong(chain[0]!, user.text, log);
    if (tooLong !== undefined) {
      return { reply: tooLong, ...(notices.length === 0 ? {} : { notices }) };
    }
    let toldFallback = false;
    let summaryFailed = false;
    const summarize = (request: SummaryRequest) => this.#summarize(chain, request, input, log);
    const mayContinue = async () => (await this.#budgetStop(log)) === undefined;
    const fit = async (force: boolean, entry: ModelSettings) => {
      const fitted = await this.#keeper(entry)
        .fit({
          sessionId,
          system: this.#system,
          conversation,
          turn: [{ role: "user", content: user.content }, ...turn.slice(1)],
          signal,
          summarize,
          force,
          summaryFailed,
          mayContinue,
        })
        .catch((error: unknown) => {
          throw signal.aborted ? aborted("model") : error;
        });
      conversation = fitted.conversation;
      summaryFailed = fitted.summaryFailed;
      if (fitted.notice !== undefined) notices.push(fitted.notice);
      return fitted.messages;
    };
    const text = new TextPieces(input.onText);
    let usage: TokenUsage | undefined;
    let usageWrite: Promise<void> = Promise.resolve();
    let reply: string;
    for (;;) {
      const stop = turn.length === 1 ? undefined : await this.#budgetStop(log);
      if (stop !== undefined) {
        reply = stop;
        turn.push({ role: "assistant", content: reply });
        break;
      }
      const answer = await this.#completeWithin(
        chain,
        fit,
        input,
        () => aborted("model"),
        log,
        text,
      );
      usage = addUsage(usage, answer.usage);
      // Written now; awaited before a tool runs, or with the turn's history (one message).
      usageWrite = this.#recordUsage(answer.completion, answer.entry, input, log);
      if (answer.entry !== chain[0]) {
        // The rest of the turn stays on the model that answered; the chat hears of it once.
        if (!toldFallback) notices.push(fallbackNotice(answer, chain[0]!));
        toldFallback = true;
        chain = chain.slice(chain.indexOf(answer.entry));
      }
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
      await usageWrite;
      turn.push(...(await this.#executeRound(calls, input, () => aborted("tool"), log, rounds)));
    }
    await Promise.all([usageWrite, this.#save(input, turn, log)]);
    return {
      reply,
      ...(notices.length === 0 ? {} : { notices }),
      ...(usage === undefined ? {} : { usage }),
    };
  }

  /**
   * `/compact [focus]`: summarizes the session's older turns now (all but the newest
   * `Defaults.compaction.keepRecentTurns`), guided by `focus`, with the session's model (and
   * its fallbacks). Asks nothing when the daily budget is used up, nor while another
   * `/compact` of the session runs: the command bypasses the session's queue, and repeated it
   * would have the whole conversation summarized (and billed) that many times at once.
   */
  async compact(request: CompactRequest): Promise<CompactResult> {
    const log = this.#log.child({ sessionId: request.sessionId });
    const nothing = { summarizedMessages: 0, beforeTokens: 0, afterTokens: 0 };
    if (this.#compacting.has(request.sessionId)) {
      return { ...nothing, stopped: CompactionRunning };
    }
    this.#compacting.add(request.sessionId);
    try {
      const stopped = await this.#budgetStop(log);
      if (stopped !== undefined) return { ...nothing, stopped };
      const chain = modelChain(this.#models, await this.#chosenModel(request.sessionKey, log));
      const report: CompactionReport = await this.#keeper(chain[0]!).compact(request.sessionId, {
        signal: request.signal,
        summarize: (summary) => this.#summarize(chain, summary, request, log),
        force: true,
        focus: request.focus,
        system: this.#system,
        mayContinue: async () => (await this.#budgetStop(log)) === undefined,
      });
      return {
        summarizedMessages: report.summarizedMessages,
        beforeTokens: report.beforeTokens,
        afterTokens: report.afterTokens,
      };
    } finally {
      this.#compacting.delete(request.sessionId);
    }
  }

  /**
   * The answer to a message whose text is too long for `entry`'s context budget on its own (a
   * pasted log, a long voice note's transcript): no compaction can make room for it, and the
   * server would refuse it (docs/sessions.md, "Context budget and compaction"). `undefined`
   * when it fits. Image inputs are not counted: their tokens are only a rough guess.
   */
  #tooLong(entry: ModelSettings, text: string, log: Logger): string | undefined {
    const keeper = this.#keeper(entry);
    const tokens = keeper.leastTokens(this.#system, [{ role: "user", content: text }]);
    if (tokens <= keeper.budgetTokens) return undefined;
    log.warn({ tokens, budget: keeper.budgetTokens, model: entry.name }, "message too long");
    return `⚠️ That message is too long for the model: ≈${tokens} tokens, where ${entry.name} reads at most ≈${keeper.budgetTokens} at once. Nothing was sent to it; send the text as a file (the model can read it in parts) or in shorter messages.`;
  }

  /** The context keeper of `entry`'s model, sized by `contextTokensOf(entry)`. */
  #keeper(entry: ModelSettings): ContextKeeper {
    let keeper = this.#keepers.get(entry.name);
    if (keeper === undefined) {
      keeper = new ContextKeeper({
        store: this.#store,
        contextTokens: contextTokensOf(entry),
        fixedTokens: this.#fixedTokens,
        log: this.#log.child({ model: entry.name }),
      });
      this.#keepers.set(entry.name, keeper);
    }
    return keeper;
  }

  /**
   * A model call with the request `fit` makes under the budget of the chain's first model; when
   * a model still says it is longer than its context (400 `context_length_exceeded`), once more
   * after a forced compaction, from that model on.
   */
  async #completeWithin(
    chain: readonly ModelSettings[],
    fit: (force: boolean, entry: ModelSettings) => Promise<ChatCompletionMessageParam[]>,
    input: AgentTurnInput,
    aborted: () => OpenAITurnAbortedError,
    log: Logger,
    text: TextPieces,
  ): Promise<CompleteAnswer> {
    const messages = await fit(false, chain[0]!);
    try {
      return await this.#complete(chain, messages, input, aborted, log, text);
    } catch (error) {
      if (!(error instanceof OpenAIEndpointError && error.contextOverflow)) throw error;
      const at = Math.max(
        0,
        chain.findIndex(
          (entry) => entry.model === error.model && endpointHost(entry.baseUrl) === error.host,
        ),
      );
      const rest = chain.slice(at);
      const keeper = this.#keeper(rest[0]!);
      log.warn(
        { model: rest[0]!.name, budget: keeper.budgetTokens },
        "the server said the context overflowed",
      );
      keeper.overflowed(error.message);
      const retry = await fit(true, rest[0]!);
      return await this.#complete(rest, retry, input, aborted, log, text);
    }
  }

  /**
   * One summary request through `chain`: no tools, the summary instructions, the transcript,
   * the answer bounded ({@link summaryAnswerMaxTokens}). Recorded as usage like any call
   * (docs/models-and-usage.md, "Usage").
   */
  async #summarize(
    chain: readonly ModelSettings[],
    request: SummaryRequest,
    owner: UsageOwner,
    log: Logger,
  ): Promise<string> {
    const answer = await this.#chain.complete(
      chain,
      {
        messages: [
          { role: "system", content: summaryInstructions(request) },
          { role: "user", content: summaryInput(request) },
        ],
        max_completion_tokens: summaryAnswerMaxTokens(request),
      },
      request.signal,
    );
    await this.#recordUsage(answer.completion, answer.entry, owner, log);
    const text = answer.completion.choices?.[0]?.message?.content?.trim() ?? "";
    if (text === "") {
      throw new OpenAIEndpointError({
        kind: "bad_response",
        host: endpointHost(answer.entry.baseUrl),
        model: answer.entry.model,
        detail: "the summary came back empty",
      });
    }
    return clampSummary(text, request.maxTokens);
  }

  /** The session's `/model` pick; a store failure is logged and the default used. */
  async #chosenModel(sessionKey: string, log: Logger): Promise<string | undefined> {
    try {
      return await this.#store.sessionModel(sessionKey);
    } catch (error) {
      log.error({ err: error }, "could not read the session's model; using the default");
      return undefined;
    }
  }

  /**
   * The budget's stop message when today's is used up. A store failure is logged and lets the
   * call go ahead: a broken usage table must not silence the bot.
   */
  async #budgetStop(log: Logger): Promise<string | undefined> {
    try {
      const stop = await budgetStop(this.#store, this.#budget);
      if (stop !== undefined) log.warn("daily budget reached; model call refused");
      return stop;
    } catch (error) {
      log.error({ err: error }, "could not read today's usage for the budget");
      return undefined;
    }
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
    chain: readonly ModelSettings[],
    messages: ChatCompletionMessageParam[],
    input: AgentTurnInput,
    aborted: () => OpenAITurnAbortedError,
    log: Logger,
    text: TextPieces,
  ): Promise<CompleteAnswer> {
    const { signal } = input;
    let answer: ChainAnswer;
    try {
      answer = await this.#chain.complete(
        chain,
        { messages, tools: [...TOOL_DEFINITIONS] },
        signal,
        (piece) => text.push(piece),
      );
      text.answerEnded();
    } catch (error) {
      if (signal.aborted) throw aborted();
      if (error instanceof OpenAIEndpointError) log.warn({ err: error }, "model request failed");
      throw error;
    }
    const { completion, entry } = answer;
    const usage = usageOf(completion);
    this.#keeper(entry).observe(messages, usage?.inputTokens ?? 0);
    const choice = completion.choices?.[0];
    if (!choice?.message) {
      throw new OpenAIEndpointError({
        kind: "bad_response",
        host: endpointHost(entry.baseUrl),
        model: entry.model,
        detail: "the completion has no choices",
      });
    }
    return {
      message: choice.message,
      cutOff: choice.finish_reason === "length",
      completion,
      entry,
      failures: answer.failures,
      usage,
    };
  }

  /**
   * Records the call's tokens and cost (docs/models-and-usage.md, "Usage"). A failing write is
   * logged, not thrown (it never rejects): the answer is there and the person should get it.
   */
  async #recordUsage(
    completion: unknown,
    entry: ModelSettings,
    input: UsageOwner,
    log: Logger,
  ): Promise<void> {
    const usage = usageOf(completion) ?? { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
    try {
      await this.#store.recordUsage({
        sessionKey: input.sessionKey,
        sessionId: input.sessionId,
        user: input.user,
        model: entry.name,
        ...usage,
        cost: costOf(usage, entry.prices),
      });
    } catch (error) {
      log.error({ err: error, model: entry.name, ...usage }, "could not record the call's usage");
    }
  }

  /**
   * The reply has been produced: a failing history write is logged, not thrown, so the
   * person still gets the answer (the next turn then lacks this exchange). Written only while
   * the session key still has the turn's session id: a `/new` or `/reset` that replaced the
   * conversation meanwhile deleted it, and the turn's messages would stay behind under the
   * old id, in no conversation.
   */
  async #save(
    owner: Pick<AgentTurnInput, "sessionKey" | "sessionId">,
    turn: readonly ChatMessage[],
    log: Logger,
  ): Promise<void> {
    try {
      const saved = await this.#store.appendHistory(owner.sessionId, turn, {
        sessionKey: owner.sessionKey,
      });
      if (!saved)
        log.info("the conversation was replaced while the turn ran; its messages were dropped");
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

/** The one line a turn answered by a fallback model tells the chat. */
function fallbackNotice(
  answer: { readonly entry: ModelSettings; readonly failures: readonly OpenAIEndpointError[] },
  first: ModelSettings,
): string {
  const failure = answer.failures[0];
  const why =
    failure === undefined
      ? "failed"
      : failure.kind === "http"
        ? `answered HTTP ${failure.status ?? "?"}`
        : failure.kind === "timeout"
          ? "did not answer in time"
          : "could not be reached";
  return `↪️ Answered by ${answer.entry.name}: ${first.name} ${why}.`;
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
  usage: TokenUsage | undefined,
): TokenUsage | undefined {
  if (usage === undefined) return sum;
  return {
    inputTokens: (sum?.inputTokens ?? 0) + usage.inputTokens,
    outputTokens: (sum?.outputTokens ?? 0) + usage.outputTokens,
    cachedTokens: (sum?.cachedTokens ?? 0) + usage.cachedTokens,
  };
}
