import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { Logger } from "pino";
import { Defaults } from "../defaults.js";
import type { Conversation, ConversationSummary, StoredMessage } from "../state/conversation.js";
import type { StateStore } from "../state/state-store.js";
import type { ChatMessage } from "../state/types.js";
import {
  cutMiddle,
  renderTranscript,
  type Summarize,
  SummaryHeading,
  summaryInstructions,
} from "./openai-summary.js";
import { messageTokens, requestTokens, textTokens } from "./token-estimate.js";

/** Options of {@link ContextKeeper}. */
export interface ContextKeeperOptions {
  readonly store: Pick<StateStore, "loadConversation" | "saveSummary">;
  /** The model's context size (`contextTokensOf` of its `agent.models` entry). */
  readonly contextTokens: number;
  /** Tokens every request carries besides its messages (the tool definitions). */
  readonly fixedTokens: number;
  readonly log: Logger;
}

/** What a compaction did. */
export interface CompactionReport {
  /** Messages folded into the summary (0: there was nothing old enough to summarize). */
  readonly summarizedMessages: number;
  /** Summary requests made. */
  readonly calls: number;
  /** The conversation's estimated tokens before and after. */
  readonly beforeTokens: number;
  readonly afterTokens: number;
  /** The conversation as it is now stored. */
  readonly conversation: Conversation;
}

/** What a turn's request is made of. */
export interface FitInput {
  readonly sessionId: string;
  /** The system prompt (the summary is added to it). */
  readonly system: string;
  readonly conversation: Conversation;
  /** The running turn's messages, its user message first. */
  readonly turn: readonly ChatCompletionMessageParam[];
  readonly signal: AbortSignal;
  /** Asks the model for a summary (through the turn's model chain, its usage recorded). */
  readonly summarize: Summarize;
  /** Summarize even under the budget (the server said the request was too long). */
  readonly force?: boolean | undefined;
  /** A summary failed earlier in this turn: do not ask again before the next turn. */
  readonly summaryFailed?: boolean | undefined;
  /** Asked before each summary request but the first; false ends the compaction there. */
  readonly mayContinue?: (() => Promise<boolean>) | undefined;
}

/** The request to send and what fitting it did. */
export interface FitResult {
  readonly messages: ChatCompletionMessageParam[];
  readonly conversation: Conversation;
  /** The line for the chat when a compaction happened or failed. */
  readonly notice?: string | undefined;
  readonly summaryFailed: boolean;
}

/**
 * Keeps a session's requests under the budget (docs/sessions.md, "Context budget and
 * compaction"): a share of the model's context (`Defaults.compaction.budgetShare`). When a
 * request would be larger, older tool outputs are trimmed first (in the request only); then
 * older turns are summarized by the model into the session's stored summary, which the model
 * gets in its system prompt; the system prompt and the newest turns
 * (`Defaults.compaction.keepRecentTurns`) are always kept. Tokens are estimated
 * (`token-estimate.ts`) and scaled by what the server reports.
 */
export class ContextKeeper {
  contextTokens = 0;
  budgetTokens = 0;
  targetTokens = 0;
  summaryMaxTokens = 0;
  readonly #options: ContextKeeperOptions;
  /** Server-reported prompt tokens per estimated token, from the last answer. */
  #ratio = 1;
  /** The largest prompt the server reported answering: its context is at least this. */
  #largestAnswered = 0;

  constructor(options: ContextKeeperOptions) {
    this.#options = options;
    this.#size(options.contextTokens);
  }

