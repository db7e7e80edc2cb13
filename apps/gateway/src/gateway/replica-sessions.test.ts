import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Schedule } from "@mediagate/io";
import type { UploadLimits } from "@mediagate/media";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testEnvironment } from "../../../../test-support/engine.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { waitFor } from "../../../../test-support/wait.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
} from "../channels/types.js";
import { readEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { SessionLeases } from "../durable/session-leases.js";
import { Gateway } from "../gateway.js";
import { PostgresDatabase } from "../postgres/database.js";
import { buildSessionKey } from "../session/key.js";

let testDatabase: TestDatabase;
const homes: string[] = [];
const gateways: Gateway[] = [];
const databases: PostgresDatabase[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("replica_sessions");
});

afterEach(async () => {
  for (const gateway of gateways.splice(0)) await gateway.stop();
  const admin = new PostgresDatabase({ url: testDatabase.url });
  await admin.query(
    "test",
    "TRUNCATE journal.entries, journal.receipts, journal.replies, journal.reply_steps, leases.sessions",
  );
  await admin.close();
  for (const database of databases.splice(0)) await database.close();
  for (const home of homes.splice(0)) await rm(home, { recursive: true, force: true });
});

afterAll(async () => {
  await testDatabase?.drop();
});

function dm(messageId: string, text: string): InboundMessage {
  return {
    profile: "solo",
    platform: "telegram",
    chatId: "1",
    chatType: "dm",
    userId: "1",
    messageId,
    text,
    receiptId: messageId,
  };
}

/** A Telegram channel in memory: what the gateway sent, and its message handler. */
class Inbox implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "solo";
  readonly limits: UploadLimits = { maxBytes: () => 1 };
  readonly texts: string[] = [];
  onMessage: ((m: InboundMessage) => Promise<void>) | undefined;
  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    this.onMessage = onMessage;
  }
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  async stop(): Promise<void> {}
  async sendText(_t: ChatTarget, text: string): Promise<void> {
    this.texts.push(text);
  }
  async deliver(reply: OutboundReply): Promise<DeliveryReport> {
    this.texts.push(reply.text);
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {}
}

/** A timer the test fires by hand: the replicas' loop runs a round only when told. */
function manualSchedule() {
  let pending: (() => void)[] = [];
  const schedule: Schedule = (run) => {
    pending.push(run);
    return () => {
      pending = pending.filter((p) => p !== run);
    };
  };
  return {
    schedule,
    fire: () => {
      const due = pending;
      pending = [];
      for (const run of due) run();
    },
  };
}

/**
 * One replica: a gateway of its own id on the shared database, its agent answering
 * `<name>: text`, its wall clock `aheadMs` ahead of the real one.
 */
async function replica(name: string, clock = { aheadMs: 0 }) {
  const home = await mkdtemp(join(tmpdir(), "mg-replica-"));
  homes.push(home);
  const config = resolveConfig(
    {
      home,
      store: { kind: "postgres", url: testDatabase.url },
      profiles: [{ name: "solo", allowedUsers: ["telegram:1"] }],
    },
    { env: readEnv(testEnvironment(home)) },
  );
  const inbox = new Inbox();
  const ran: string[] = [];
  const loop = manualSchedule();
  const gateway = await Gateway.create(config, {
    channels: [inbox],
    instanceId: `${name}/boot/1/1`,
    replicaSchedule: loop.schedule,
    clock: { wallMs: () => Date.now() + clock.aheadMs, monoMs: () => performance.now() },
    agent: () => ({
      kind: "shell",
      runTurn: async (input) => {
        ran.push(input.text);
        return { reply: `${name}: ${input.text}` };
      },
    }),
  });
  gateways.push(gateway);
  await gateway.start();
  const send = async (messageId: string, text: string) => {
    await inbox.onMessage?.(dm(messageId, text));
    await gateway.idle();
  };
  return { gateway, inbox, ran, loop, send };
}

describe("sessions across replicas on one PostgreSQL store", () => {
  it("runs a session's turns on the replica holding it, whichever replica receives them", async () => {
    const a = await replica("a");
    const b = await replica("b");
    await a.send("1", "first");
    expect(a.ran).toEqual(["first"]);
    await b.send("2", "second");
    // b does not run it: it hands it to a, which picks it up on its next round.
    expect(b.ran).toEqual([]);
    a.loop.fire();
    await waitFor(() => expect(a.ran).toEqual(["first", "second"]));
    await a.gateway.idle();
    expect(a.inbox.texts).toEqual(["a: first", "a: second"]);
    expect(b.inbox.texts).toEqual([]);
  });

  it("hands its sessions over at once when it stops gracefully", async () => {
    const a = await replica("a");
    const b = await replica("b");
    await a.send("1", "first");
    await a.gateway.stop();
    await b.send("2", "second");
    expect(b.ran).toEqual(["second"]);
    expect(b.inbox.texts).toEqual(["b: second"]);
  });

  it("takes over a dead replica's messages, and runs its session once its lease expired", async () => {
    // A replica that died holding the session: its lease still runs, its owner lock is gone.
    const database = new PostgresDatabase({ url: testDatabase.url });
    databases.push(database);
    const deadLeases = await SessionLeases.open(database, { owner: "dead/boot/1/1" });
    const dead = await PostgresJournal.open(database, { owner: "dead/boot/1/1", ownerGraceMs: 0 });
    const cutOff = await dead.record(dm("1", "cut off"));
    await dead.started(cutOff.id);
    const waiting = await dead.record(dm("2", "waiting"));
    await deadLeases.claim({ profile: "solo", sessionKey: buildSessionKey(dm("2", "")) });
    await dead.close();

    const clock = { aheadMs: 0 };
    const b = await replica("b", clock);
    await b.gateway.idle();
    // The turn cut off on the dead replica gets the restart's notice at once; its session's
    // next message waits for the lease.
    expect(b.inbox.texts).toEqual([
      expect.stringContaining("while working on your message “cut off”"),
    ]);
    expect(b.ran).toEqual([]);
    const owner = await database.query<{ owner: string }>(
      "test",
      "SELECT owner FROM journal.entries WHERE id = $1",
      [waiting.id],
    );
    expect(owner.rows[0]?.owner).toBe("handed:dead/boot/1/1");

    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    b.loop.fire();
    await waitFor(() => expect(b.ran).toEqual(["waiting"]));
    await b.gateway.idle();
    expect(b.inbox.texts.at(-1)).toBe("b: waiting");
  });
});
