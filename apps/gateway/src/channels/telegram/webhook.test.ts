import { Writable } from "node:stream";
import type { Schedule } from "@mediagate/io";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { HealthTracker } from "./health.js";
import { WebhookReceiver } from "./webhook.js";
import { resolveWebhookSettings } from "./webhook-settings.js";

const Secret = "s3cret_token-for-tests";
const receivers: WebhookReceiver[] = [];

afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.stop();
});

/** A receiver on a free loopback port, its log lines, and its summary timers (fired by hand). */
async function receiver() {
  const lines: { msg: string; [field: string]: unknown }[] = [];
  const logger = pino(
    { level: "debug" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
        done();
      },
    }),
  );
  const timers: (() => void)[] = [];
  const schedule: Schedule = (run) => {
    timers.push(run);
    return () => {
      const at = timers.indexOf(run);
      if (at >= 0) timers.splice(at, 1);
    };
  };
  const handled: number[] = [];
  const made = new WebhookReceiver(
    {
      token: "123:token",
      logger,
      health: new HealthTracker("telegram", "work"),
      handle: async (unit) => void handled.push(...unit.map((update) => update.update_id)),
      flush: async () => {},
      schedule,
    },
    resolveWebhookSettings({
      url: "http://127.0.0.1/telegram",
      listen: "127.0.0.1:0",
      secretToken: Secret,
    }),
  );
  await made.start();
  receivers.push(made);
  const post = (id: number, secret?: string) =>
    fetch(`http://${made.address}/telegram`, {
      method: "POST",
      headers: secret === undefined ? {} : { "x-telegram-bot-api-secret-token": secret },
      body: JSON.stringify({ update_id: id }),
    }).then((answer) => answer.status);
  return { made, lines, timers, handled, post };
}

describe("WebhookReceiver", () => {
  it("logs requests without the right secret as one summary per period, not a line each", async () => {
    const { made, lines, timers, handled, post } = await receiver();
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await post(i, i % 2 === 0 ? undefined : "wrong"));
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(await post(100, Secret)).toBe(200);
    expect(handled).toEqual([100]);
    const refusals = () => lines.filter((line) => /secret token/.test(line.msg));
    expect(refusals()).toEqual([]);
    expect(timers).toHaveLength(1);
    timers.shift()?.();
    expect(refusals()).toEqual([
      expect.objectContaining({
        level: 40,
        refused: 40,
        msg: "telegram webhook: refused 40 requests without the right secret token (401) from 1 address",
      }),
    ]);
    // The next refusal starts another period; a stop writes the summary it owes.
    expect(await post(101, "wrong")).toBe(401);
    await made.stop();
    expect(refusals().map((line) => line.refused)).toEqual([40, 1]);
    expect(JSON.stringify(lines)).not.toContain(Secret);
  });
});
