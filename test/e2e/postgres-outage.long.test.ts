import { interruptedText, NotRecordedUnreachableText, StoreDownText } from "@mediagate/gateway";
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
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * A polling gateway on `store: { kind: postgres }` while its server is stopped (docs/store.md,
 * "While PostgreSQL is down"): every message is recorded before it is confirmed or run, so
 * nothing new runs during the outage; what was recorded before it is kept and run again by the
 * same process once the server answers, what came during it stays with Telegram, and all of it
 * is answered once after. The outage lasts until the
 * gateway has refused and retried, whatever its length in seconds: the poller's retries back
 * off the same way through a 30 s outage (`Defaults.telegram.pollBackoffMaxMs` caps the wait).
 * The server stopped is a private cluster of this file's own, never the shared one.
 */

let cluster: PrivatePostgres;
let fake: FakeTelegram;
/** How long the outage test keeps PostgreSQL stopped (the figure). */
const OutageMs = 30_000;
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const installs: CliInstall[] = [];
const databases: TestDatabase[] = [];

beforeAll(() => {
  cluster = startPrivatePostgres();
});
afterEach(async () => {
  await Promise.all(installs.splice(0).map((install) => install.dispose()));
  await fake?.stop();
});
afterAll(async () => {
  try {
    controlPostgres("start", "fast", cluster); // after a test that failed while it was down
  } catch {
    // Running already.
  }
  await Promise.all(databases.map((db) => db.drop()));
  cluster?.remove();
});

/** The texts the bot posted to `user`, in order. */
const repliesTo = (user: number) =>
  fake
    .callsTo("sendMessage")
    .filter((call) => call.ok && String(call.params.chat_id) === String(user))
    .map((call) => String(call.params.text));

/** The offsets of the gateway's getUpdates calls: the update ids below one were confirmed. */
const offsets = () => fake.callsTo("getUpdates").map((call) => Number(call.params.offset ?? 0));

interface StoreHealthBody {
  status: string;
  store?: { reachable: boolean; downSinceMs?: number };
}

async function health(listen: string): Promise<StoreHealthBody> {
  const response = await fetch(`http://${listen}/health`);
  return (await response.json()) as StoreHealthBody;
}

/** A polling gateway on a database of its own on the private cluster, with a health endpoint. */
async function pollingGateway(prefix: string, users: readonly number[], rerunInterrupted = true) {
  const db = await freshPostgresDatabase(prefix, cluster.url);
  databases.push(db);
  fake = new FakeTelegram();
  await fake.start();
  const listen = `127.0.0.1:${await closedPort()}`;
  const cli = await CliInstall.create(
    prefix,
    {
      telegram: { token: fake.token, apiRoot: fake.apiRoot },
      allowedUsers: users.map((user) => `telegram:${user}`),
      progress: { enabled: false },
    },
    {
      recovery: { rerunInterrupted },
      store: { kind: "postgres", url: db.url, connectTimeoutMs: 1_000 },
      health: { listen },
    },
  );
  installs.push(cli);
  const run = await cli.start();
  return { cli, listen, run };
}

