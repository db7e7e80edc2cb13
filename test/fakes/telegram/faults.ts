import { type ApiAnswer, fail } from "./protocol.js";

/** A failure the fake answers instead of handling a call. */
export type Fault =
  /** 429 with `parameters.retry_after`, as Telegram's flood control answers. */
  | { readonly kind: "rate_limit"; readonly retryAfterSeconds: number }
  /** A 5xx; JSON like the Bot API's own, or an HTML page like a proxy in front of it. */
  | { readonly kind: "server_error"; readonly status?: number; readonly html?: boolean }
  /** Any other error answer, e.g. 400 `Bad Request: PHOTO_INVALID_DIMENSIONS`. */
  | { readonly kind: "error"; readonly status: number; readonly description: string }
  /** The connection is destroyed after the request body was read, without an answer. */
  | { readonly kind: "disconnect" }
  /**
   * The call IS handled (a message is posted and recorded), but the answer is held for
   * `delayMs`: a client that times out first has no way to know the send went through.
   */
  | { readonly kind: "slow"; readonly delayMs: number }
  /**
   * The call IS handled (a message is posted and recorded), and its answer is held until
   * `until` resolves: a platform slow to answer, for as long as the test wants.
   */
  | { readonly kind: "held"; readonly until: Promise<void> };

export function faultAnswer(
  fault: Exclude<Fault, { kind: "disconnect" } | { kind: "slow" } | { kind: "held" }>,
): ApiAnswer {
  switch (fault.kind) {
    case "rate_limit":
      return fail(429, `Too Many Requests: retry after ${fault.retryAfterSeconds}`, {
        retry_after: fault.retryAfterSeconds,
      });
    case "server_error": {
      const status = fault.status ?? 502;
      if (fault.html === true) {
        return {
          status,
          body: {
            raw: `<html><body>${status} Bad Gateway</body></html>`,
            contentType: "text/html",
          },
        };
      }
      return fail(status, status === 502 ? "Bad Gateway" : "Internal Server Error");
    }
    case "error":
      return fail(fault.status, fault.description);
  }
}

/** Per-method queues of faults to answer the next calls with. */
export class FaultQueue {
  private readonly pending = new Map<string, Fault[]>();

  add(method: string, fault: Fault, times: number): void {
    const queue = this.pending.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(fault);
    this.pending.set(method, queue);
  }

  take(method: string): Fault | undefined {
    return this.pending.get(method)?.shift();
  }
}
