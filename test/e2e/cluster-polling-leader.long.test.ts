import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../test-support/postgres.js";
import { FakeDiscord } from "../fakes/discord/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { runCli } from "./harness/cli.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/** The bound on a dead replica's bot moving to another (docs/cluster.md). */
const TakeoverBoundMs = 15_000;
const User = 81;
const PollingStarted = '"msg":"telegram long polling started"';

interface Health {
  channels: { platform: string; state: string; standby?: boolean }[];
  cluster?: { id: string; replica: string; replicas?: { id: string; alive: boolean }[] };
}

/** The health endpoint's URL a run logged (`health.listen` on port 0). */
function healthUrl(stderr: string): string | undefined {
  const line = stderr.split("\n").find((l) => l.includes('"msg":"health endpoint listening"'));
  return line === undefined ? undefined : (JSON.parse(line) as { url: string }).url;
}

async function health(url: string): Promise<Health> {
  return (await (await fetch(`${url}/health`)).json()) as Health;
}

/**
 * Two replicas (separate homes, one engine, one PostgreSQL database) of one Telegram bot in
 * long polling (docs/cluster.md, "One connection per bot"): only the leader polls, the fake Bot
 * API never sees two `getUpdates` consumers at once (a 409 fails the test), and when the leader
 * is SIGKILLed the other polls within the bound and answers.
 */
describe("two replicas polling one Telegram bot", () => {
  let db: TestDatabase;
  let fake: FakeTelegram;
  const installs: CliInstall[] = [];

  beforeAll(async () => {
    db = await freshPostgresDatabase("cluster_polling");
    fake = new FakeTelegram();
    await fake.start();
  });
  afterAll(async () => {
    await Promise.all(installs.map((install) => install.dispose()));
    await fake?.stop();
    await db?.drop();
  });

  const replica = async (prefix: string): Promise<CliInstall> => {
    const install = await CliInstall.create(
      prefix,
      {
        telegram: { token: fake.token, apiRoot: fake.apiRoot },
        admins: [`telegram:${User}`],
        progress: { enabled: false },
      },
      { store: { kind: "postgres", url: db.url }, health: { listen: "127.0.0.1:0" } },
    );
    installs.push(install);
    return install;
  };

  it("polls on one replica only, on the other within the bound after the leader's SIGKILL, and hands over at a graceful stop", async () => {
    const a = await replica("cl-a");
    const b = await replica("cl-b");
    const runA = await a.start();
    await waitUntil(() => runA.stderr().includes(PollingStarted), "replica a to poll");
    await waitUntil(() => fake.polling, "the held poll");
    const runB = await b.start();
    const urlB = healthUrl(runB.stderr());
    expect(urlB).toBeDefined();

    // b waits: standby in its health, both replicas listed alive in the cluster.
    const standing = await health(urlB as string);
    expect(standing.channels).toEqual([
      expect.objectContaining({ platform: "telegram", state: "up", standby: true }),
    ]);
    expect(standing.cluster?.replicas?.filter((r) => r.alive)).toHaveLength(2);
    fake.sendPrivateText({ userId: User, text: "echo from-leader" });
    await waitUntil(
      () => fake.callsTo("sendMessage").some((c) => String(c.params.text).includes("from-leader")),
      "the leader's answer",
    );
    expect(runB.stderr()).not.toContain(PollingStarted);

    await a.kill();
    await waitUntil(
      () => runB.stderr().includes(PollingStarted),
      "replica b to poll after a's SIGKILL",
      TakeoverBoundMs,
    );
    fake.sendPrivateText({ userId: User, text: "echo from-follower" });
    await waitUntil(
      () =>
        fake.callsTo("sendMessage").some((c) => String(c.params.text).includes("from-follower")),
      "the new leader's answer",
    );

    expect(fake.getUpdatesConsumers).toEqual({ conflicts: 0, max: 1 });
    expect(a.output() + b.output()).not.toContain("409 Conflict");

    // An admin's /status lists the cluster's replicas.
    fake.sendPrivateText({ userId: User, text: "/status" });
    await waitUntil(
      () => fake.callsTo("sendMessage").some((c) => String(c.params.text).includes("Replica ")),
      "the admin's /status",
    );
    const status = String(
      fake.callsTo("sendMessage").find((c) => String(c.params.text).includes("Replica "))?.params
        .text,
    );
    expect(status).toMatch(/^Cluster [0-9a-f]{12}: \d of 2 replica\(s\) alive/m);
    expect(status.match(/^Replica /gm)).toHaveLength(2);

    // `mediagate status` lists both replicas; a is dead once its heartbeat is old enough.
    await waitUntil(
      async () => {
        const listed = await runCli(["status", "-c", b.configFile], { home: b.workDir });
        return / dead\n/.test(listed.stdout) && / alive\n/.test(listed.stdout);
      },
      "a listed dead and b alive",
      TakeoverBoundMs,
    );

    // A graceful stop hands polling over at once: a, started again, follows; b stops.
    const runA2 = await a.start();
    expect(runA2.stderr()).not.toContain(PollingStarted);
    runB.signal("SIGTERM");
    expect((await runB.ended).code).toBe(0);
    await waitUntil(
      () => runA2.stderr().includes(PollingStarted),
      "replica a to poll after b's stop",
      TakeoverBoundMs,
    );
    const listed = await runCli(["status", "-c", a.configFile], { home: a.workDir });
    expect(listed.stdout).toMatch(/ stopped\n/);
    expect(fake.getUpdatesConsumers).toEqual({ conflicts: 0, max: 1 });
  });
});

