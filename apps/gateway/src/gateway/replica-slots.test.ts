import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { dockerHostVariable, testEnvironment } from "../../../../test-support/engine.js";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { waitFor } from "../../../../test-support/wait.js";
import { manualSchedule, ReplicaInbox, replicaDm } from "../../test/fixtures/replica-chat.js";
import type { AgentTurnInput, AgentTurnResult } from "../agents/types.js";
import { readEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import { SessionLeaseLostError } from "../durable/session-leases.js";
import { SlotLeases } from "../durable/slot-leases.js";
import { Gateway } from "../gateway.js";
import { createLogger } from "../log.js";
import { PostgresDatabase } from "../postgres/database.js";
import { filesLeftBehindText } from "./replica-slots.js";

const run = promisify(execFile);
let testDatabase: TestDatabase;
const dirs: string[] = [];
const gateways: Gateway[] = [];
const databases: PostgresDatabase[] = [];
/** This file's replica ids carry it, so its containers are told apart from other runs'. */
const tag = randomBytes(3).toString("hex");
const Slot = "profile:solo";

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("replica_slots");
});

afterEach(async () => {
  for (const gateway of gateways) {
    // The files a container's users wrote are removed the sandbox's way (not the host user's).
    await gateway.runtimes
      .get("solo")
      ?.sandbox.cleanup(Slot, { force: true, deleteDirs: true })
      .catch(() => {});
  }
  for (const gateway of gateways.splice(0)) await gateway.stop();
  const admin = new PostgresDatabase({ url: testDatabase.url });
  await admin.query(
    "test",
    "TRUNCATE journal.entries, journal.receipts, journal.replies, journal.reply_steps, leases.sessions, leases.requests, leases.slots, leases.slot_notices RESTART IDENTITY",
  );
  await admin.close();
  for (const database of databases.splice(0)) await database.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  expect(await runningReplicas()).toEqual([]);
});

afterAll(async () => {
  await testDatabase?.drop();
});

/** The replica labels of this file's running containers of the slot, one per container. */
async function runningReplicas(): Promise<string[]> {
  const { stdout } = await run(
    "docker",
    [
      "ps",
      "--filter",
      "label=mediagate.slot=profile_solo",
      "--format",
      '{{.Label "mediagate.replica"}}',
    ],
    { env: { ...process.env, ...dockerHostVariable() } },
  );
  return stdout
    .split("\n")
    .filter((line) => line.endsWith(`-${tag}`))
    .sort();
}

/** The expiry of the slot's pin as the database has it (0: released). */
async function pinExpiry(): Promise<number | undefined> {
  const database = new PostgresDatabase({ url: testDatabase.url });
  try {
    const row = await database.query<{ expires_at: string }>(
      "test",
      "SELECT expires_at FROM leases.slots WHERE slot = $1",
      [`solo/${Slot}`],
    );
    const expiry = row.rows[0]?.expires_at;
    return expiry === undefined ? undefined : Number(expiry);
  } finally {
    await database.close();
  }
}

/**
 * One replica `<name>-<tag>` of a persistent profile on the shared database, its agent running
 * each message's text as a command in the sandbox (`mediagate-sandbox:test`) and answering
 * `<name>: <output>`; its clocks moved `aheadMs` ahead of the real ones once it read the
 * database's clock (as time passing for it alone).
 */
