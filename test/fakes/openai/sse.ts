import type { ServerResponse } from "node:http";
import type { StreamShape } from "./replies.js";

/** What one streamed answer is made of. */
export interface StreamedAnswer {
  readonly id: string;
  readonly model: string;
  readonly content: string | null;
  readonly toolCalls: readonly { id: string; name: string; arguments: string }[];
  readonly finishReason: string;
  /** The `usage` object of the last chunk (usage.ts's `usageBody`); undefined: none sent. */
  readonly usage: Readonly<Record<string, unknown>> | undefined;
  readonly shape: StreamShape;
  /** Called as the first piece of content is written (the model's first token). */
  readonly onFirstContent?: () => void;
}

/** Default characters of content per chunk. */
const ChunkChars = 16;

/**
 * Writes `answer` as OpenAI's server-sent events (`data: {chunk}` lines, then `data: [DONE]`):
 * a role chunk, content chunks, tool calls split across chunks (id and name first, the
 * arguments in three parts), the finish reason, and the usage chunk (no choices) when asked.
 * Waits as `shape` says; stops quietly when the client goes away. Resolves with the
 * characters of content sent.
 */
export async function writeStream(res: ServerResponse, answer: StreamedAnswer): Promise<number> {
  const { shape } = answer;
  let closed = false;
  res.once("close", () => {
    closed = true;
  });
  const wait = (ms: number | undefined) =>
    ms === undefined || ms <= 0 || closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          // One listener per wait, taken off when the wait ends: a long stream would pile them up.
          const onClose = () => {
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(() => {
            res.off("close", onClose);
            resolve();
          }, ms);
          res.once("close", onClose);
        });
  const base = {
    ...(shape.withoutIds === true ? {} : { id: answer.id }),
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
  };
  const send = (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (!closed) res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  };
  const delta = (value: Record<string, unknown>, finish: string | null = null) => [
    { index: 0, delta: value, logprobs: null, finish_reason: finish },
  ];
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  send(delta({ role: "assistant", content: "" }));
  const content = answer.content ?? "";
  const size = shape.chunkChars ?? ChunkChars;
  let sent = 0;
  for (let at = 0; at < content.length && !closed; at += size) {
    if (sent > 0) await wait(shape.everyMs);
    const piece = content.slice(at, at + size);
    send(delta({ content: piece }));
    if (sent === 0) answer.onFirstContent?.();
    sent += piece.length;
    if (at === 0) await wait(shape.afterFirstMs);
    if (shape.hangAfterChars !== undefined && sent >= shape.hangAfterChars) {
      await new Promise<void>((resolve) => res.once("close", () => resolve()));
      return sent;
    }
  }
  for (const [index, call] of answer.toolCalls.entries()) {
    const third = Math.ceil(call.arguments.length / 3);
    send(
      delta({
        tool_calls: [
          {
            index,
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: call.arguments.slice(0, third) },
          },
        ],
      }),
    );
    for (const part of [call.arguments.slice(third, 2 * third), call.arguments.slice(2 * third)]) {
      await wait(shape.everyMs);
      send(delta({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  }
  send(delta({}, answer.finishReason));
  if (answer.usage !== undefined) send([], { usage: answer.usage });
  if (!closed) res.end("data: [DONE]\n\n");
  return sent;
}
