import type { ChatCompletionMessage } from "openai/resources/chat/completions";
import { objectArguments } from "../state/chat-repair.js";
import type { AssistantChatMessage, ChatMessage, ChatToolCall } from "../state/types.js";

/**
 * Drops messages from the front of a loaded history until it starts at a user message.
 * A history loaded with a limit may start inside a tool exchange (a `tool` message whose
 * assistant call was cut off), which chat-completions endpoints reject with a 400.
 */
export function trimToTurnBoundary(history: readonly ChatMessage[]): ChatMessage[] {
  const start = history.findIndex((message) => message.role === "user");
  return start === -1 ? [] : history.slice(start);
}

/** The function tool calls of a model message (other call types are not offered to it). */
export function functionToolCalls(message: ChatCompletionMessage): ChatToolCall[] {
  const calls: ChatToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type !== "function") continue;
    calls.push({
      id: call.id,
      type: "function",
      function: { name: call.function.name, arguments: call.function.arguments },
    });
  }
  return calls;
}

/**
 * The model message as it is stored and sent back: content and function calls only. A call's
 * arguments that are not a JSON object (cut off, malformed, empty) become `{}`: vLLM and
 * Anthropic's and Google's compatible layers refuse a conversation carrying them, so one bad
 * call would fail the rest of the turn and, stored, every later request of the session. The
 * call's tool message says what was wrong (`executeToolCall`).
 */
export function toAssistantMessage(
  message: ChatCompletionMessage,
  calls: readonly ChatToolCall[],
): AssistantChatMessage {
  const content = message.content ?? null;
  return calls.length > 0
    ? {
        role: "assistant",
        content,
        tool_calls: calls.map((call) => {
          const args = objectArguments(call.function.arguments);
          return args === call.function.arguments
            ? call
            : { ...call, function: { ...call.function, arguments: args } };
        }),
      }
    : { role: "assistant", content };
}
