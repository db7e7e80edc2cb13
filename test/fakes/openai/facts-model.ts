import { reply } from "./replies.js";
import { contentText, type RecordedRequest, type ReplyHandler } from "./server.js";

/** A fact in a message: `FACT{…}`. */
const FactPattern = /FACT\{[^}]*\}/g;

/** Whether a request is a compaction's summary request: the gateway offers it no tools. */
export function isSummaryRequest(request: RecordedRequest): boolean {
  return request.body.tools === undefined;
}

/** The distinct `FACT{…}` of a request's messages, in order of appearance. */
export function factsIn(request: RecordedRequest): string[] {
  const facts: string[] = [];
  for (const message of request.body.messages) {
    for (const fact of (contentText(message.content) ?? "").match(FactPattern) ?? []) {
      if (!facts.includes(fact)) facts.push(fact);
    }
  }
  return facts;
}

/**
 * A deterministic model for long conversations: a summary request (no tools) is answered with
 * the `FACT{…}` it was given (in the previous summary or the messages) and nothing else; a
 * user message containing `recall` with every fact the request carries; `read <path>` with a
 * `read_file` call, then `read done` once its result is back; anything else with `noted`.
 */
export function factsModel(): ReplyHandler {
  return (request) => {
    const facts = factsIn(request);
    if (isSummaryRequest(request)) return reply.text(`Facts: ${facts.join(" ") || "none"}`);
    const last = request.body.messages.at(-1);
    if (last?.role === "tool") return reply.text("read done");
    const text = contentText(last?.content) ?? "";
    if (/\brecall\b/i.test(text)) return reply.text(`I remember: ${facts.join(" ") || "nothing"}`);
    const read = /\bread (\S+)/.exec(text);
    if (read !== null) return reply.toolCall("read_file", { path: read[1] });
    return reply.text("noted");
  };
}
