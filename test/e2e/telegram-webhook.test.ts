import { getEventListeners, once } from "node:events";
import { rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import {
  type InboundMessage,
  TelegramChannel,
  type TelegramChannelOptions,
} from "@mediagate/gateway";
import type { Update } from "grammy/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
import { heldBy } from "../../test-support/signals.js";
import { waitFor } from "../../test-support/wait.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { captureLogs } from "../fakes/telegram/media-fixtures.js";
import { runCli } from "./harness/cli.js";
import { createTempHome } from "./harness/gateway-home.js";

/**
 * Webhook mode (docs/telegram-webhooks.md): the real TelegramChannel and grammY against
 * FakeTelegram, which POSTs updates to the channel's webhook and retries failed deliveries
 * when the test says so (`retryNow`; its own backoff is set far out of the way).
 */

const Secret = "s3cret_token-for-tests";
let fake: FakeTelegram;
let logs: ReturnType<typeof captureLogs>;
let url: string;
let port: number;
const channels: TelegramChannel[] = [];
/** A temp dir a test made, removed after it. */
let dir = "";

beforeEach(async () => {
  fake = new FakeTelegram({ webhook: { retryDelayMs: () => 3_600_000 } });
  await fake.start();
  logs = captureLogs();
  port = await closedPort();
  url = `http://127.0.0.1:${port}/telegram`;
});

afterEach(async () => {
  await Promise.all(channels.splice(0).map((channel) => channel.stop()));
  await fake.stop();
  if (dir !== "") await rm(dir, { recursive: true, force: true });
  dir = "";
});

function newChannel(extra: Partial<TelegramChannelOptions> = {}): TelegramChannel {
  const channel = new TelegramChannel({
    token: fake.token,
    apiRoot: fake.apiRoot,
    profile: "work",
    logger: logs.logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
    webhook: { url, listen: `127.0.0.1:${port}`, secretToken: Secret, maxConnections: 7 },
    ...extra,
  });
  channels.push(channel);
  return channel;
}

/** POSTs `body` to the channel's webhook as anyone could. */
function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

const update = (id: number, text: string) =>
  JSON.stringify({
    update_id: id,
    message: {
      message_id: id,
      date: 1,
      chat: { id: 5, type: "private", first_name: "U" },
      from: { id: 5, is_bot: false, first_name: "U" },
      text,
    },
  });

describe("TelegramChannel in webhook mode", () => {
  it("sets the webhook with its secret, the polled update kinds and max_connections, and receives by it", async () => {
    const received: InboundMessage[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message),
      onFatal: () => {},
    });
    const set = fake.callsTo("setWebhook")[0];
    expect(set?.params).toMatchObject({
      url,
      secret_token: Secret,
      allowed_updates: ["message", "channel_post", "callback_query"],
      max_connections: 7,
    });
    expect(fake.callsTo("deleteWebhook")).toHaveLength(0);
    expect(channels[0]?.health()).toMatchObject({ state: "up", mode: "webhook" });

    fake.sendPrivateText({ userId: 5, text: "by webhook" });
    await waitFor(() => expect(received.map((m) => m.text)).toEqual(["by webhook"]));
    await fake.webhook.idle();
    expect(fake.webhook.attempts.map((a) => a.status)).toEqual([200]);
    expect(fake.pendingUpdates).toBe(0);
    expect(fake.callsTo("getUpdates")).toHaveLength(0);
  });

  it("answers 401 to a request without the right secret and records nothing", async () => {
    const received: InboundMessage[] = [];
    await newChannel().start({
      onMessage: async (message) => void received.push(message),
      onFatal: () => {},
    });
    const none = await post(update(900, "forged"));
    const wrong = await post(update(901, "forged"), {
      "x-telegram-bot-api-secret-token": `${Secret}x`,
    });
    const right = await post(update(902, "real"), { "x-telegram-bot-api-secret-token": Secret });
    expect([none.status, wrong.status, right.status]).toEqual([401, 401, 200]);
    expect(received.map((m) => m.text)).toEqual(["real"]);
    expect(logs.lines.join("\n")).not.toContain(Secret);
  });

  it("answers 413 to a body past the bound, 400 to one that is not an Update, and records neither", async () => {
    const received: InboundMessage[] = [];
    await newChannel({
      webhook: { url, listen: `127.0.0.1:${port}`, secretToken: Secret, bodyMaxBytes: 4096 },
    }).start({ onMessage: async (message) => void received.push(message), onFatal: () => {} });
    const auth = { "x-telegram-bot-api-secret-token": Secret };
    const big = await post(update(903, "x".repeat(5000)), auth);
    const notJson = await post("{not json", auth);
    const notUpdate = await post(JSON.stringify({ message: {} }), auth);
    expect([big.status, notJson.status, notUpdate.status]).toEqual([413, 400, 400]);
    expect(received).toEqual([]);
  });

  it("answers 500 while the update cannot be recorded, and Telegram's retry is run once", async () => {
    const received: string[] = [];
    let failures = 1;
    await newChannel().start({
      onMessage: async (message) => {
        if (failures-- > 0) throw new Error("journal: disk full");
        received.push(message.text);
      },
      onFatal: () => {},
    });
    fake.sendPrivateText({ userId: 5, text: "keep me" });
    await waitFor(() => expect(fake.webhook.attempts.map((a) => a.status)).toEqual([500]));
    expect(channels[0]?.health()).toMatchObject({ state: "retrying" });
    expect(fake.pendingUpdates).toBe(1);
    const info = fake.webhook.getWebhookInfo().body as { result: Record<string, unknown> };
    expect(info.result.last_error_message).toBe("Wrong response from the webhook: 500");

    fake.webhook.retryNow();
    await waitFor(() => expect(fake.webhook.attempts.map((a) => a.status)).toEqual([500, 200]));
    expect(received).toEqual(["keep me"]);
    expect(fake.pendingUpdates).toBe(0);
    expect(channels[0]?.health()).toMatchObject({ state: "up" });
  });

  it("shows Telegram's last delivery error in its health, from getWebhookInfo", async () => {
    let wakes = 0;
    /** Each wait of the getWebhookInfo watch ends when the test says so (or at stop). */
    let wake: () => void = () => {};
    const sleep = (_ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        wake = () => {
          wakes++;
          resolve();
        };
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    let failures = 1;
    const channel = newChannel({ sleep });
    await channel.start({
      onMessage: async () => {
        if (failures-- > 0) throw new Error("journal: disk full");
      },
      onFatal: () => {},
    });
    fake.sendPrivateText({ userId: 5, text: "fails once" });
    await waitFor(() => expect(fake.webhook.attempts).toHaveLength(1));
    wake();
    await waitFor(() => expect(fake.callsTo("getWebhookInfo")).toHaveLength(1));
    await waitFor(() =>
      expect(channel.health().webhookError).toEqual({
        message: "Wrong response from the webhook: 500",
        atMs: expect.any(Number),
      }),
    );
    expect(wakes).toBe(1);
  });

  it("keeps nothing on its stop signal from one getWebhookInfo check to the next", async () => {
    let wake: () => void = () => {};
    let stop: AbortSignal | undefined;
    let waits = 0;
    /** Each wait of the watch ends when the test says so; it takes its listener off. */
    const sleep = (_ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        waits += 1;
        stop = signal;
        const onAbort = () => reject(signal?.reason);
        wake = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    const channel = newChannel({ sleep });
    await channel.start({ onMessage: async () => {}, onFatal: () => {} });
    await waitFor(() => expect(waits).toBe(1));
    const before = heldBy(stop!);
    for (let check = 1; check <= 5; check++) {
      // Woken only once it waits again: a wake while the last check is still ending is lost.
      await waitFor(() => expect(waits).toBe(check));
      wake();
      await waitFor(() => expect(fake.callsTo("getWebhookInfo")).toHaveLength(check));
    }
    // The watch waits again: its own listener only, as before the checks.
    await waitFor(() => expect(waits).toBe(6));
    expect(getEventListeners(stop!, "abort")).toHaveLength(1);
    expect(heldBy(stop!)).toEqual(before);
    await channel.stop();
  });

  it("finishes recording an update in flight when stopped, then refuses new ones", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const received: string[] = [];
    let entered = false;
    const channel = newChannel();
    await channel.start({
      onMessage: async (message) => {
        entered = true;
        await held;
        received.push(message.text);
      },
      onFatal: () => {},
    });
    const answer = post(update(910, "in flight"), { "x-telegram-bot-api-secret-token": Secret });
    await waitFor(() => expect(entered).toBe(true));
    const stopped = channel.stop();
    release();
    await stopped;
    expect((await answer).status).toBe(200);
    expect(received).toEqual(["in flight"]);
    await expect(post(update(911, "late"))).rejects.toThrow();
  });

  it("switching back to polling deletes the webhook, and getUpdates works again", async () => {
    await newChannel().start({ onMessage: async () => {}, onFatal: () => {} });
    await channels[0]?.stop();
    expect(fake.webhook.active).toBe(true);
    const received: string[] = [];
    const polling = newChannel({ webhook: undefined });
    await polling.start({
      onMessage: async (message) => void received.push(message.text),
      onFatal: () => {},
    });
    expect(fake.callsTo("deleteWebhook")).toHaveLength(1);
    expect(fake.webhook.active).toBe(false);
    expect(polling.health()).toMatchObject({ mode: "polling" });
    fake.sendPrivateText({ userId: 5, text: "by polling" });
    await waitFor(() => expect(received).toEqual(["by polling"]));
  });

  it("uploads the self-signed certificate with setWebhook when one is configured", async () => {
    dir = await createTempHome("tg-webhook-cert");
    const pem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    const certificate = join(dir, "public.pem");
    await writeFile(certificate, pem);
    await newChannel({
      webhook: { url, listen: `127.0.0.1:${port}`, secretToken: Secret, certificate },
    }).start({ onMessage: async () => {}, onFatal: () => {} });
    const set = fake.callsTo("setWebhook")[0];
    expect(set?.multipart).toBe(true);
    expect(set?.files.map((f) => [f.field, f.bytes.toString()])).toEqual([["certificate", pem]]);
    expect(set?.params).toMatchObject({ url, secret_token: Secret });
    const info = fake.webhook.getWebhookInfo().body as { result: Record<string, unknown> };
    expect(info.result.has_custom_certificate).toBe(true);
  });

  it("refuses a webhook URL that is not https and a secret Telegram would refuse", () => {
    expect(() =>
      newChannel({ webhook: { url: "http://bot.example.org/tg", secretToken: Secret } }),
    ).toThrow(/webhook.url must be an https URL/);
    expect(() =>
      newChannel({ webhook: { url: "https://bot.example.org/tg", secretToken: "has space" } }),
    ).toThrow(/secretToken must be 1-256 characters/);
    channels.length = 0;
  });
});