/**
 * The same for one Discord bot's gateway connection: the Discord fake counts the sessions with
 * a socket open at once, never more than one; after the leader's SIGKILL the other replica
 * connects within the bound and answers.
 */
describe("two replicas of one Discord bot", () => {
  const Member = "320000000000000029";
  const Connected = '"msg":"discord connected"';
  let db: TestDatabase;
  let discord: FakeDiscord;
  const installs: CliInstall[] = [];

  beforeAll(async () => {
    db = await freshPostgresDatabase("cluster_discord");
    discord = await FakeDiscord.start({ token: "MTAxOTk.cluster.discord-leader-secret" });
  });
  afterAll(async () => {
    await Promise.all(installs.map((install) => install.dispose()));
    await discord?.close();
    await db?.drop();
  });

  const replica = async (prefix: string): Promise<CliInstall> => {
    const install = await CliInstall.create(
      prefix,
      {
        discord: { token: discord.token, apiRoot: discord.apiRoot, commands: { register: false } },
        allowedUsers: [`discord:${Member}`],
        progress: { enabled: false },
      },
      { store: { kind: "postgres", url: db.url } },
    );
    installs.push(install);
    return install;
  };

  const answered = (text: string) =>
    discord.messageCreates().some((call) => JSON.stringify(call.payload ?? "").includes(text));

  it("connects on one replica only, and on the other within the bound after the leader's SIGKILL", async () => {
    const a = await replica("cld-a");
    const b = await replica("cld-b");
    const runA = await a.start();
    await waitUntil(() => runA.stderr().includes(Connected), "replica a to connect");
    const runB = await b.start();
    discord.sendDirectMessage({ content: "echo from-leader", authorId: Member });
    await waitUntil(() => answered("from-leader"), "the leader's answer");
    expect(runB.stderr()).not.toContain(Connected);
    expect(discord.gateway.liveSessions).toBe(1);

    await a.kill();
    await waitUntil(
      () => runB.stderr().includes(Connected),
      "replica b to connect after a's SIGKILL",
      TakeoverBoundMs,
    );
    discord.sendDirectMessage({ content: "echo from-follower", authorId: Member });
    await waitUntil(() => answered("from-follower"), "the new leader's answer");
    expect(discord.gateway.maxLiveSessions).toBe(1);
  });
});
