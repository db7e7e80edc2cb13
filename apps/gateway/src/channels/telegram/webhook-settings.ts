import { isLoopbackHost, parseListenAddress } from "@mediagate/io";
import { Defaults } from "../../defaults.js";

/** Telegram's rule for `secret_token` (setWebhook): 1-256 of `A-Z`, `a-z`, `0-9`, `_`, `-`. */
export const WebhookSecretPattern = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * `telegram.webhook` (docs/telegram-webhooks.md): Telegram posts each update to `url`; the
 * gateway listens on `listen` (a TLS reverse proxy forwards `url` to it) and answers only
 * requests carrying `secretToken`.
 */
export interface TelegramWebhookOptions {
  /** The public URL given to setWebhook: https, or http on a loopback host (tests, a local Bot API server). */
  readonly url: string;
  /** `host:port` the gateway listens on (default `Defaults.telegram.webhookListen`). */
  readonly listen?: string | undefined;
  /** Sent by Telegram in `X-Telegram-Bot-Api-Secret-Token`. Never logged. */
  readonly secretToken: string;
  /** setWebhook's `max_connections`, 1-100 (default `Defaults.telegram.webhookMaxConnections`). */
  readonly maxConnections?: number | undefined;
  /** Largest body read (default `Defaults.telegram.webhookBodyMaxBytes`); larger ones get 413. */
  readonly bodyMaxBytes?: number | undefined;
  /**
   * Path of the public certificate (PEM) of a self-signed TLS setup, uploaded with every
   * setWebhook (`certificate`). Absent: the URL's certificate must be publicly trusted.
   */
  readonly certificate?: string | undefined;
}

/** {@link TelegramWebhookOptions} with defaults applied and checked. */
export interface WebhookSettings {
  readonly url: string;
  /** The path of `url`: the only one answered (a proxy forwards it unchanged). */
  readonly path: string;
  readonly host: string;
  readonly port: number;
  readonly secretToken: string;
  readonly maxConnections: number;
  readonly bodyMaxBytes: number;
  readonly certificate: string | undefined;
}

/** Whether Telegram may be given `url`: https, or http to a loopback host. */
export function webhookUrlAllowed(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol === "https:") return true;
  return parsed.protocol === "http:" && isLoopbackHost(parsed.hostname.replace(/^\[|\]$/g, ""));
}

/** Applies the defaults and checks the values; a bad one throws a RangeError naming it and the fix. */
export function resolveWebhookSettings(options: TelegramWebhookOptions): WebhookSettings {
  if (!webhookUrlAllowed(options.url)) {
    throw new RangeError(
      "TelegramChannel: webhook.url must be an https URL (http only for a loopback host), e.g. https://bot.example.org/telegram",
    );
  }
  if (typeof options.secretToken !== "string" || !WebhookSecretPattern.test(options.secretToken)) {
    throw new RangeError(
      "TelegramChannel: webhook.secretToken must be 1-256 characters of A-Z, a-z, 0-9, _ and - (set it from an environment variable)",
    );
  }
  const maxConnections = options.maxConnections ?? Defaults.telegram.webhookMaxConnections;
  if (!Number.isInteger(maxConnections) || maxConnections < 1 || maxConnections > 100) {
    throw new RangeError(
      `TelegramChannel: webhook.maxConnections must be a whole number from 1 to 100, got ${maxConnections}`,
    );
  }
  const bodyMaxBytes = options.bodyMaxBytes ?? Defaults.telegram.webhookBodyMaxBytes;
  if (!Number.isInteger(bodyMaxBytes) || bodyMaxBytes < 1) {
    throw new RangeError(
      `TelegramChannel: webhook.bodyMaxBytes must be a whole number > 0, got ${bodyMaxBytes}`,
    );
  }
  const { host, port } = parseListenAddress(options.listen ?? Defaults.telegram.webhookListen);
  return {
    url: options.url,
    path: new URL(options.url).pathname,
    host,
    port,
    secretToken: options.secretToken,
    maxConnections,
    bodyMaxBytes,
    certificate: options.certificate,
  };
}