async function replica(
  name: string,
  options: {
    clock?: { aheadMs: number };
    slotsDir?: string;
    agent?: "shell" | "echo" | ((input: AgentTurnInput) => Promise<AgentTurnResult>);
    slotIdleReleaseMs?: number;
    logLines?: string[];
    /** The home of an earlier replica of this name: its next process (`boot` 2 and on). */
    home?: string;
    boot?: number;
  } = {},
) {
  const home = options.home ?? (await mkdtemp(join(tmpdir(), "mg-replica-")));
  if (options.home === undefined) dirs.push(home);
  const replicaId = `${name}-${tag}`;
  const config = resolveConfig(
    {
      home,
      store: { kind: "postgres", url: testDatabase.url },
      cluster: {
        replicaId,
        ...(options.slotsDir === undefined ? {} : { slotsDir: options.slotsDir }),
      },
      profiles: [
        {
          name: "solo",
          allowedUsers: ["telegram:1", "telegram:2"],
          sandbox: { image: "mediagate-sandbox:test", persistent: true, diskLimitBytes: 0 },
        },
      ],
    },
    { env: readEnv(testEnvironment(home)) },
  );
  const inbox = new ReplicaInbox({ perChat: true });
  const ran: string[] = [];
  const loop = manualSchedule();
  const clock = options.clock ?? { aheadMs: 0 };
  const runTurn = async (input: AgentTurnInput): Promise<AgentTurnResult> => {
    ran.push(input.text);
    if (typeof options.agent === "function") return options.agent(input);
    if (options.agent !== "shell") return { reply: `${name}: ${input.text}` };
    const result = await input.tools.run(input.text);
    return { reply: `${name}: ${result.stdout.trim()}` };
  };
  const gateway = await Gateway.create(config, {
    channels: [inbox],
    instanceId: `${replicaId}/boot/${options.boot ?? 1}/1`,
    replicaSchedule: loop.schedule,
    slotIdleReleaseMs: options.slotIdleReleaseMs,
    ...(options.logLines === undefined
      ? {}
      : {
          logger: createLogger({
            level: "info",
            destination: { write: (line: string) => void options.logLines?.push(line) },
          }),
        }),
    clock: {
      wallMs: () => Date.now() + clock.aheadMs,
      monoMs: () => performance.now() + clock.aheadMs,
    },
    agent: () => ({ kind: "shell", runTurn }),
  });
  gateways.push(gateway);
  await gateway.start();
  const send = async (messageId: string, text: string, userId = "1") => {
    await inbox.onMessage?.(replicaDm(messageId, text, userId));
    await gateway.idle();
  };
  return { gateway, inbox, ran, loop, send, replicaId, home };
}

