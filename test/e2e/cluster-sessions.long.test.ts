import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
import { freshPostgresDatabase, type TestDatabase } from "../../test-support/postgres.js";
import {
  type RoundRobinProxy,
  startRoundRobinProxy,
} from "../../test-support/round-robin-proxy.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import type { CliInstall } from "./harness/cli-install.js";
import { sentTo, turnsOf, webhookReplica } from "./harness/cluster-replicas.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Two gateway processes (replicas, homes of their own) on one PostgreSQL database, in webhook
 * mode behind a round-robin proxy (docs/cluster.md, "Sessions across replicas"): one user's
 * messages reach both, run on the replica holding the session, and after that replica is
 * SIGKILLed the other takes the session over; nothing is lost or answered twice.
 */

const User = 83;
/** The profile both replicas serve. */
const profile = `cluster-${process.pid}`;
let fake: FakeTelegram;
let proxy: RoundRobinProxy | undefined;
const installs: CliInstall[] = [];
let db: TestDatabase;

beforeAll(async () => {
  db = await freshPostgresDatabase("cluster_e2e");
});

afterEach(async () => {
  await Promise.all(installs.splice(0).map((install) => install.dispose()));
  await proxy?.close();
  await fake?.stop();
});

afterAll(async () => {
  await db?.drop();
});

const repliesTo = (user: number) => sentTo(fake, user);

async function replica(name: string, url: string, listen: string): Promise<CliInstall> {
  const created = await webhookReplica(fake, {
    name,
    profile,
    user: User,
    url,
    listen,
    databaseUrl: db.url,
  });
  installs.push(created);
  return created;
}

/** How many messages `install`'s processes handed to the replica holding their session. */
const handedBy = (install: CliInstall) =>
  install
    .output()
    .split("\n")
    .filter((line) => line.includes('"exit":"elsewhere"')).length;

describe("two replicas behind a load balancer", () => {
  it("runs one user's messages on one replica, and on the other once that one is SIGKILLed", async () => {
    fake = new FakeTelegram({ webhook: { retryDelayMs: () => 200 } });
    await fake.start();
    const listens = [`127.0.0.1:${await closedPort()}`, `127.0.0.1:${await closedPort()}`];
    proxy = await startRoundRobinProxy(listens);
    const a = await replica("cl-a", proxy.url, listens[0] ?? "");
    const b = await replica("cl-b", proxy.url, listens[1] ?? "");
    await a.start();
    await b.start();

    for (const word of ["one", "two", "three", "four"]) {
      fake.sendPrivateText({ userId: User, text: `echo ${word}` });
      await waitUntil(() => repliesTo(User).includes(word), `the answer to ${word}`);
    }
    // Both replicas received updates; one of them ran every turn of the session.
    expect(new Set(proxy.routed.map((route) => route.target)).size).toBe(2);
    await waitUntil(() => turnsOf(a) + turnsOf(b) === 4, "the four turns to finish");
    const [holder, other] = turnsOf(a) === 4 ? [a, b] : [b, a];
    expect(turnsOf(holder)).toBe(4);
    expect(turnsOf(other)).toBe(0);
    expect(handedBy(other)).toBeGreaterThan(0);

    await holder.kill();
    // Two at once: handed to the dead replica while its lease runs, they are taken over and
    // answered in the order sent (docs/cluster.md, "Each session's messages in order").
    fake.sendPrivateText({ userId: User, text: "echo after-kill" });
    fake.sendPrivateText({ userId: User, text: "echo later" });
    // The survivor takes the session once the dead replica's lease expired.
    await waitUntil(() => repliesTo(User).includes("later"), "the answers after the kill");
    // The profile is persistent: its slot's pin moved off the dead replica with the session,
    // and its files stayed in the dead replica's home, which the chat is told once.
    expect(repliesTo(User)).toEqual([
      "one",
      "two",
      "three",
      "four",
      expect.stringMatching(/^📁 This chat's workspace now runs on replica /),
      "after-kill",
      "later",
    ]);
    await waitUntil(() => turnsOf(other) === 2, "the survivor's two turns to finish");
    expect(turnsOf(holder)).toBe(4);
  });
});
