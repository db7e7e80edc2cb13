import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../../../test-support/clock.js";
import { testEnvironment } from "../../../../test-support/engine.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { proxiedDatabase, type SeverableProxy } from "../../../../test-support/severable-proxy.js";
import { waitFor, waitUntil } from "../../../../test-support/wait.js";
import { commitCuttingProxy } from "../../test/fixtures/cutting-proxy.js";
import { manualSchedule, ReplicaInbox, replicaDm } from "../../test/fixtures/replica-chat.js";
import type { AgentTurnInput, AgentTurnResult } from "../agents/types.js";
import { stoppedElsewhereText, stoppedOnReplicasText } from "../commands/stop.js";
import { readEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { ownerLockKey } from "../durable/postgres-owner.js";
import { SessionLeaseLostError, SessionLeases } from "../durable/session-leases.js";
import { Gateway } from "../gateway.js";
import { StoreDownText } from "../pipeline/boundary.js";
import { queuedText, queueFullText } from "../pipeline/enqueue-turn.js";
import { PostgresDatabase } from "../postgres/database.js";
import { buildSessionKey } from "../session/key.js";
import { NotRecordedUnreachableText } from "./inbound.js";
import type { GatewayOptions } from "./options.js";

let testDatabase: TestDatabase;
const homes: string[] = [];
const gateways: Gateway[] = [];
const databases: PostgresDatabase[] = [];
const proxies: SeverableProxy[] = [];
const standIns: pg.Client[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("replica_sessions");
});

afterEach(async () => {
  for (const proxy of proxies) proxy.restore();
  for (const gateway of gateways.splice(0)) await gateway.stop();
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const session of standIns.splice(0)) await session.end();
  const admin = new PostgresDatabase({ url: testDatabase.url });
  await admin.query(
    "test",
    "TRUNCATE journal.entries, journal.receipts, journal.replies, journal.reply_steps, leases.sessions, leases.requests, leases.slots, leases.slot_notices RESTART IDENTITY",
  );
  await admin.close();
  for (const database of databases.splice(0)) await database.close();
  for (const home of homes.splice(0)) await rm(home, { recursive: true, force: true });
});

afterAll(async () => {
  await testDatabase?.drop();
});

/** The journal owner of entry `id` now. */
async function ownerOf(id: number): Promise<string | undefined> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  try {
    const row = await database.query<{ owner: string }>(
      "test",
      "SELECT owner FROM journal.entries WHERE id = $1",
      [id],
    );
    return row.rows[0]?.owner;
  } finally {
    await database.close();
  }
}

/** The holder of the only session lease now (one session per test that asks). */
async function sessionHolder(): Promise<string | undefined> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  try {
    const row = await database.query<{ holder: string }>(
      "test",
      "SELECT holder FROM leases.sessions",
    );
    return row.rows.length === 1 ? row.rows[0]?.holder : undefined;
  } finally {
    await database.close();
  }
}

/**
 * Holds `owner`'s journal owner lock on a connection of its own, as the server still does for
 * a process whose connection it has not seen go yet; `release` lets it go.
 */
async function holdOwnerLock(owner: string): Promise<{ release: () => Promise<void> }> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  databases.push(database);
  const session = await database.session("test");
  standIns.push(session);
  // Once the server has let the owner's own connection go.
  await waitFor(async () => {
    const row = await session.query<{ held: boolean }>(
      "SELECT pg_try_advisory_lock($1::bigint) AS held",
      [ownerLockKey(owner)],
    );
    expect(row.rows[0]?.held).toBe(true);
  });
  return {
    release: async () => {
      await session.query("SELECT pg_advisory_unlock($1::bigint)", [ownerLockKey(owner)]);
    },
  };
}

/**
 * A replica that died in a turn: message "1" ("cut off") started in the journal, then `waiting`
 * (message "2", if given) received, the session's lease held by the dead process
 * (`dead/boot/1/1`, whose owner lock nobody holds). Resolves with the waiting message's entry id.
 */
async function deadReplicaCutOff(): Promise<undefined>;
async function deadReplicaCutOff(waiting: string): Promise<number>;
async function deadReplicaCutOff(waiting?: string): Promise<number | undefined> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  databases.push(database);
  const deadLeases = await SessionLeases.open(database, { owner: "dead/boot/1/1" });
  const dead = await PostgresJournal.open(database, { owner: "dead/boot/1/1", ownerGraceMs: 0 });
  const cutOff = await dead.record(replicaDm("1", "cut off"));
  await dead.started(cutOff.id);
  const recorded = waiting === undefined ? undefined : await dead.record(replicaDm("2", waiting));
  await deadLeases.claim({ profile: "solo", sessionKey: buildSessionKey(replicaDm("1", "")) });
  await dead.close();
  return recorded?.id;
}

