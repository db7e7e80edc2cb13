import type { Readable } from "node:stream";
import { Agent, DecoratorHandler, type Dispatcher, request } from "undici";

/**
 * How far one Bot API request got, as seen from this side of the wire. It answers the one
 * question that decides whether a failed send may be repeated: could Telegram have received
 * the whole request? A request whose body was never fully written cannot have been processed.
 */
export class RequestProgress {
  /** The HTTP request was handed to the client for this call (a connection was asked for). */
  created = false;
  /** The whole request body was written to the connection. */
  bodyWritten = false;

  /**
   * `true` only when this side saw the request start and its body never finish: Telegram
   * cannot have acted on it. Anything less certain is `false` (fail safe: maybe sent).
   */
  get knownNotSent(): boolean {
    return this.created && !this.bodyWritten;
  }
}

/**
 * The progress the request being made now reports to: set by {@link trackRequest} for as long
 * as `call` runs synchronously, and taken by the first request made in that time.
 *
 * Not an `AsyncLocalStorage`: one in the process turns on Node 20's promise hooks for every
 * promise of the gateway, which cost 0.14–0.29 ms of its CPU per answered text-only message
 * (8–17 %) in `bench:e2e --text-only-users 100` (bench/README.md, "Issue 31, target 3: the
 * session scope's `AsyncLocalStorage` taken out"), and nothing needs the request's progress
 * past the call's first synchronous run: grammY makes its request there, with no await between
 * the API method and its `fetch`.
 */
let handedTo: RequestProgress | undefined;

/**
 * Runs `call` so that the HTTP request it makes before its first await reports to `progress`
 * (grammY's API methods make their one request there). A request made later, after an await,
 * reports to nothing: its progress stays `created: false`, which counts as maybe sent, the
 * safe side. Never another call's progress: the hand-off ends when `call` returns.
 */
export function trackRequest<T>(progress: RequestProgress, call: () => Promise<T>): Promise<T> {
  const outer = handedTo;
  handedTo = progress;
  try {
    return call();
  } finally {
    handedTo = outer;
  }
}

/**
 * Passes a request's events on, and marks its progress once undici has written the last of
 * its body to the socket. `onRequestSent` is undici's own call for that moment (lib/core/
 * request.js, after the final write of every body kind); its types do not name it, so the
 * request-tracking tests prove it is still called: a cut-off upload must stay "not sent".
 */
class ProgressHandler extends DecoratorHandler {
  readonly #progress: RequestProgress;

  constructor(handler: Dispatcher.DispatchHandlers, progress: RequestProgress) {
    super(handler);
    this.#progress = progress;
  }

  onRequestSent(): void {
    this.#progress.bodyWritten = true;
  }
}

/** The undici interceptor that ties each request made inside {@link trackRequest} to it. */
const tracking: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) => {
  const progress = handedTo;
  if (progress === undefined) return dispatch(options, handler);
  handedTo = undefined;
  progress.created = true;
  // undici's types give `DecoratorHandler` no methods; at run time it forwards them all.
  const decorated = new ProgressHandler(handler, progress) as unknown;
  return dispatch(options, decorated as Dispatcher.DispatchHandlers);
};

/** What grammY passes its `fetch` (JSON calls and multipart uploads alike). */
interface GrammyFetchInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Readable;
  readonly signal?: AbortSignal;
}

/** The part of a fetch `Response` grammY reads: it only ever parses the answer as JSON. */
interface GrammyFetchResponse {
  readonly ok: boolean;
  readonly status: number;
  json(): Promise<unknown>;
}

export type GrammyFetch = (url: string, init?: GrammyFetchInit) => Promise<GrammyFetchResponse>;

/**
 * grammY's `fetch`: undici's `request` over a keep-alive agent, with every request made inside
 * {@link trackRequest} reporting to it. Chosen by measure (`pnpm bench:http-client`, bench/README
 * "cheaper HTTP clients"): a `sendMessage` through grammY cost 0.08–0.22 ms of client CPU on it,
 * against 0.18–0.39 on grammY's default (node-fetch over a keep-alive `http.Agent`) and
 * 0.44–0.85 on the platform `fetch`. Time bounds stay grammY's and the caller's (its signal):
 * undici's own header and body timeouts are off, as node-fetch had none.
 */
export function trackingFetch(): GrammyFetch {
  const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 }).compose(tracking);
  return async (url, init = {}) => {
    const response = await request(url, {
      method: (init.method ?? "GET") as Dispatcher.HttpMethod,
      ...(init.headers === undefined ? {} : { headers: init.headers }),
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.signal === undefined ? {} : { signal: init.signal }),
      dispatcher,
    });
    return {
      ok: response.statusCode >= 200 && response.statusCode < 300,
      status: response.statusCode,
      json: () => response.body.json(),
    };
  };
}
