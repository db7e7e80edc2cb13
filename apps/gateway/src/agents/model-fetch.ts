import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { Agent, type Dispatcher, request } from "undici";

/** Statuses whose `Response` may not have a body (the Fetch standard's "null body status"). */
const NullBodyStatuses = new Set([101, 103, 204, 205, 304]);

/**
 * The `fetch` the model clients give the `openai` SDK: undici's `request` over one keep-alive
 * agent, answered as a platform `Response` (the SDK reads its headers, status and web-stream
 * body). Chosen by measure (`pnpm bench:http-client`, bench/README "cheaper HTTP clients"): a
 * streamed chat completion through the SDK cost 0.35–0.66 ms of client CPU on it, against
 * 0.58–0.93 on the platform `fetch`, whose request and response objects cost more than the
 * call itself. Time bounds stay the SDK's and the caller's (the signal): undici's own header
 * and body timeouts are off, as the platform `fetch`'s are far longer than any the SDK sets.
 *
 * What the SDK sees differs from the platform `fetch` only in its errors: a connection failure
 * is undici's error itself (`code` `ECONNREFUSED`, `UND_ERR_SOCKET`, …) instead of a
 * `TypeError("fetch failed")` with it as the cause (`connectionDetail` reads both).
 */
export function modelFetch(): typeof fetch {
  const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  return async (input, init = {}) => {
    const url = input instanceof Request ? input.url : String(input);
    // Chat requests are JSON text; undici's `request` also sends bytes, form data and streams.
    const body = (init.body ?? undefined) as string | Uint8Array | FormData | undefined;
    const response = await request(url, {
      method: (init.method ?? "GET") as Dispatcher.HttpMethod,
      headers: headerPairs(init.headers) as Iterable<[string, string]> | null,
      ...(body === undefined ? {} : { body }),
      ...(init.signal ? { signal: init.signal } : {}),
      dispatcher,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    const status = response.statusCode;
    if (NullBodyStatuses.has(status)) {
      response.body.resume();
      return new Response(null, { status, headers });
    }
    const stream = Readable.toWeb(response.body) as WebReadableStream<Uint8Array>;
    return new Response(stream as unknown as ReadableStream<Uint8Array>, { status, headers });
  };
}

/**
 * Request headers as undici takes them: it iterates a `Headers` (what the SDK passes) as name
 * and value pairs, but reads a plain array as a flat list, so any other form goes through one.
 */
function headerPairs(headers: RequestInit["headers"]): Headers | null {
  if (headers === undefined) return null;
  return headers instanceof Headers ? headers : new Headers(headers);
}
