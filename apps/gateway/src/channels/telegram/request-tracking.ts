import { AsyncLocalStorage } from "node:async_hooks";
import { type Agent, type ClientRequest, Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";

/**
 * How far one Bot API request got, as seen from this side of the wire. It answers the one
 * question that decides whether a failed send may be repeated: could Telegram have received
 * the whole request? A request whose body was never fully written cannot have been processed.
 */
export class RequestProgress {
  /** The HTTP request was created for this call (a connection was asked for). */
  created = false;
  /** The whole request body was handed to the operating system. */
  bodyWritten = false;

  /**
   * `true` only when this side saw the request start and its body never finish: Telegram
   * cannot have acted on it. Anything less certain is `false` (fail safe: maybe sent).
   */
  get knownNotSent(): boolean {
    return this.created && !this.bodyWritten;
  }
}

const current = new AsyncLocalStorage<RequestProgress>();

/** Runs `call` so that the HTTP request it makes reports to `progress`. */
export function trackRequest<T>(progress: RequestProgress, call: () => Promise<T>): Promise<T> {
  return current.run(progress, call);
}

/** Node's agents hand every request to `addRequest`; it is how request-tracking agents see one. */
interface AgentInternals {
  addRequest(request: ClientRequest, options: unknown): void;
}

function observe(request: ClientRequest): void {
  const progress = current.getStore();
  if (progress === undefined) return;
  progress.created = true;
  request.once("finish", () => {
    progress.bodyWritten = true;
  });
}

/**
 * A keep-alive agent for grammY's fetch that reports each request to the {@link trackRequest}
 * call it belongs to. grammY on Node sends through node-fetch, which takes an `agent`.
 */
export function trackingAgent(apiRoot: string): Agent {
  const Base = apiRoot.startsWith("https:") ? HttpsAgent : HttpAgent;
  const base = Base.prototype as unknown as AgentInternals;
  if (typeof base.addRequest !== "function") {
    throw new Error("this Node.js version has no Agent#addRequest; cannot track Bot API requests");
  }
  const agent = new Base({ keepAlive: true });
  const tracked = agent as unknown as AgentInternals;
  tracked.addRequest = (request, options) => {
    observe(request);
    base.addRequest.call(agent, request, options);
  };
  return agent;
}