/** A proxy in front of the test database (closed after the test), and the URL through it. */
async function databaseProxy(): Promise<{ proxy: SeverableProxy; url: string }> {
  const proxied = await proxiedDatabase(testDatabase.url);
  proxies.push(proxied.proxy);
  return proxied;
}

/**
 * Waits until replica `name` holds the one session's lease: it claims it as the turn of the
 * message it received starts, so that message is in its queue. Its rounds, fired after this,
 * take the session's older messages to run before it. A round fired first may take one to the
 * queue before the message gets there, and the message is then told it waits behind one,
 * truthfully (docs/sessions.md, "Busy sessions"; seen once under CI's load).
 */
async function claimedBy(name: string): Promise<void> {
  await waitFor(async () => expect(await sessionHolder()).toMatch(new RegExp(`^${name}/`)));
}

/**
 * `texts` less the line telling a message it waits behind one other, once at most: an older
 * message taken over or handed on may reach the session's queue before a newer one the replica
 * received itself, which is then told so, truthfully (docs/sessions.md, "Busy sessions"), in
 * a race the test does not decide.
 */
function lessOneAhead(texts: readonly string[]): string[] {
  const rest = texts.filter((text) => text !== queuedText(1, true));
  expect(texts.length - rest.length).toBeLessThanOrEqual(1);
  return rest;
}

/** Runs the loop's rounds until `check` passes (what a round starts may end in a later one). */
async function roundsUntil(
  loop: { fire: () => Promise<void> },
  check: () => unknown,
): Promise<void> {
  await waitFor(async () => {
    await loop.fire();
    await check();
  });
}

/**
 * A replica's turns: "long" runs until `finish()`, anything else answers at once, each reply
 * prefixed with the replica's name.
 */
function longTurn(name: string): {
  runTurn: (input: AgentTurnInput) => Promise<AgentTurnResult>;
  finish: () => void;
} {
  let finish = (): void => {};
  const runTurn = (input: AgentTurnInput): Promise<AgentTurnResult> =>
    input.text === "long"
      ? new Promise((resolve) => {
          finish = () => resolve({ reply: `${name}: long` });
        })
      : Promise.resolve({ reply: `${name}: ${input.text}` });
  return { runTurn, finish: () => finish() };
}

interface ReplicaOptions {
  /**
   * Its clocks moved `aheadMs` ahead of the real ones (after it read the database's clock: as
   * time passing for it alone), its wall clock `wallAheadMs` more (a host clock set wrong or
   * stepped). Read on every call, so a test can move them.
   */
  clock?: { aheadMs: number; wallAheadMs?: number };
  /** Its agent's turns; by default each answers `<name>: text` at once. */
  runTurn?: (input: AgentTurnInput) => Promise<AgentTurnResult>;
  /** The profile's `sandbox.persistent`. */
  persistent?: boolean;
  /** The store's URL: the test database, or a proxy in front of it. */
  url?: string;
  /** `recovery.rerunInterrupted`. */
  rerunInterrupted?: boolean;
  maxQueuedMessages?: number;
  /** More of the profile's settings. */
  profileSettings?: Record<string, unknown>;
  gatewayOptions?: Partial<GatewayOptions>;
}

/**
 * One replica: a gateway of its own id on the shared database, its agent answering
 * `<name>: text` unless `options.runTurn` says otherwise.
 */