describe("FakeTelegram's webhook", () => {
  it("with `parallel`, posts two chats' updates at once and one chat's one after another", async () => {
    const parallel = new FakeTelegram({ webhook: { parallel: true } });
    await parallel.start();
    const seen: string[] = [];
    const held: (() => void)[] = [];
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        const text = (JSON.parse(body) as Update).message?.text ?? "";
        seen.push(text);
        held.push(() => response.end());
      });
    });
    server.listen(port, "127.0.0.1");
    await once(server, "listening");
    try {
      parallel.webhook.setWebhook({ url, secret_token: Secret });
      parallel.sendPrivateText({ userId: 1, text: "a1" });
      parallel.sendPrivateText({ userId: 1, text: "a2" });
      parallel.sendPrivateText({ userId: 2, text: "b1" });
      await waitFor(() => expect([...seen].sort()).toEqual(["a1", "b1"]));
      for (const release of held.splice(0)) release();
      await waitFor(() => expect(seen).toHaveLength(3));
      expect(seen[2]).toBe("a2");
      for (const release of held.splice(0)) release();
      await parallel.webhook.idle();
      expect(parallel.pendingUpdates).toBe(0);
    } finally {
      server.closeAllConnections();
      server.close();
      await parallel.stop();
    }
  });

  it("answers getUpdates with 409 while a webhook is set, as Telegram does", async () => {
    const bot = `${fake.apiRoot}/bot${fake.token}`;
    await fetch(`${bot}/setWebhook`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/x` }),
    });
    const answer = await fetch(`${bot}/getUpdates`, { method: "POST" });
    expect(answer.status).toBe(409);
    expect(((await answer.json()) as { description: string }).description).toBe(
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    );
  });
});

describe("mediagate doctor checks the webhook", () => {
  async function doctor(webhook: boolean): Promise<string[]> {
    dir = await createTempHome("tg-webhook-doctor");
    const file = join(dir, "mediagate.yaml");
    const telegram = {
      token: fake.token,
      apiRoot: fake.apiRoot,
      ...(webhook ? { webhook: { url, secretToken: Secret } } : {}),
    };
    const config = {
      home: join(dir, "home"),
      profiles: [{ name: "default", telegram, allowedUsers: ["telegram:1"] }],
    };
    await writeFile(file, `${JSON.stringify(config)}\n`);
    const run = await runCli(["doctor", "--config", file], { home: dir });
    const lines = run.stdout.split("\n");
    const at = lines.findIndex((line) => /^[✔✖] telegram webhook/.test(line));
    return lines.slice(at, at + 2);
  }

  const setWebhook = (target: string) =>
    fake.webhook.setWebhook({ url: target, secret_token: Secret });

  it("says when no webhook is set, and how to set it", async () => {
    const lines = await doctor(true);
    expect(lines[0]).toBe("✖ telegram webhook (default): no webhook is set (0 update(s) waiting)");
    expect(lines[1]).toContain("fix: start the gateway: it calls setWebhook");
  });

  it("reports Telegram's last delivery error while updates wait, with the fix", async () => {
    setWebhook(url); // nothing listens there: the delivery fails
    fake.sendPrivateText({ userId: 1, text: "waiting" });
    await waitFor(() => expect(fake.webhook.attempts).toHaveLength(1));
    const lines = await doctor(true);
    expect(lines[0]).toMatch(
      /^✖ telegram webhook \(default\): http:\/\/127\.0\.0\.1:\d+\/telegram, 1 update\(s\) waiting; last delivery error \d+ s ago: Connection refused/,
    );
    expect(lines[1]).toContain("reach telegram.webhook.listen");
    expect(lines.join("\n")).not.toContain(Secret);
  });

  it("fails on another URL, and on a webhook set while the profile polls", async () => {
    setWebhook("https://elsewhere.example.org/hook");
    const [other] = await doctor(true);
    expect(other).toBe(
      `✖ telegram webhook (default): the webhook is https://elsewhere.example.org/hook, not telegram.webhook.url ${url}`,
    );
    await rm(dir, { recursive: true, force: true });
    const [polling, fix] = await doctor(false);
    expect(polling).toContain(
      "a webhook is set to https://elsewhere.example.org/hook while this profile polls",
    );
    expect(fix).toContain("`mediagate start` deletes it");
  });
});