describe("PostgreSQL stopped while several chats write", () => {
  const [Running, Writer, Waiting] = [8101, 8102, 8103] as const;

  it("runs nothing unrecorded, keeps what was running, and loses nothing when it returns", async () => {
    const { cli, listen, run } = await pollingGateway("pg_outage", [Running, Writer, Waiting]);
    fake.sendPrivateText({ userId: Running, text: "echo before" });
    await waitUntil(() => repliesTo(Running).includes("before"), "the first answer");
    fake.sendPrivateText({
      userId: Running,
      text: "touch /workspace/outage-ran; sleep 3; echo running",
    });
    await waitUntil(() => cli.hasFile("/workspace/outage-ran"), "the recorded turn to start");

    controlPostgres("stop", "fast", cluster);
    const stoppedAtMs = Date.now();
    const written = fake.sendPrivateText({ userId: Writer, text: "echo from-writer" });
    fake.sendPrivateText({ userId: Waiting, text: "echo from-waiting" });
    await waitUntil(
      () => repliesTo(Writer).includes(NotRecordedUnreachableText),
      "the writer to be told its message waits",
    );
    // The running turn's end needs the database (its conversation, its reply's record): it is
    // kept in the journal, and its chat is told so.
    await waitUntil(
      () => repliesTo(Running).includes(StoreDownText),
      "the running turn to be kept until the database is back",
    );
    // The health endpoint answers while the store does not, and says so.
    await waitUntil(
      async () => (await health(listen)).store?.reachable === false,
      "the health endpoint to report the store down",
    );
    expect(await health(listen)).toMatchObject({
      status: "degraded",
      store: { reachable: false, downSinceMs: expect.any(Number) },
    });
    // Nothing of the outage was confirmed, run or answered: the waiting chat's update stays
    // with Telegram behind the writer's, which is offered again until it is recorded.
    expect(fake.pendingUpdates).toBe(2);
    expect(Math.max(...offsets())).toBeLessThanOrEqual(written.update_id);
    expect(repliesTo(Writer)).toEqual([NotRecordedUnreachableText]);
    expect(repliesTo(Waiting)).toEqual([]);

    // The outage lasts the 30 s (a real server, real processes: this is why the file
    // is in the long suite), checked every second: still nothing confirmed, run or answered,
    // the writer told once, the health endpoint answering all along.
    const outageEndsMs = stoppedAtMs + OutageMs;
    while (Date.now() < outageEndsMs) {
      await pause(1_000);
      expect(fake.pendingUpdates).toBe(2);
      expect(Math.max(...offsets())).toBeLessThanOrEqual(written.update_id);
      expect(repliesTo(Writer)).toEqual([NotRecordedUnreachableText]);
      expect(repliesTo(Waiting)).toEqual([]);
      expect((await health(listen)).status).toBe("degraded");
    }

    controlPostgres("start", "fast", cluster);
    await waitUntil(
      () =>
        repliesTo(Writer).includes("from-writer") && repliesTo(Waiting).includes("from-waiting"),
      "the outage's messages to be answered",
      60_000,
    );
    await waitUntil(() => fake.pendingUpdates === 0, "the outage's updates to be confirmed");
    await waitUntil(
      async () => (await health(listen)).status === "ok",
      "the health endpoint to report the recovery",
    );

    // The kept turn runs again in the same process once the database answers (with
    // `recovery.rerunInterrupted`, as a start would), and is answered once.
    await waitUntil(
      () => repliesTo(Running).includes("running"),
      "the kept turn to be answered without a restart",
      60_000,
    );
    await waitUntil(
      () => cli.output().includes("the store answers again: running the turns kept"),
      "the kept turn to be resumed by the running gateway",
    );
    await waitUntil(
      () => (cli.output().match(/"msg":"turn finished"/g) ?? []).length >= 4,
      "every turn to finish",
    );

    // Nothing is left for a restart: the kept turn's entry was closed with its answer. A
    // turn the start took over would run before this chat's next message (one session queue).
    run.signal("SIGTERM");
    await run.ended;
    await cli.start().catch((e) => {
      console.log(cli.output().split("\n").slice(-40).join("\n"));
      throw e;
    });
    fake.sendPrivateText({ userId: Running, text: "echo after" });
    await waitUntil(() => repliesTo(Running).includes("after"), "the next message's answer");
    expect(repliesTo(Running)).toEqual(["before", StoreDownText, "running", "after"]);
    expect(repliesTo(Writer)).toEqual([NotRecordedUnreachableText, "from-writer"]);
    expect(repliesTo(Waiting)).toEqual(["from-waiting"]);
    expect(cli.output()).not.toContain(cluster.url);
  }, 240_000);
});

