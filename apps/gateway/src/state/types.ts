/**
 * Conversation messages as the state database stores them: the OpenAI chat-completions
 * message shape, kept to the fields the gateway's agents use. Stored as JSON, one row each.
 */

/** A function call the assistant asked for. `arguments` is the raw JSON text the model sent. */
export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface SystemChatMessage {
  role: "system";
  content: string;
}

export interface UserChatMessage {
  role: "user";
  content: string;
}

/** `content` is `null` when the assistant only called tools. */
export interface AssistantChatMessage {
  role: "assistant";
  content: string | null;
  tool_calls?: ChatToolCall[];
}

/** The result of one tool call, answering the assistant's call with the same id. */
export interface ToolChatMessage {
  role: "tool";
  content: string;
  tool_call_id: string;
}

/** One message of a conversation (OpenAI chat-completions shape). */
export type ChatMessage =
  | SystemChatMessage
  | UserChatMessage
  | AssistantChatMessage
  | ToolChatMessage;

/** Roles a stored message may have. */
export const CHAT_ROLES = ["system", "user", "assistant", "tool"] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isToolCall(value: unknown): value is ChatToolCall {
  if (!isRecord(value) || typeof value.id !== "string" || value.type !== "function") return false;
  const fn = value.function;
  return isRecord(fn) && typeof fn.name === "string" && typeof fn.arguments === "string";
}

/**
 * Type guard for {@link ChatMessage}. Used on every write and every read, so a row that
 * does not have the shape the agents rely on is refused instead of reaching the model.
 */
export function isChatMessage(value: unknown): value is ChatMessage {
  if (!isRecord(value)) return false;
  switch (value.role) {
    case "system":
    case "user":
      return typeof value.content === "string";
    case "assistant":
      return (
        (typeof value.content === "string" || value.content === null) &&
        (value.tool_calls === undefined ||
          (Array.isArray(value.tool_calls) && value.tool_calls.every(isToolCall)))
      );
    case "tool":
      return typeof value.content === "string" && typeof value.tool_call_id === "string";
    default:
      return false;
  }
}
