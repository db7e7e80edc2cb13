import { getEventListeners } from "node:events";
import { sleep, stopController } from "@mediagate/io";
import { Client } from "discord.js";
import { describe, expect, it } from "vitest";
import { heldBy } from "../../../../../test-support/signals.js";
import { createLogger } from "../../log.js";
import { DiscordCatchUp } from "./catch-up.js";
import { InboundQueues } from "./inbound-queue.js";

const log = createLogger({ level: "silent" });

describe("DiscordCatchUp", () => {
  it("keeps nothing on the channel's stop signal from one gateway session to the next", async () => {
    const stop = stopController();
    const client = new Client({ intents: [] }); // never logged in: no chat has a cursor
    const catchUp = new DiscordCatchUp({
      client,
      queues: new InboundQueues(log, sleep),
      maxMessages: 100,
      retry: undefined,
      log,
      sleep,
      signal: stop.signal,
      onUnauthorized: () => {},
      toInbound: () => undefined,
    });
    const before = heldBy(stop.signal);
    let reads = 0;
    for (let session = 0; session < 5; session++) {
      catchUp.disconnected();
      await catchUp.afterReady(
        async () => {
          reads++;
          return [];
        },
        async () => {},
      );
    }
    expect(reads).toBe(5);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    expect(heldBy(stop.signal)).toEqual(before);
    await client.destroy();
  });
});