describe("a turn cut off by the outage, without recovery.rerunInterrupted", () => {
  const User = 8301;

  it("is told it was cut off once the database answers, without a restart, and only once", async () => {
    const { cli, run } = await pollingGateway("pg_cutoff", [User], false);
    const text = "touch /workspace/cut-off; sleep 3; echo late";
    fake.sendPrivateText({ userId: User, text: "echo first" });
    await waitUntil(() => repliesTo(User).includes("first"), "the first answer");
    fake.sendPrivateText({ userId: User, text });
    await waitUntil(() => cli.hasFile("/workspace/cut-off"), "the turn's first command");
    controlPostgres("stop", "fast", cluster);
    await waitUntil(() => repliesTo(User).includes(StoreDownText), "the turn to be kept");

    controlPostgres("start", "fast", cluster);
    const notice = interruptedText(
      {
        profile: "",
        platform: "telegram",
        chatId: String(User),
        chatType: "dm",
        userId: String(User),
        messageId: "",
        text,
        receiptId: "",
      },
      "store",
    );
    await waitUntil(() => repliesTo(User).includes(notice), "the cut-off notice", 60_000);
    // Its entry was closed with the notice: a restart neither tells it again nor runs it (a
    // stop, which lets the notice's delivery be recorded; a kill could cut that off).
    run.signal("SIGTERM");
    await run.ended;
    await cli.start();
    fake.sendPrivateText({ userId: User, text: "echo next" });
    await waitUntil(() => repliesTo(User).includes("next"), "the next message's answer");
    expect(repliesTo(User)).toEqual(["first", StoreDownText, notice, "next"]);
  }, 150_000);
});

describe("Telegram polling while PostgreSQL is down", () => {
  const [First, Second] = [8201, 8202] as const;

  it("confirms no update before it is recorded, then answers each once, in order", async () => {
    const { cli } = await pollingGateway("pg_polling", [First, Second]);
    fake.sendPrivateText({ userId: First, text: "echo p0" });
    await waitUntil(() => repliesTo(First).includes("p0"), "the first answer");
    await waitUntil(() => fake.polling, "the next long poll");

    controlPostgres("stop", "fast", cluster);
    const sent = [
      fake.sendPrivateText({ userId: First, text: "echo p1" }),
      fake.sendPrivateText({ userId: Second, text: "echo q1" }),
      fake.sendPrivateText({ userId: First, text: "echo p2" }),
      fake.sendPrivateText({ userId: First, text: "echo p3" }),
    ];
    const firstOfOutage = sent[0]?.update_id ?? Number.NaN;
    await waitUntil(
      () => repliesTo(First).includes(NotRecordedUnreachableText),
      "the chat to be told its message waits",
    );
    // Retried with the server still down: the update is offered again, never confirmed.
    await waitUntil(
      () => cli.output().includes("telegram update could not be recorded"),
      "the failed record to be logged",
    );
    expect(fake.pendingUpdates).toBe(sent.length);
    expect(Math.max(...offsets())).toBeLessThanOrEqual(firstOfOutage);

    controlPostgres("start", "fast", cluster);
    await waitUntil(
      () => repliesTo(First).includes("p3") && repliesTo(Second).includes("q1"),
      "every message of the outage to be answered",
      60_000,
    );
    await waitUntil(() => fake.pendingUpdates === 0, "every update to be confirmed");
    await waitUntil(
      () => (cli.output().match(/"msg":"turn finished"/g) ?? []).length >= 5,
      "every turn to finish",
    );
    // Besides the queue's notices ("⏳ queued — 1 ahead") while p1 runs.
    const answers = (user: number) => repliesTo(user).filter((text) => !text.startsWith("⏳"));
    expect(answers(First)).toEqual(["p0", NotRecordedUnreachableText, "p1", "p2", "p3"]);
    expect(answers(Second)).toEqual(["q1"]);
    // Confirmed past the outage only after the recovery, never backwards, up to just past its
    // last update (a poll is listed once answered: the next message ends the one holding).
    const past = (sent.at(-1)?.update_id ?? Number.NaN) + 1;
    fake.sendPrivateText({ userId: Second, text: "echo q2" });
    await waitUntil(() => repliesTo(Second).includes("q2"), "a message after the outage");
    expect(offsets()).toContain(past);
    expect(offsets()).toEqual([...offsets()].sort((a, b) => a - b));
  }, 150_000);
});