async function replica(name: string, options: ReplicaOptions = {}) {
  const {
    clock = { aheadMs: 0 },
    runTurn,
    persistent = false,
    url = testDatabase.url,
    rerunInterrupted = false,
    maxQueuedMessages,
    profileSettings = {},
    gatewayOptions = {},
  } = options;
  const home = await mkdtemp(join(tmpdir(), "mg-replica-"));
  homes.push(home);
  const config = resolveConfig(
    {
      home,
      store: { kind: "postgres", url },
      recovery: { rerunInterrupted },
      profiles: [
        {
          name: "solo",
          admins: ["telegram:1"],
          allowedUsers: ["telegram:1", "telegram:2"],
          // The agent here runs no command: no warm container (one made and removed per
          // replica started, about 0.6 s of the machine's CPU each, for nothing).
          sandbox: { persistent, warmPool: 0 },
          ...(maxQueuedMessages === undefined ? {} : { maxQueuedMessages }),
          ...profileSettings,
        },
      ],
    },
    { env: readEnv(testEnvironment(home)) },
  );
  const inbox = new ReplicaInbox();
  const ran: string[] = [];
  const loop = manualSchedule();
  const gateway = await Gateway.create(config, {
    channels: [inbox],
    instanceId: `${name}/boot/1/1`,
    replicaSchedule: loop.schedule,
    clock: {
      wallMs: () => Date.now() + clock.aheadMs + (clock.wallAheadMs ?? 0),
      monoMs: () => performance.now() + clock.aheadMs,
    },
    agent: () => ({
      kind: "shell",
      runTurn: async (input) => {
        ran.push(input.text);
        return runTurn === undefined ? { reply: `${name}: ${input.text}` } : runTurn(input);
      },
    }),
    ...gatewayOptions,
  });
  gateways.push(gateway);
  await gateway.start();
  const send = async (messageId: string, text: string, userId?: string) => {
    await inbox.onMessage?.(replicaDm(messageId, text, userId));
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
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["first", "second"]));
    await a.gateway.idle();
    expect(a.inbox.texts).toEqual(["a: first", "a: second"]);
    expect(b.inbox.texts).toEqual([]);
  });

  it("keeps its session and running turn when its wall clock steps, and a replica whose wall clock is ahead takes nothing", async () => {
    const aClock = { aheadMs: 0, wallAheadMs: 0 };
    const turns = longTurn("a");
    const a = await replica("a", { clock: aClock, runTurn: turns.runTurn });
    // b's host clock is a minute ahead of a's; the database's clock is one for both.
    const b = await replica("b", { clock: { aheadMs: 0, wallAheadMs: 60_000 } });
    void a.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    // An operator (or NTP) steps a's host clock forward by a minute while its turn runs.
    aClock.wallAheadMs = 60_000;
    for (let round = 0; round < 3; round++) await a.loop.fire();
    await b.send("2", "next");
    // b hands the message to a, which still holds the session: b runs nothing.
    expect(b.ran).toEqual([]);
    expect(await sessionHolder()).toMatch(/^a\//);
    turns.finish();
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["long", "next"]));
    await a.gateway.idle();
    expect(a.inbox.texts).toEqual(["a: long", "a: next"]);
    expect(b.inbox.texts).toEqual([]);
  });

  it("leaves a scheduled run handed to the session's holder running in its task's record until the holder ends it", async () => {
    // Each replica's scheduler on a clock of its own: only b's comes to the task's due time.
    const aTime = manualClock(Date.now());
    const bTime = manualClock(Date.now());
    const tasksOn = (time: typeof aTime): Partial<GatewayOptions> => ({
      taskClock: { wallMs: time.now, monoMs: time.now },
      taskSchedule: time.schedule,
    });
    const long = longTurn("a");
    const a = await replica("a", { runTurn: long.runTurn, gatewayOptions: tasksOn(aTime) });
    const b = await replica("b", { gatewayOptions: tasksOn(bTime) });
    await a.send("1", "first");
    expect(await sessionHolder()).toMatch(/^a\//);
    const tasks = b.gateway.runtimes.get("solo")?.store.tasks;
    if (tasks === undefined) throw new Error("no task store");
    const added = await tasks.addTask(
      {
        id: "handed1",
        owner: "telegram:1",
        timing: { kind: "every", everyMs: 3_600_000 },
        timezone: "UTC",
        text: "long",
        chat: { platform: "telegram", chatId: "1", chatType: "dm" },
        catchUp: "skip",
        nextDueMs: bTime.now(),
      },
      { maxPerUser: 10, maxPerProfile: 10 },
    );
    expect(added.status).toBe("added");
    // b's scheduler looks again (its longest wait) and starts the run; a holds the session.
    bTime.advance(Defaults.schedules.maxWaitMs);
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["first", "long"]));
    await b.gateway.idle();
    expect(b.ran).toEqual([]);
    // b handed the run on: it is running on a, and the record says so.
    const outcome = async () => (await tasks.recentRuns("handed1", 5))[0]?.outcome;
    await waitFor(async () => expect(await outcome()).toBe("running"));
    await b.gateway.idle();
    expect(await outcome()).toBe("running");
    long.finish();
    await a.gateway.idle();
    await waitFor(async () => expect(await outcome()).toBe("done"));
    expect(a.inbox.texts).toEqual(["a: first", "a: long"]);
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

  it("takes over a dead replica's messages and session once its lease expired", async () => {
    // A replica that died holding the session: its lease still runs, its owner lock is gone.
    const waiting = await deadReplicaCutOff("waiting");

    const clock = { aheadMs: 0 };
    const b = await replica("b", { clock });
    await b.gateway.idle();
    // While its lease runs, the dead replica might only have lost its connection for a moment:
    // nothing of it is taken over.
    expect(b.inbox.texts).toEqual([]);
    expect(await ownerOf(waiting)).toBe("dead/boot/1/1");

    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    await roundsUntil(b.loop, () => expect(b.ran).toEqual(["waiting"]));
    await b.gateway.idle();
    // The turn cut off on the dead replica gets the restart's notice, the waiting message runs.
    expect(b.inbox.texts).toEqual([
      expect.stringContaining("while working on your message “cut off”"),
      "b: waiting",
    ]);
  });

  it("cuts its turn off and sends nothing once another replica took its session over", async () => {
    const aborted: unknown[] = [];
    const clock = { aheadMs: 0 };
    // Answers only after its abort, as a slow agent would: the reply must not go out.
    const runTurn = (input: AgentTurnInput): Promise<AgentTurnResult> =>
      new Promise((resolve) => {
        input.signal.addEventListener("abort", () => {
          aborted.push(input.signal.reason);
          resolve({ reply: "a: too late" });
        });
      });
    const a = await replica("a", { clock, runTurn });
    // b's time runs a lease ahead of a's (a is frozen in a pause): a's lease expired for b.
    const bClock = { aheadMs: 0 };
    const b = await replica("b", { clock: bClock });
    bClock.aheadMs = Defaults.sessionLeases.leaseMs;
    void a.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    // a is cut off from the database past its lease (b's clock says it expired): b takes the
    // session with the next message it receives, which waits for the older one a still owns.
    void b.inbox.onMessage?.(replicaDm("2", "next"));
    await waitFor(async () => expect(await ownerOf(2)).toBe("b/boot/1/1"));
    // b records the message, then claims the session for its turn: only then may a's renewal
    // come, or a renews first and keeps the session (b then hands its message over to a).
    await claimedBy("b");
    clock.aheadMs = Defaults.sessionLeases.renewMs;
    await roundsUntil(a.loop, () => expect(aborted).toHaveLength(1));
    await a.gateway.idle();
    expect(aborted[0]).toBeInstanceOf(SessionLeaseLostError);
    expect(a.inbox.texts).toEqual([]);
    expect(b.ran).toEqual([]);
    // Its cut-off turn goes back to the cluster on a's next round; b takes it as the older
    // message of its session: it ran no command, so b runs it again, as a restart would, first.
    await roundsUntil(a.loop, async () => expect(await ownerOf(1)).not.toBe("a/boot/1/1"));
    await roundsUntil(b.loop, () => expect(b.ran).toEqual(["long", "next"]));
    await b.gateway.idle();
    expect(b.inbox.texts).toEqual(["b: long", "b: next"]);
    expect(a.inbox.texts).toEqual([]);
  });

  for (const seenLate of [false, true]) {
    it(`takes no work while cut off from the database and never answers a session taken over${seenLate ? ", the server seeing the cut late" : ""}`, async () => {
      const { proxy, url: throughProxy } = await databaseProxy();
      const aborted: unknown[] = [];
      let finishLate: (() => void) | undefined;
      const clock = { aheadMs: 0 };
      const a = await replica("a", {
        clock,
        runTurn: (input) => {
          if (input.text !== "long") return Promise.resolve({ reply: `a: ${input.text}` });
          // An agent that ignores its abort and answers once the database is back.
          input.signal.addEventListener("abort", () => aborted.push(input.signal.reason));
          return new Promise((resolve) => {
            finishLate = () => resolve({ reply: "a: too late" });
          });
        },
        url: throughProxy,
      });
      const bClock = { aheadMs: 0 };
      const b = await replica("b", { clock: bClock });
      bClock.aheadMs = Defaults.sessionLeases.leaseMs;
      await a.send("1", "first");
      expect(a.inbox.texts).toEqual(["a: first"]);
      void a.inbox.onMessage?.(replicaDm("2", "long"));
      await waitFor(() => expect(a.ran).toEqual(["first", "long"]));

      proxy.sever();
      // Cut off, a records nothing, so runs nothing: the platform delivers the update again.
      await expect(a.inbox.onMessage?.(replicaDm("3", "while cut off"))).rejects.toThrow();
      expect(a.inbox.texts).toEqual(["a: first", NotRecordedUnreachableText]);
      // Its lease lapses by its own clock: its turn is cut off.
      clock.aheadMs = Defaults.sessionLeases.leaseMs;
      await roundsUntil(a.loop, () => expect(aborted).toHaveLength(1));
      expect(aborted[0]).toBeInstanceOf(SessionLeaseLostError);

      // b, whose clock says a's lease expired, takes the session with its next message, and
      // a's message whose turn was cut off (it ran no command: b runs it again): a's lock
      // connection is gone with the database, so once a's lease expired a counts as gone, and
      // b runs its older message first.
      //
      // The server sees a's connections go a moment after the cut, later on a loaded machine
      // (seen under a whole suite's load): until it does, a's owner lock is held and a may be
      // alive, so b holds its message back behind a's and looks again on its next round. Here
      // a stand-in holds a's lock for the server until b has held its message back.
      const standIn = seenLate ? await holdOwnerLock("a/boot/1/1") : undefined;
      void b.inbox.onMessage?.(replicaDm("4", "next"));
      await claimedBy("b");
      if (standIn !== undefined) {
        await waitUntil(() => b.loop.waiting() > 1, "b holds its message back for a round");
        expect(b.ran).toEqual([]);
        expect(await ownerOf(2)).toBe("a/boot/1/1");
        await standIn.release();
      }
      await roundsUntil(b.loop, () => expect(b.ran).toEqual(["long", "next"]));
      await b.gateway.idle();
      expect(b.inbox.texts).toEqual(["b: long", "b: next"]);

      // The database is back for a; its agent answers the turn it lost: nothing goes out.
      proxy.restore();
      finishLate?.();
      await a.gateway.idle();
      for (let round = 0; round < 3; round++) await a.loop.fire();
      await a.gateway.idle();
      // The platform's retry of the update a could not record: a hands it to the holder.
      await a.send("3", "while cut off");
      await roundsUntil(b.loop, () => expect(b.ran).toEqual(["long", "next", "while cut off"]));
      await b.gateway.idle();
      expect(a.ran).toEqual(["first", "long"]);
      expect(a.inbox.texts).toEqual(["a: first", NotRecordedUnreachableText]);
      expect(b.inbox.texts).toEqual(["b: long", "b: next", "b: while cut off"]);
      expect(await ownerOf(2)).toBe("b/boot/1/1");
    });
  }

  it("sends a reply whose record committed although the connection was lost before the answer", async () => {
    const proxy = await commitCuttingProxy(testDatabase.url, "INSERT INTO journal.replies", {
      after: "commit",
    });
    try {
      const a = await replica("a", { url: proxy.url });
      proxy.state.armed = true;
      await a.send("1", "hello");
      // Told the database went away, the turn was kept; its reply is in the journal already.
      expect(a.inbox.texts).toEqual([StoreDownText]);
      // The database answers (a message is recorded): the kept turn is handed on, once.
      await a.send("2", "again");
      await waitFor(() =>
        expect([...a.inbox.texts].sort()).toEqual([StoreDownText, "a: again", "a: hello"].sort()),
      );
      await a.gateway.idle();
      expect(a.ran).toEqual(["hello", "again"]);
      expect(a.inbox.texts.filter((text) => text === "a: hello")).toHaveLength(1);
    } finally {
      for (const gateway of gateways.splice(0)) await gateway.stop();
      await proxy.close();
    }
  });

  it("runs a turn again whose start was recorded although the connection was lost before the answer", async () => {
    const proxy = await commitCuttingProxy(testDatabase.url, "SET state = 'started'", {
      after: "commit",
    });
    try {
      let turns = 0;
      const a = await replica("a", {
        runTurn: async (input) => {
          turns += 1;
          // The first turn's first command: its start is recorded, the answer lost, so the
          // command does not run. The turn run again answers without one.
          if (turns === 1) await input.tools.run("echo never");
          return { reply: `a: ${input.text} (turn ${turns})` };
        },
        url: proxy.url,
      });
      proxy.state.armed = true;
      await a.send("1", "hello");
      expect(a.inbox.texts).toEqual([StoreDownText]);
      // The database answers (a message is recorded): the kept turn, which ran no command,
      // runs again instead of being told it was cut off.
      // The newer message waits behind the older one still open (the loop's rounds look again).
      void a.inbox.onMessage?.(replicaDm("2", "again"));
      await roundsUntil(a.loop, () => expect(a.ran).toEqual(["hello", "hello", "again"]));
      await a.gateway.idle();
      // The kept turn, handed on as "again" is recorded, may reach the queue before it.
      expect(lessOneAhead(a.inbox.texts)).toEqual([
        StoreDownText,
        "a: hello (turn 2)",
        "a: again (turn 3)",
      ]);
    } finally {
      for (const gateway of gateways.splice(0)) await gateway.stop();
      await proxy.close();
    }
  });

  it("runs a message handed over before a later one the holder received itself", async () => {
    const a = await replica("a");
    const b = await replica("b");
    await a.send("1", "first");
    // b hands "second" to a; before a's round picks it up, a receives "third" itself.
    await b.send("2", "second");
    expect(await ownerOf(2)).toBe("handed:a/boot/1/1");
    void a.inbox.onMessage?.(replicaDm("3", "third"));
    await roundsUntil(a.loop, () => expect(a.ran).toHaveLength(3));
    await a.gateway.idle();
    expect(a.ran).toEqual(["first", "second", "third"]);
    // "second" may reach the session's queue before "third" (seen once under a whole suite's
    // load): the order of the answers is what this test is about.
    expect(lessOneAhead(a.inbox.texts)).toEqual(["a: first", "a: second", "a: third"]);
  });

  it("holds the holder's queue to maxQueuedMessages with messages another replica hands over", async () => {
    const long = longTurn("a");
    const a = await replica("a", { runTurn: long.runTurn, maxQueuedMessages: 2 });
    const b = await replica("b", { maxQueuedMessages: 2 });
    void a.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    // The chat's updates now reach b (webhooks behind a load balancer): b hands each to a, the
    // session's holder, whose round takes it to its queue, one at a time.
    const journal = a.gateway.journal as PostgresJournal;
    for (const id of [2, 3, 4, 5]) {
      await b.send(String(id), `m${id}`);
      await roundsUntil(a.loop, async () => expect(await ownerOf(id)).toBe("a/boot/1/1"));
      // Queued, or refused: the next one comes once this one is either.
      await waitFor(async () => {
        let closed = 0;
        for (let entry = 2; entry <= id; entry++) {
          if ((await journal.entryState(entry))?.state === "done") closed++;
        }
        expect((await a.gateway.health()).queue.queued + closed).toBe(id - 1);
      });
    }
    // Two wait; the third is refused (closed `overflow`, the chat told once), the fourth too.
    expect((await a.gateway.health()).queue.queued).toBe(2);
    for (const id of [4, 5]) {
      expect(await journal.entryState(id)).toMatchObject({ state: "done", outcome: "overflow" });
    }
    // Told by a, the holder: the two that wait their line, the refused one the notice, once.
    await waitFor(() =>
      expect(a.inbox.texts).toEqual([
        queuedText(1, true),
        queuedText(2, true),
        queueFullText(2, true),
      ]),
    );
    expect(b.inbox.texts).toEqual([]);
    long.finish();
    await waitFor(() => expect(a.ran).toEqual(["long", "m2", "m3"]));
    await a.gateway.idle();
    expect(a.inbox.texts.slice(3)).toEqual(["a: long", "a: m2", "a: m3"]);
    expect(b.ran).toEqual([]);
  });

  it("does not cap messages its previous process left when it hands them to the holder", async () => {
    const long = longTurn("b");
    const b = await replica("b", { runTurn: long.runTurn, maxQueuedMessages: 1 });
    void b.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(b.ran).toEqual(["long"]));
    // a's previous process (gone: its owner lock went with it) accepted three messages of the
    // session before it died; a's next start recovers them and hands them to b, the holder.
    const database = new PostgresDatabase({ url: testDatabase.url });
    databases.push(database);
    const before = await PostgresJournal.open(database, { owner: "a/boot/0/1", ownerGraceMs: 0 });
    for (const id of ["2", "3", "4"]) await before.record(replicaDm(id, `r${id}`));
    await before.close();
    const a = await replica("a", { maxQueuedMessages: 1 });
    await waitFor(async () => expect(await ownerOf(4)).toMatch(/^handed.*:b\/boot\/1\/1$/));
    await roundsUntil(b.loop, async () => expect((await b.gateway.health()).queue.queued).toBe(3));
    long.finish();
    await waitFor(() => expect(b.ran).toEqual(["long", "r2", "r3", "r4"]));
    await b.gateway.idle();
    // Accepted before the crash: no "queued" line, no cap.
    expect(b.inbox.texts).toEqual(["b: long", "b: r2", "b: r3", "b: r4"]);
    expect(a.ran).toEqual([]);
    expect(a.inbox.texts).toEqual([]);
  });

  it("runs a message its previous process left only after an older one another replica holds", async () => {
    const database = new PostgresDatabase({ url: testDatabase.url });
    databases.push(database);
    // A live replica keeps the session's older message; this replica's previous process (gone:
    // its owner lock went with it) left the newer one, which its next start recovers.
    const live = await PostgresJournal.open(database, { owner: "live/boot/1/1" });
    const older = await live.record(replicaDm("1", "older"));
    const before = await PostgresJournal.open(database, { owner: "a/boot/0/1", ownerGraceMs: 0 });
    await before.record(replicaDm("2", "newer"));
    await before.close();

    const a = await replica("a");
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Recovered at start, the newer message waits for the older one still on its way.
    expect(a.ran).toEqual([]);
    await live.handOver([older.id], "a/boot/1/1");
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["older", "newer"]));
    await a.gateway.idle();
    // "older", handed over as just received, finds "newer" waiting, but goes before it
    // (docs/cluster.md): nothing is ahead of it, so it is told nothing.
    expect(a.inbox.texts).toEqual(["a: older", "a: newer"]);
    await live.close();
  });

  it("tells of a dead replica's cut-off turn before answering a newer message", async () => {
    await deadReplicaCutOff();

    const clock = { aheadMs: 0 };
    const b = await replica("b", { clock });
    await b.gateway.idle();
    expect(b.inbox.texts).toEqual([]);
    // The dead replica's lease has expired by b's clock; b has run no round since.
    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    await b.send("2", "next");
    expect(b.ran).toEqual(["next"]);
    expect(b.inbox.texts).toEqual([
      expect.stringContaining("while working on your message “cut off”"),
      "b: next",
    ]);
  });

  it("reruns a dead replica's cut-off turn before a newer message with rerunInterrupted", async () => {
    await deadReplicaCutOff();

    const clock = { aheadMs: 0 };
    const b = await replica("b", { clock, rerunInterrupted: true });
    await b.gateway.idle();
    expect(b.ran).toEqual([]);
    // The dead replica's lease has expired by b's clock; b has run no round since.
    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    void b.inbox.onMessage?.(replicaDm("2", "next"));
    await claimedBy("b");
    await roundsUntil(b.loop, () => expect(b.ran).toHaveLength(2));
    await b.gateway.idle();
    expect(b.ran).toEqual(["cut off", "next"]);
    expect(b.inbox.texts).toEqual(["b: cut off", "b: next"]);
  });

  it("runs a dead replica's message it takes before a newer one as soon as it is queued, with no round", async () => {
    // The newer message's turn takes the older one and dispatches it; the older one's
    // pipeline reads its session's id before it reaches the queue. That read is made slow
    // here: the newer turn's next look finds the older one on its way, neither taken nor
    // queued, and waits for it to be queued, not for a check later (this replica's loop, whose
    // schedule no test fires here, would hold it forever).
    await deadReplicaCutOff();

    const { proxy, url: throughProxy } = await databaseProxy();
    const clock = { aheadMs: 0 };
    const b = await replica("b", { clock, rerunInterrupted: true, url: throughProxy });
    await b.gateway.idle();
    proxy.delayWrites("FROM state_sessions WHERE profile", 300);
    // The dead replica's lease has expired by b's clock; b has run no round since.
    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    const rounds = b.loop.waiting();
    await b.send("2", "next");
    expect(b.ran).toEqual(["cut off", "next"]);
    expect(b.inbox.texts).toEqual(["b: cut off", "b: next"]);
    // Nothing left scheduled for the held-back turn: only the loop's next round.
    expect(b.loop.waiting()).toBe(rounds);
  });

  it("runs a message at once after /stop dropped the ones queued before it", async () => {
    const a = await replica("a", {
      runTurn: (input) =>
        input.text === "long"
          ? new Promise((_resolve, reject) => {
              input.signal.addEventListener("abort", () => reject(new Error("aborted")));
            })
          : Promise.resolve({ reply: `a: ${input.text}` }),
    });
    void a.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    void a.inbox.onMessage?.(replicaDm("2", "queued"));
    await waitFor(() => expect(a.inbox.texts).toEqual([queuedText(1, true)]));
    await a.send("3", "/stop");
    expect(await (a.gateway.journal as PostgresJournal).entryState(2)).toMatchObject({
      state: "done",
      outcome: "stopped",
    });
    // No round of the loop, no wait for an older message: the dropped ones do not hold it back.
    await a.send("4", "after");
    expect(a.ran).toEqual(["long", "after"]);
    expect(a.inbox.texts.at(-1)).toBe("a: after");
  });

  it("drops with /stop a message handed to the holder and not picked up yet", async () => {
    const a = await replica("a");
    const b = await replica("b");
    await a.send("1", "first");
    await b.send("2", "second");
    expect(await ownerOf(2)).toBe("handed:a/boot/1/1");
    await a.send("3", "/stop");
    expect(await (a.gateway.journal as PostgresJournal).entryState(2)).toMatchObject({
      state: "done",
      outcome: "stopped",
    });
    await a.send("4", "after");
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["first", "after"]));
    expect(a.inbox.texts.at(-1)).toBe("a: after");
  });

  it("drops with /stop all the messages of every session on the slot handed to it, of every chat", async () => {
    // Both users' sessions run on a's persistent slot; b received a message of each and handed
    // it to a, whose round has not picked them up. One journal read finds both chats' messages.
    const a = await replica("a", { persistent: true });
    const b = await replica("b", { persistent: true });
    await a.send("1", "first", "2");
    await a.send("2", "hello", "1");
    await b.send("3", "second", "2");
    await b.send("4", "again", "1");
    expect([await ownerOf(3), await ownerOf(4)]).toEqual([
      "handed:a/boot/1/1",
      "handed:a/boot/1/1",
    ]);
    await a.send("5", "/stop all", "1");
    expect(a.inbox.texts.at(-1)).toContain("dropped 2 queued message(s)");
    const journal = a.gateway.journal as PostgresJournal;
    for (const id of [3, 4]) {
      expect(await journal.entryState(id)).toMatchObject({ state: "done", outcome: "stopped" });
    }
    await a.send("6", "after", "2");
    await roundsUntil(a.loop, () => expect(a.ran).toEqual(["first", "hello", "after"]));
  });

  it("runs a command approved on another replica than the one whose turn waits for it", async () => {
    // The question is asked on h, which holds the user's session; the answer reaches l (the
    // replica holding the bot's connection, say): l records it for h, h's turn goes on.
    const approvals = { ask: "always", approvers: "sender", expiresSeconds: 600 };
    const settings = { agent: { kind: "shell", approvals } };
    const asks = async (input: AgentTurnInput): Promise<AgentTurnResult> => {
      const result = await input.tools.run("echo built");
      return { reply: `h: ${result.stdout.trim()}` };
    };
    const h = await replica("h", { runTurn: asks, profileSettings: settings });
    const l = await replica("l", { profileSettings: settings });
    void h.inbox.onMessage?.(replicaDm("1", "build", "2"));
    await waitFor(() => expect(h.inbox.texts.join("\n")).toContain("/allow"));
    await l.send("2", "/allow", "2");
    expect(l.inbox.texts).toEqual([expect.stringMatching(/^✅ Allowed once by /)]);
    await waitFor(() => expect(h.inbox.texts.at(-1)).toBe("h: built"));
    expect(l.ran).toEqual([]);
  });

  it("stops a session on the replica running it when an admin asks another replica", async () => {
    const aborted: unknown[] = [];
    const a = await replica("a", {
      runTurn: (input) =>
        new Promise((_resolve, reject) => {
          input.signal.addEventListener("abort", () => {
            aborted.push(input.signal.reason);
            reject(new Error("aborted"));
          });
        }),
    });
    const b = await replica("b");
    void a.inbox.onMessage?.(replicaDm("1", "long"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    await b.send("2", "/stop");
    expect(b.inbox.texts).toEqual([stoppedElsewhereText("a/boot/1/1")]);
    expect(aborted).toEqual([]);
    await roundsUntil(a.loop, () => expect(aborted).toHaveLength(1));
    await a.gateway.idle();
    expect(String(aborted[0])).toContain("stopped by /stop");
    expect(a.inbox.texts).toEqual([]);
    expect(await (a.gateway.journal as PostgresJournal).entryState(1)).toMatchObject({
      state: "done",
      outcome: "stopped",
    });
  });

  it("stops every session on a persistent slot on the other replicas too with /stop all", async () => {
    const aborted: unknown[] = [];
    const hang = (input: AgentTurnInput) =>
      new Promise<AgentTurnResult>((_resolve, reject) => {
        input.signal.addEventListener("abort", () => {
          aborted.push(input.signal.reason);
          reject(new Error("aborted"));
        });
      });
    const a = await replica("a", { runTurn: hang, persistent: true });
    const b = await replica("b", { persistent: true });
    // User 2's session runs on a; the admin (user 1) shares the profile's slot and asks b.
    void a.inbox.onMessage?.(replicaDm("1", "fork loop", "2"));
    await waitFor(() => expect(a.ran).toEqual(["fork loop"]));
    await b.send("2", "/stop all");
    expect(b.inbox.texts).toHaveLength(1);
    expect(b.inbox.texts[0]).toContain(stoppedOnReplicasText(["a/boot/1/1"]));
    expect(aborted).toEqual([]);
    await roundsUntil(a.loop, () => expect(aborted).toHaveLength(1));
    await a.gateway.idle();
    expect(String(aborted[0])).toContain("stopped by /stop all");
    expect(a.inbox.texts).toEqual([]);
    // b asked no one of itself and nothing is left waiting for a.
    const admin = new PostgresDatabase({ url: testDatabase.url });
    databases.push(admin);
    const left = await admin.query("test", "SELECT holder FROM leases.requests");
    expect(left.rows).toEqual([]);
  });
});
