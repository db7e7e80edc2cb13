import type { ProxyFault, RequestMatch } from "./proxy.js";

/** Matches calls of one Bot API method (`/bot<token>/<method>`), whatever the token. */
export function botMethod(method: string): RequestMatch {
  return { path: new RegExp(`^/bot[^/]+/${method}$`) };
}

/** A Bot API error answer (`{"ok":false,"error_code":…}`), before forwarding unless `stage` says. */
export function telegramError(
  status: number,
  description: string,
  options: {
    readonly parameters?: Readonly<Record<string, unknown>> | undefined;
    readonly stage?: "before" | "after" | undefined;
  } = {},
): ProxyFault {
  return {
    kind: "respond",
    stage: options.stage ?? "before",
    status,
    body: {
      ok: false,
      error_code: status,
      description,
      ...(options.parameters === undefined ? {} : { parameters: options.parameters }),
    },
  };
}

/** Telegram's flood control: 429 with `parameters.retry_after`. */
export function floodWait(retryAfterSeconds: number): ProxyFault {
  return telegramError(429, `Too Many Requests: retry after ${retryAfterSeconds}`, {
    parameters: { retry_after: retryAfterSeconds },
  });
}
