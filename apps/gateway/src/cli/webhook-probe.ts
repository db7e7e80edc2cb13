import { TelegramChannelDefaults } from "../channels/telegram/options.js";
import type { TelegramSettings } from "../config/types.js";
import type { CheckResult } from "./preflight.js";
import { displayUrl, field, getJson, type ProbeOptions, text } from "./probes.js";

const Guide = "docs/telegram-webhooks.md";

/**
 * Telegram's webhook as `getWebhookInfo` reports it, against the profile's delivery mode:
 * in webhook mode the URL must be the configured one and its last delivery error must not
 * have left updates waiting; in polling mode no webhook may be set (getUpdates would get 409
 * until the gateway deletes it). Each failure says what to do. `undefined` when Telegram did
 * not answer (the getMe probe already says why).
 */
export async function probeTelegramWebhook(
  profile: string,
  settings: TelegramSettings,
  options: ProbeOptions,
  nowMs = Date.now(),
): Promise<CheckResult | undefined> {
  const name = `telegram webhook (${profile})`;
  const apiRoot = (settings.apiRoot ?? TelegramChannelDefaults.apiRoot).replace(/\/+$/, "");
  let info: unknown;
  try {
    const answer = await getJson(
      `${apiRoot}/bot${settings.token}/getWebhookInfo`,
      {},
      options.timeoutMs,
    );
    if (answer.status !== 200 || field(answer.body, "ok") !== true) return undefined;
    info = field(answer.body, "result");
  } catch {
    return undefined;
  }
  const url = text(field(info, "url")) ?? "";
  const pending = Number(field(info, "pending_update_count") ?? 0);
  const errorDate = field(info, "last_error_date");
  const errorMessage = text(field(info, "last_error_message")) ?? "?";
  const lastError =
    typeof errorDate === "number"
      ? `last delivery error ${Math.max(0, Math.round(nowMs / 1000 - errorDate))} s ago: ${errorMessage}`
      : undefined;
  const configured = settings.webhook?.url;
  if (configured === undefined) {
    if (url === "") return { name, ok: true, detail: "none set (polling)" };
    return {
      name,
      ok: false,
      detail: `a webhook is set to ${displayUrl(url)} while this profile polls: getUpdates gets 409 Conflict`,
      fix: "`mediagate start` deletes it; if it comes back, another program uses this bot token: stop it, or give this profile telegram.webhook",
    };
  }
  if (url === "") {
    return {
      name,
      ok: false,
      detail: `no webhook is set (${pending} update(s) waiting)`,
      fix: "start the gateway: it calls setWebhook with telegram.webhook.url at start",
    };
  }
  if (url !== configured) {
    return {
      name,
      ok: false,
      detail: `the webhook is ${displayUrl(url)}, not telegram.webhook.url ${displayUrl(configured)}`,
      fix: "restart the gateway to set its URL; if it changes back, another program uses this bot token: stop it",
    };
  }
  const facts = `${displayUrl(url)}, ${pending} update(s) waiting`;
  if (lastError !== undefined && pending > 0) {
    return {
      name,
      ok: false,
      detail: `${facts}; ${lastError}`,
      fix: `make ${displayUrl(url)} reach telegram.webhook.listen: the reverse proxy running with a certificate Telegram trusts (or the self-signed one uploaded), the port one of 443, 80, 88, 8443, and the gateway running (${Guide})`,
    };
  }
  return {
    name,
    ok: true,
    detail: lastError === undefined ? facts : `${facts} (${lastError}; delivered since)`,
  };
}
