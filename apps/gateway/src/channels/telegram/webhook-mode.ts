import { combinedSignal, type Sleep, stopController } from "@mediagate/io";
import { type Api, InputFile } from "grammy";
import type { Logger } from "pino";
import { Defaults } from "../../defaults.js";
import type { UpdateUnit } from "./albums.js";
import { failureFacts } from "./errors.js";
import type { HealthTracker } from "./health.js";
import { grammySignal } from "./send-media.js";
import type { TelegramCaller } from "./sender.js";
import { WebhookReceiver } from "./webhook.js";
import type { WebhookSettings } from "./webhook-settings.js";

/** What {@link startWebhookMode} needs. */
export interface WebhookModeDependencies {
  readonly api: Api;
  readonly caller: TelegramCaller;
  readonly token: string;
  readonly logger: Logger;
  readonly health: HealthTracker;
  readonly allowedUpdates: readonly ("message" | "channel_post" | "callback_query")[];
  readonly dropPendingUpdates: boolean;
  readonly handle: (unit: UpdateUnit) => Promise<void>;
  readonly flush: () => Promise<void>;
  /** The wait between getWebhookInfo checks. */
  readonly sleep: Sleep;
}

/** A running webhook: its receiver and the getWebhookInfo watch. */
export interface WebhookMode {
  /** Where the receiver listens (`host:port`). */
  readonly address: string;
  /** Stops the watch and the receiver; the webhook stays set (Telegram queues updates meanwhile). */
  stop(): Promise<void>;
}

/**
 * Opens the receiver, then calls setWebhook (url, `secret_token`, the same `allowed_updates`
 * as polling, `max_connections`, the self-signed `certificate` when configured), so Telegram's
 * first delivery finds the port open. A failed
 * setWebhook closes the receiver and rejects (the caller's start fails). Then asks
 * getWebhookInfo every `Defaults.telegram.webhookInfoEveryMs` for Telegram's last delivery
 * error, shown by the health endpoint and `/status`.
 */
export async function startWebhookMode(
  deps: WebhookModeDependencies,
  settings: WebhookSettings,
): Promise<WebhookMode> {
  const receiver = new WebhookReceiver(deps, settings);
  await receiver.start();
  try {
    await deps.caller.call(
      "setWebhook",
      "-",
      (signal) =>
        deps.api.setWebhook(
          settings.url,
          {
            secret_token: settings.secretToken,
            allowed_updates: [...deps.allowedUpdates],
            max_connections: settings.maxConnections,
            drop_pending_updates: deps.dropPendingUpdates,
            ...(settings.certificate === undefined
              ? {}
              : { certificate: new InputFile(settings.certificate) }),
          },
          grammySignal(signal),
        ),
      { idempotent: true },
    );
  } catch (error) {
    await receiver.stop();
    throw error;
  }
  deps.health.mode = "webhook";
  const stopping = stopController();
  const watch = watchWebhook(deps, settings, stopping.signal);
  return {
    address: receiver.address,
    async stop() {
      stopping.abort();
      await watch;
      await receiver.stop();
    },
  };
}

async function watchWebhook(
  deps: WebhookModeDependencies,
  settings: WebhookSettings,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await deps.sleep(Defaults.telegram.webhookInfoEveryMs, signal);
    } catch {
      return;
    }
    // Not `AbortSignal.any`: on Node 20 it would add to the stop signal, which lives as long as
    // the webhook, on every check (once a minute) and never take away (combinedSignal).
    const bounded = combinedSignal([
      signal,
      AbortSignal.timeout(Defaults.telegram.requestTimeoutBaseMs),
    ]);
    try {
      const info = await deps.api.getWebhookInfo(grammySignal(bounded.signal));
      deps.health.webhookError =
        info.last_error_date === undefined
          ? undefined
          : { message: info.last_error_message ?? "", atMs: info.last_error_date * 1000 };
      if (info.url !== settings.url) {
        deps.health.set(
          "retrying",
          `the webhook is set to ${info.url === "" ? "nothing" : "another URL"}: another process took over this bot; restart the gateway`,
        );
      }
    } catch (error) {
      if (signal.aborted) return;
      deps.logger.debug(failureFacts(error, deps.token), "telegram getWebhookInfo failed");
    } finally {
      bounded.release();
    }
  }
}