  #size(contextTokens: number): void {
    const d = Defaults.compaction;
    this.contextTokens = contextTokens;
    this.budgetTokens = Math.floor(contextTokens * d.budgetShare);
    this.targetTokens = Math.floor(this.budgetTokens * d.targetShare);
    this.summaryMaxTokens = Math.max(
      1,
      Math.min(d.summaryMaxTokens, Math.floor(contextTokens * d.summaryMaxShare)),
    );
  }

  /** The request's tokens: the estimate, scaled by what the server last reported. */
  tokens(messages: readonly ChatCompletionMessageParam[]): number {
    return Math.ceil(requestTokens(messages, this.#options.fixedTokens) * this.#ratio);
  }

  /**
   * The tokens of the smallest request a turn can make: the system prompt (without a summary),
   * the tool definitions and the turn's own messages. Over the budget, no compaction makes room.
   */
  leastTokens(system: string, turn: readonly ChatCompletionMessageParam[]): number {
    return this.tokens([{ role: "system", content: system }, ...turn]);
  }

  /**
   * Learns from an answer's `usage.prompt_tokens` how the server counts, within
   * `Defaults.compaction.countRatioMax` of the estimate either way.
   */
  observe(messages: readonly ChatCompletionMessageParam[], promptTokens: number): void {
    if (!(promptTokens > 0)) return;
    this.#largestAnswered = Math.max(this.#largestAnswered, promptTokens);
    const max = Defaults.compaction.countRatioMax;
    const ratio = promptTokens / requestTokens(messages, this.#options.fixedTokens);
    this.#ratio = Math.min(max, Math.max(1 / max, ratio));
  }

  /**
   * The server refused a request as longer than the context. When its error names a smaller
   * context than the configured one (OpenAI's "maximum context length is N tokens"), the budget
   * follows it from now on (this process only: the config is what to fix), but not below
   * `Defaults.compaction.minReportedContextTokens` nor the largest prompt the server answered
   * (a size it contradicts is a broken report, not the model's).
   */
  overflowed(detail: string): void {
    const match = /maximum context length is (\d+)/i.exec(detail);
    const reported = match === null ? Number.NaN : Number(match[1]);
    if (!(reported > 0)) return;
    const floor = Math.max(Defaults.compaction.minReportedContextTokens, this.#largestAnswered);
    const believed = Math.max(reported, floor);
    if (believed >= this.contextTokens) return;
    this.#options.log.warn(
      { configured: this.contextTokens, reported, believed },
      "the model's context is smaller than configured: set its contextTokens",
    );
    this.#size(believed);
  }

  /** The messages of a request: system prompt with the summary, history, the turn. */
  view(
    system: string,
    conversation: Conversation,
    turn: readonly ChatCompletionMessageParam[],
  ): ChatCompletionMessageParam[] {
    return [
      systemMessage(system, conversation),
      ...historyOf(conversation).map((stored) => stored.message),
      ...turn,
    ];
  }

  /**
   * The request for the next model call of a turn, under the budget if it can be: see the class
   * documentation for the order of the steps. A failing summary keeps every message stored; the
   * request then leaves out the oldest turns (this time only) and the notice says so.
   */
  async fit(input: FitInput): Promise<FitResult> {
    let conversation = input.conversation;
    let summaryFailed = input.summaryFailed === true;
    let notice: string | undefined;
    const fitted = () => this.#fitHistory(input.system, conversation, input.turn);
    let messages = fitted();
    if (!input.force && this.tokens(messages) <= this.budgetTokens) {
      return { messages, conversation, summaryFailed };
    }
    if (!summaryFailed) {
      try {
        const report = await this.compact(input.sessionId, {
          signal: input.signal,
          summarize: input.summarize,
          conversation,
          system: input.system,
          turn: input.turn,
          force: input.force === true,
          mayContinue: input.mayContinue,
        });
        conversation = report.conversation;
        if (report.summarizedMessages > 0) notice = compactedNotice(report);
      } catch (error) {
        if (input.signal.aborted) throw error;
        summaryFailed = true;
        this.#options.log.warn({ err: error }, "summary for compaction failed");
        notice = `⚠️ Could not summarize the older messages (${describe(error)}): nothing is lost, but the model sees only the newest ones this time. I will try again.`;
      }
      messages = fitted();
    }
    if (this.tokens(messages) > this.budgetTokens) {
      messages = this.#dropOldest(input.system, conversation, input.turn);
    }
    if (this.tokens(messages) > this.budgetTokens) {
      messages = trimTurnOutputs(messages, input.turn.length);
    }
    if (this.tokens(messages) > this.budgetTokens) {
      // The newest turns alone outgrow the budget (a model with a smaller context after
      // `/model` or a fallback): kept whole, every request of the session could overflow.
      // Their tool outputs are trimmed too, this time only; and while the request is still
      // over the whole context, which the server refuses, their oldest turns are left out.
      const turn = trimTurnOutputs(input.turn, input.turn.length);
      messages = this.#dropOldest(input.system, conversation, turn, false);
      this.#options.log.warn(
        { tokens: this.tokens(messages), budget: this.budgetTokens },
        "the newest turns outgrow the context budget: trimmed in the request",
      );
    }
    if (this.tokens(messages) > this.budgetTokens) {
      this.#options.log.warn(
        { tokens: this.tokens(messages), budget: this.budgetTokens },
        "the request is over the context budget after compaction",
      );
    }
    return { messages, conversation, notice, summaryFailed };
  }

  /**
   * Summarizes the older turns of `sessionId` into its stored summary (the newest
   * `Defaults.compaction.keepRecentTurns` stay as they are): as many as bring the request down
   * to the target share of the budget, or all of them with `force` (and for `/compact`). Turns
   * that do not fit one summary request are folded in over several, each stored when it
   * returns. Rejects when a summary request fails; what was stored before stays.
   */
  async compact(
    sessionId: string,
    options: {
      readonly signal: AbortSignal;
      readonly summarize: Summarize;
      readonly force: boolean;
      readonly focus?: string | undefined;
      readonly conversation?: Conversation | undefined;
      readonly system?: string | undefined;
      readonly turn?: readonly ChatCompletionMessageParam[] | undefined;
      /**
       * Asked before each summary request but the first (the caller's own check covers that
       * one): false ends the compaction with what was stored so far (the daily budget is used
       * up: docs/models-and-usage.md, "Budget").
       */
      readonly mayContinue?: (() => Promise<boolean>) | undefined;
    },
  ): Promise<CompactionReport> {
    const { store } = this.#options;
    const { summarize } = options;
    const loaded = options.conversation ?? (await store.loadConversation(sessionId));
    const turn = options.turn ?? [];
    const system = options.system ?? "";
    const beforeTokens = this.tokens(this.view(system, loaded, turn));
    const turns = turnsOf(loaded.messages);
    const eligible = turns.slice(
      0,
      Math.max(0, turns.length - Defaults.compaction.keepRecentTurns),
    );
    const count = options.force
      ? eligible.length
      : this.#turnsToSummarize(turns, eligible.length, system, turn);
    const report = (conversation: Conversation, summarized: number, calls: number) => ({
      summarizedMessages: summarized,
      calls,
      beforeTokens,
      afterTokens: this.tokens(this.view(system, conversation, turn)),
      conversation,
    });
    if (count === 0) return report(loaded, 0, 0);
    const chosen = eligible.slice(0, count);
    const toolChars = Defaults.compaction.trimmedToolOutputChars;
    let base = loaded.summary;
    let summarized = 0;
    let calls = 0;
    let next = 0;
    while (next < chosen.length) {
      if (calls > 0 && options.mayContinue !== undefined && !(await options.mayContinue())) {
        this.#options.log.info({ sessionId, calls }, "compaction stopped by the daily budget");
        break;
      }
      const chunk = this.#chunk(chosen, next, base?.content, options.focus);
      const messages = chunk.turns.flat();
      calls += 1;
      const content = await summarize({
        previous: base?.content,
        transcript:
          chunk.transcript ??
          renderTranscript(
            messages.map((m) => m.message),
            toolChars,
          ),
        focus: options.focus,
        maxTokens: this.summaryMaxTokens,
        signal: options.signal,
      });
      const throughId = messages.at(-1)!.id;
      const saved = await store.saveSummary(sessionId, {
        content,
        throughId,
        baseThroughId: base?.throughId,
      });
      if (!saved) {
        this.#options.log.info({ sessionId }, "another compaction changed the summary first");
        break;
      }
      base = { content, throughId };
      summarized += messages.length;
      next += chunk.turns.length;
    }
    return report(await store.loadConversation(sessionId), summarized, calls);
  }

  /**
   * How many of the oldest turns to summarize so the request gets down to the target: the
   * fewest that do, or all `eligible` when none do.
   */
  #turnsToSummarize(
    turns: readonly StoredMessage[][],
    eligible: number,
    system: string,
    turn: readonly ChatCompletionMessageParam[],
  ): number {
    let rest = this.tokens([{ role: "system", content: system }, ...turn]) + this.summaryMaxTokens;
    const sizes = turns.map(
      (group) =>
        group.reduce((sum, stored) => sum + messageTokens(stored.message), 0) * this.#ratio,
    );
    for (const size of sizes) rest += size;
    for (let count = 0; count < eligible; count++) {
      if (rest <= this.targetTokens) return Math.max(1, count);
      rest -= sizes[count]!;
    }
    return eligible;
  }

  /**
   * The turns from `start` that fit one summary request (at least one: a turn too long on its
   * own is sent with its middle cut, in `transcript`).
   */
  #chunk(
    turns: readonly StoredMessage[][],
    start: number,
    previous: string | undefined,
    focus: string | undefined,
  ): { turns: StoredMessage[][]; transcript?: string } {
    const toolChars = Defaults.compaction.trimmedToolOutputChars;
    const instructions = summaryInstructions({
      previous,
      transcript: "",
      focus,
      maxTokens: this.summaryMaxTokens,
      signal: new AbortController().signal,
    });
    const room =
      this.budgetTokens -
      Math.ceil((textTokens(instructions) + textTokens(previous ?? "") + 32) * this.#ratio);
    const taken: StoredMessage[][] = [];
    let used = 0;
    for (let index = start; index < turns.length; index++) {
      const group = turns[index]!;
      const text = renderTranscript(
        group.map((stored) => stored.message),
        toolChars,
      );
      const size = Math.ceil((textTokens(text) + 1) * this.#ratio);
      if (taken.length === 0 && size > room) {
        const chars = Math.max(200, Math.floor((text.length * Math.max(room, 1)) / size / 1.2));
        return { turns: [group], transcript: cutMiddle(text, chars) };
      }
      if (used + size > room) break;
      taken.push(group);
      used += size;
    }
    return { turns: taken };
  }

  /**
   * The request with the history's older tool outputs trimmed, oldest first, until it fits
   * (or none is left to trim); the newest turns keep theirs unless `keepRecent` is false.
   */
  #fitHistory(
    system: string,
    conversation: Conversation,
    turn: readonly ChatCompletionMessageParam[],
    keepRecent = true,
  ): ChatCompletionMessageParam[] {
    const history = historyOf(conversation).map((stored) => stored.message);
    const head = systemMessage(system, conversation);
    let total = this.tokens([head, ...history, ...turn]);
    if (total <= this.budgetTokens) return [head, ...history, ...turn];
    const protectedFrom = keepRecent ? recentStart(history) : history.length;
    const trimmed = [...history];
    const chars = Defaults.compaction.trimmedToolOutputChars;
    for (let index = 0; index < protectedFrom && total > this.budgetTokens; index++) {
      const message = trimmed[index]!;
      if (message.role !== "tool" || message.content.length <= chars) continue;
      const cut: ChatMessage = { ...message, content: cutMiddle(message.content, chars) };
      total -= Math.floor((messageTokens(message) - messageTokens(cut)) * this.#ratio);
      trimmed[index] = cut;
    }
    return [head, ...trimmed, ...turn];
  }

  /**
   * The trimmed request without its oldest turns, as many as it takes to fit the budget (the
   * newest stay); with `keepRecent` false, the newest' tool outputs are trimmed too and turns
   * are left out only while the request is over the whole context.
   */
  #dropOldest(
    system: string,
    conversation: Conversation,
    turn: readonly ChatCompletionMessageParam[],
    keepRecent = true,
  ): ChatCompletionMessageParam[] {
    const all = this.#fitHistory(system, conversation, turn, keepRecent);
    const [head, ...rest] = all;
    const history = rest.slice(0, rest.length - turn.length);
    const keepFrom = keepRecent ? recentStart(history as ChatMessage[]) : history.length;
    // The newest turns are left out only for a request the server would refuse.
    const limit = keepRecent ? this.budgetTokens : this.contextTokens;
    let start = 0;
    let total = this.tokens(all);
    while (start < keepFrom && total > limit) {
      let end = start + 1;
      while (end < keepFrom && history[end]!.role !== "user") end++;
      for (const message of history.slice(start, end)) {
        total -= Math.floor(messageTokens(message) * this.#ratio);
      }
      start = end;
    }
    return [head!, ...history.slice(start), ...turn];
  }
}

/**
 * The request with the running turn's tool outputs trimmed, but those of its last round (the
 * model has not answered them yet): a turn of many large outputs, the last resort.
 */
function trimTurnOutputs(
  messages: readonly ChatCompletionMessageParam[],
  turnLength: number,
): ChatCompletionMessageParam[] {
  const start = messages.length - turnLength;
  let lastCall = messages.length - 1;
  while (lastCall > start && messages[lastCall]!.role !== "assistant") lastCall--;
  const chars = Defaults.compaction.trimmedToolOutputChars;
  return messages.map((message, index) =>
    index > start &&
    index < lastCall &&
    message.role === "tool" &&
    typeof message.content === "string"
      ? { ...message, content: cutMiddle(message.content, chars) }
      : message,
  );
}

/**
 * System messages made, frozen, so that the token estimate counts each once by the message
 * (token-estimate.ts) instead of hashing the prompt on every request: with a summary, by the
 * summary (the same object from turn to turn while the store keeps the conversation,
 * state/conversation-cache.ts); without, by the prompt, a few per process (one per agent).
 */
const summarizedSystems = new WeakMap<
  ConversationSummary,
  { readonly system: string; readonly message: ChatCompletionMessageParam }
>();
const plainSystems = new Map<string, ChatCompletionMessageParam>();
const MaxPlainSystems = 64;

/** The system prompt, with the session's summary when it has one. */
function systemMessage(system: string, conversation: Conversation): ChatCompletionMessageParam {
  const summary = conversation.summary;
  if (summary === undefined) {
    let message = plainSystems.get(system);
    if (message === undefined) {
      message = Object.freeze({ role: "system", content: system });
      if (plainSystems.size >= MaxPlainSystems) plainSystems.clear();
      plainSystems.set(system, message);
    }
    return message;
  }
  const known = summarizedSystems.get(summary);
  if (known?.system === system) return known.message;
  const message = Object.freeze({
    role: "system" as const,
    content: `${system}\n\n${SummaryHeading}\n${summary.content}`,
  });
  summarizedSystems.set(summary, { system, message });
  return message;
}

/** The stored messages the model sees: from the first user message on (a turn boundary). */
function historyOf(conversation: Conversation): readonly StoredMessage[] {
  const start = conversation.messages.findIndex((stored) => stored.message.role === "user");
  return start === -1 ? [] : conversation.messages.slice(start);
}

/** The messages grouped by turn, each group starting at a user message (but a leading rest). */
function turnsOf(messages: readonly StoredMessage[]): StoredMessage[][] {
  const turns: StoredMessage[][] = [];
  for (const stored of messages) {
    const last = turns.at(-1);
    if (last === undefined || stored.message.role === "user") turns.push([stored]);
    else last.push(stored);
  }
  return turns;
}

/** Where the newest `Defaults.compaction.keepRecentTurns` turns of `history` start. */
function recentStart(history: readonly ChatCompletionMessageParam[]): number {
  let seen = 0;
  for (let index = history.length - 1; index >= 0; index--) {
    if (history[index]!.role !== "user") continue;
    seen += 1;
    if (seen === Defaults.compaction.keepRecentTurns) return index;
  }
  return 0;
}

/** The one line the chat gets about a compaction. */
export function compactedNotice(report: CompactionReport): string {
  const n = report.summarizedMessages;
  return `🗜️ Compacted the conversation: ${n} older message${n === 1 ? "" : "s"} summarized to fit the model's context (≈${report.beforeTokens} → ${report.afterTokens} tokens).`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