describe("persistent slots across replicas", () => {
  it("runs two sessions of one persistent profile on one replica, in one container", async () => {
    const a = await replica("a", { agent: "shell" });
    const b = await replica("b", { agent: "shell" });
    await a.send("1", "echo one", "1");
    // Another chat's session is free, but its slot is pinned to a: b hands the message over.
    await b.send("2", "echo two", "2");
    expect(b.ran).toEqual([]);
    await waitFor(async () => {
      await a.loop.fire();
      await a.gateway.idle();
      expect(a.ran).toEqual(["echo one", "echo two"]);
    });
    expect(a.inbox.texts).toEqual(["1> a: one", "2> a: two"]);
    expect(await runningReplicas()).toEqual([a.replicaId]);
    // A graceful stop removes its container and gives the pin up: b takes the slot at once,
    // and, the files being in a's home, the chat is told they stayed there.
    await a.gateway.stop();
    expect(await runningReplicas()).toEqual([]);
    await b.send("3", "echo three", "2");
    expect(b.inbox.texts).toEqual([
      `2> ${filesLeftBehindText(a.replicaId, b.replicaId)}`,
      "2> b: three",
    ]);
    expect(await runningReplicas()).toEqual([b.replicaId]);
  });

  it("keeps its container at a graceful stop when no other replica runs, as a single gateway does", async () => {
    const a = await replica("a", { agent: "shell" });
    await a.send("1", "echo one");
    expect(a.inbox.texts).toEqual(["1> a: one"]);
    await a.gateway.stop();
    // Alone, its persistent container outlives the stop; the next start takes it up again.
    expect(await runningReplicas()).toEqual([a.replicaId]);
    const { stdout } = await run(
      "docker",
      ["ps", "-aq", "--filter", "label=mediagate.slot=profile_solo"],
      { env: { ...process.env, ...dockerHostVariable() } },
    );
    await run("docker", ["rm", "-f", "-v", ...stdout.split("\n").filter((id) => id !== "")], {
      env: { ...process.env, ...dockerHostVariable() },
    });
  });

  it("removes its container of a slot that moved to another replica while it was down", async () => {
    const a = await replica("a", { agent: "shell" });
    await a.send("1", "echo one");
    // Alone, a keeps its container through a graceful stop (as after a SIGKILL, it stays).
    await a.gateway.stop();
    expect(await runningReplicas()).toEqual([a.replicaId]);
    // Meanwhile another replica takes the slot (a is not running: the pin moves).
    const database = new PostgresDatabase({ url: testDatabase.url });
    databases.push(database);
    const other = await SlotLeases.open(database, {
      replicaId: "other-1",
      sharedFiles: false,
      owner: "other-1/boot/1/1",
    });
    expect(await other.claim(`solo/${Slot}`, async () => undefined)).toMatchObject({ held: true });

    const logLines: string[] = [];
    await replica("a", { agent: "shell", home: a.home, boot: 2, logLines });
    expect(await runningReplicas()).toEqual([]);
    expect(logLines.some((line) => line.includes('"home":"other-1"'))).toBe(true);
  });

  it("keeps its container of a slot still its own when it starts again", async () => {
    const a = await replica("a", { agent: "shell" });
    await a.send("1", "echo one");
    await a.gateway.stop();
    const a2 = await replica("a", { agent: "shell", home: a.home, boot: 2 });
    expect(await runningReplicas()).toEqual([a.replicaId]);
    await a2.send("2", "echo two");
    expect(a2.inbox.texts).toEqual(["1> a: two"]);
    expect(await runningReplicas()).toEqual([a.replicaId]);
  });

  it("moves a dead holder's slot with its files when they live in cluster.slotsDir", async () => {
    const slotsDir = await mkdtemp(join(tmpdir(), "mg-slots-"));
    dirs.push(slotsDir);
    const a = await replica("a", { agent: "shell", slotsDir });
    // b's time runs a lease ahead: to b, a stopped renewing (a killed holder looks the same).
    const bClock = { aheadMs: 0 };
    const b = await replica("b", { agent: "shell", slotsDir, clock: bClock });
    bClock.aheadMs = Defaults.sessionLeases.leaseMs;
    await a.send("1", "echo kept > /workspace/note && echo written");
    expect(a.inbox.texts).toEqual(["1> a: written"]);
    await b.send("2", "cat /workspace/note");
    expect(b.inbox.texts).toEqual(["1> b: kept"]);
    expect(await runningReplicas()).toEqual([a.replicaId, b.replicaId]);
    // a, still running, finds at its next renewal that the pin moved: its container goes.
    await waitFor(async () => {
      await a.loop.fire();
      expect(await runningReplicas()).toEqual([b.replicaId]);
    });
  });

  it("releases an idle slot's pin with cluster.slotsDir and removes its container there", async () => {
    const slotsDir = await mkdtemp(join(tmpdir(), "mg-slots-"));
    dirs.push(slotsDir);
    const a = await replica("a", { agent: "shell", slotsDir, slotIdleReleaseMs: 1 });
    const b = await replica("b", { agent: "shell", slotsDir });
    await a.send("1", "echo kept > /workspace/note && echo written");
    expect(await runningReplicas()).toEqual([a.replicaId]);
    await waitFor(async () => {
      await a.loop.fire();
      expect(await runningReplicas()).toEqual([]);
      expect(await pinExpiry()).toBe(0);
    });
    // Another chat reaching b now takes the slot there, with the files.
    await b.send("2", "cat /workspace/note", "2");
    expect(b.inbox.texts).toEqual(["2> b: kept"]);
    expect(await runningReplicas()).toEqual([b.replicaId]);
  });

  it("keeps a message whose slot pin cannot be claimed, says so, and runs it once it can", async () => {
    const logLines: string[] = [];
    const a = await replica("a", { logLines });
    const admin = new PostgresDatabase({ url: testDatabase.url });
    databases.push(admin);
    // The pins' table refuses every statement (a broken grant, say); the session's lease works.
    await admin.query("test", "ALTER TABLE leases.slots RENAME TO slots_away");
    try {
      await a.send("1", "first");
      expect(a.ran).toEqual([]);
      const failure = logLines
        .map((line) => JSON.parse(line) as { msg: string; step?: string })
        .find((line) => line.step !== undefined);
      expect(failure).toMatchObject({
        step: "pin the session's slot to this replica",
        msg: "could not pin the session's slot to this replica; the message is kept for the replica that can",
      });
    } finally {
      await admin.query("test", "ALTER TABLE leases.slots_away RENAME TO slots");
    }
    await waitFor(async () => {
      await a.loop.fire();
      await a.gateway.idle();
      expect(a.inbox.texts).toEqual(["1> a: first"]);
    });
  });

  it("cuts its turn in the slot off once another replica took the slot's pin", async () => {
    const slotsDir = await mkdtemp(join(tmpdir(), "mg-slots-"));
    dirs.push(slotsDir);
    const aborted: unknown[] = [];
    const clock = { aheadMs: 0 };
    const a = await replica("a", {
      clock,
      slotsDir,
      // Answers only after its abort, as a slow agent would: the reply must not go out.
      agent: (input) =>
        new Promise((resolve) => {
          input.signal.addEventListener("abort", () => {
            aborted.push(input.signal.reason);
            resolve({ reply: "a: too late" });
          });
        }),
    });
    const bClock = { aheadMs: 0 };
    const b = await replica("b", { slotsDir, clock: bClock });
    bClock.aheadMs = Defaults.sessionLeases.leaseMs;
    void a.inbox.onMessage?.(replicaDm("1", "long", "1"));
    await waitFor(() => expect(a.ran).toEqual(["long"]));
    // To b, a stopped renewing: b takes the pin with another chat's message.
    await b.send("2", "other", "2");
    expect(b.inbox.texts).toEqual(["2> b: other"]);
    clock.aheadMs = Defaults.sessionLeases.renewMs;
    await waitFor(async () => {
      await a.loop.fire();
      expect(aborted).toHaveLength(1);
    });
    expect(aborted[0]).toBeInstanceOf(SessionLeaseLostError);
    // The cut-off message goes back to the cluster and on to the slot's holder, which runs it.
    await waitFor(async () => {
      await a.loop.fire();
      await b.loop.fire();
      await b.gateway.idle();
      expect(b.ran).toEqual(["other", "long"]);
    });
    await a.gateway.idle();
    expect(a.inbox.texts).toEqual([]);
    expect(b.inbox.texts).toEqual(["2> b: other", "1> b: long"]);
  });

  it("tells each chat once that its files stayed on a dead replica without shared storage", async () => {
    // A replica that died holding the slot's pin: not in the registry, its pin still running.
    const database = new PostgresDatabase({ url: testDatabase.url });
    databases.push(database);
    const dead = await SlotLeases.open(database, {
      replicaId: "gone-1",
      sharedFiles: false,
      owner: "gone-1/boot/1/1",
    });
    await dead.claim(`solo/${Slot}`, async () => undefined);

    const clock = { aheadMs: 0 };
    const b = await replica("b", { clock });
    await b.send("1", "too early");
    // While the pin runs, the slot is the dead replica's: the message waits for it.
    expect(b.ran).toEqual([]);

    clock.aheadMs = Defaults.sessionLeases.leaseMs;
    await b.send("2", "first", "1");
    await b.send("3", "second", "2");
    await b.send("4", "third", "1");
    const notice = filesLeftBehindText("gone-1", b.replicaId);
    // The message handed to the dead holder is the chat's oldest: it runs first, once the pin moved.
    expect(b.inbox.texts).toEqual([
      `1> ${notice}`,
      "1> b: too early",
      "1> b: first",
      `2> ${notice}`,
      "2> b: second",
      "1> b: third",
    ]);
  });
});
