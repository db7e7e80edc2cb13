import { existsSync } from "node:fs";
import { join } from "node:path";
import { NotRecordedUnreachableText } from "@mediagate/gateway";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
import {
  controlPostgres,
  freshPostgresDatabase,
  type PrivatePostgres,
  startPrivatePostgres,
  type TestDatabase,
} from "../../test-support/postgres.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { telegramInstalls } from "./harness/telegram-installs.js";

/**
 * A gateway on `store: { kind: postgres }` (docs/store.md) through the real CLI, the real
 * engine and the Telegram fake: a crash between recording and replying, and a webhook update
 * that arrives while PostgreSQL is down (a restart under a load is the long suite's
 * postgres-restart.long.test.ts). The outage test stops a private cluster of its own
 * (startPrivatePostgres), never the shared one.
 */

const User = 79;
let fake: FakeTelegram;
const { install, repliesTo, disposeAll } = telegramInstalls(() => fake, User);

afterEach(async () => {
  await disposeAll();
  await fake?.stop();
});

describe("a gateway on PostgreSQL, SIGKILLed between recording and replying", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshPostgresDatabase("pg_e2e_kill");
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("answers the recorded message after the restart, exactly once, with no journal file", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const cli = await install("pg-kill", {}, { store: { kind: "postgres", url: db.url } });
    await cli.start();
    fake.sendPrivateText({ userId: User, text: "echo before-crash" });
    await waitUntil(() => repliesTo(User).includes("before-crash"), "the first answer");

    fake.sendPrivateText({ userId: User, text: "touch /workspace/pg-ran; sleep 3; echo after" });
    await waitUntil(() => cli.hasFile("/workspace/pg-ran"), "the recorded turn to start");
    // Confirmed to Telegram: only the journal in PostgreSQL still holds it.
    await waitUntil(() => fake.pendingUpdates === 0, "the update to be confirmed");
    await cli.kill();
    expect(repliesTo(User)).not.toContain("after");

    await cli.start();
    await waitUntil(() => repliesTo(User).includes("after"), "the recorded message to be answered");
    await waitUntil(() => cli.output().includes('"msg":"turn finished"'), "the turn to finish");
    fake.sendPrivateText({ userId: User, text: "echo next" });
    await waitUntil(() => repliesTo(User).includes("next"), "the next message to be answered");
    expect(repliesTo(User)).toEqual(["before-crash", "after", "next"]);
    expect(existsSync(join(cli.home, "journal.db"))).toBe(false);
  });
});

interface StoreHealthBody {
  status: string;
  store?: { reachable: boolean; detail?: string; downSinceMs?: number; roundTripMs?: number };
}

/** The gateway's health endpoint (`health.listen`). */
async function health(listen: string): Promise<StoreHealthBody> {
  const response = await fetch(`http://${listen}/health`);
  return (await response.json()) as StoreHealthBody;
}

describe("webhook mode on PostgreSQL while the server is down", () => {
  let cluster: PrivatePostgres;
  beforeAll(() => {
    cluster = startPrivatePostgres();
  });
  afterAll(() => {
    cluster?.remove();
  });

  it("answers 5xx and confirms nothing, then answers Telegram's retry 200 and the message once", async () => {
    fake = new FakeTelegram({ webhook: { retryDelayMs: () => 3_600_000 } });
    await fake.start();
    const port = await closedPort();
    const listen = `127.0.0.1:${await closedPort()}`;
    const cli = await install(
      "pg-webhook",
      {
        webhook: {
          url: `http://127.0.0.1:${port}/telegram`,
          listen: `127.0.0.1:${port}`,
          secretToken: "pg-outage-secret",
        },
      },
      // The private cluster's own `postgres` database: nobody else uses this cluster.
      { store: { kind: "postgres", url: cluster.url }, health: { listen } },
    );
    await cli.start();
    fake.sendPrivateText({ userId: User, text: "echo before-outage" });
    await waitUntil(() => repliesTo(User).includes("before-outage"), "the first answer");
    expect(await health(listen)).toMatchObject({ status: "ok", store: { reachable: true } });

    controlPostgres("stop", "fast", cluster);
    fake.sendPrivateText({ userId: User, text: "echo during-outage" });
    await waitUntil(() => fake.webhook.attempts.length === 2, "the update to be posted");
    expect(fake.webhook.attempts[1]?.status).toBeGreaterThanOrEqual(500);
    expect(fake.pendingUpdates).toBe(1);
    await waitUntil(
      async () => (await health(listen)).store?.reachable === false,
      "the health endpoint to report the store down",
    );
    const down = await health(listen);
    expect(down).toMatchObject({
      status: "degraded",
      store: { reachable: false, downSinceMs: expect.any(Number) },
    });
    // Told once, and not that a disk is failing.
    expect(repliesTo(User)).toEqual(["before-outage", NotRecordedUnreachableText]);

    controlPostgres("start", "fast", cluster);
    await waitUntil(
      async () => (await health(listen)).store?.reachable === true,
      "the health endpoint to report the store back",
    );
    fake.webhook.retryNow();
    await waitUntil(() => fake.pendingUpdates === 0, "Telegram's retry to be accepted");
    await waitUntil(() => repliesTo(User).includes("during-outage"), "the retried update's answer");
    await waitUntil(() => cli.output().includes('"msg":"turn finished"'), "the turn to finish");
    fake.sendPrivateText({ userId: User, text: "echo after-outage" });
    await waitUntil(() => repliesTo(User).includes("after-outage"), "the next answer");
    expect(repliesTo(User)).toEqual([
      "before-outage",
      NotRecordedUnreachableText,
      "during-outage",
      "after-outage",
    ]);
    expect(fake.webhook.attempts.map((a) => a.status >= 500)).toEqual([false, true, false, false]);
    expect(fake.webhook.attempts.at(2)?.status).toBe(200);
    // Degraded until the retried update was recorded (the journal and channel said so too).
    expect(await health(listen)).toMatchObject({ status: "ok", store: { reachable: true } });
    expect(cli.output()).not.toContain(cluster.url);
  });
});
