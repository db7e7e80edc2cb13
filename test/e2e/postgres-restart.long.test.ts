import { StoreDownText } from "@mediagate/gateway";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  controlPostgres,
  type PrivatePostgres,
  startPrivatePostgres,
} from "../../test-support/postgres.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { telegramInstalls } from "./harness/telegram-installs.js";

/**
 * A PostgreSQL restart (`pg_ctl restart -m fast`) in the middle of a load, through the real
 * CLI, the real engine and the Telegram fake (docs/store.md): a chaos test of the long suite
 * (test/long/README.md), on a private cluster of its own, never the shared one.
 */

const User = 79;
let fake: FakeTelegram;
const { install, repliesTo, disposeAll } = telegramInstalls(() => fake, User);

afterEach(async () => {
  await disposeAll();
  await fake?.stop();
});

describe("PostgreSQL restarted in the middle of a load", () => {
  let cluster: PrivatePostgres;
  beforeAll(() => {
    cluster = startPrivatePostgres();
  });
  afterAll(() => {
    cluster?.remove();
  });

  const Users = [7101, 7102, 7103, 7104];
  const PerUser = 5;

  it("loses no message and answers none twice across `pg_ctl restart -m fast`", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const cli = await install(
      "pg-restart",
      {},
      { store: { kind: "postgres", url: cluster.url } },
      Users,
    );
    await cli.start();
    /** Every token each user asked for, in the order sent. */
    const expected = new Map<number, string[]>(Users.map((user) => [user, []]));
    const send = (round: number) => {
      for (const user of Users) {
        const token = `ok-u${user}-n${round}`;
        expected.get(user)?.push(token);
        const text = round % 2 === 0 ? `echo ${token}` : `sleep 1; echo ${token}`;
        fake.sendPrivateText({ userId: user, text });
      }
    };
    /** What each chat shows now (edits applied, deleted ones gone). */
    const shown = (user: number) => fake.botMessagesIn(user).map((m) => String(m.text));
    const tokens = (user: number) => shown(user).filter((text) => text.startsWith("ok-u"));
    const answered = () => Users.reduce((sum, user) => sum + tokens(user).length, 0);
    for (let round = 0; round < 2; round++) send(round);
    await waitUntil(() => answered() >= 2, "the load to be answered in part");
    send(2);
    controlPostgres("restart", "fast", cluster);
    for (let round = 3; round < PerUser; round++) send(round);

    /** Chats told their message is kept until the database is back (docs/store.md). */
    const kept = () => Users.filter((user) => shown(user).includes(StoreDownText)).length;
    const settled = () => answered() + kept() >= Users.length * PerUser;
    await waitUntil(settled, "every message to be answered or kept", 60_000).catch(
      (error: unknown) => {
        console.log(Users.map((user) => `${user}: ${JSON.stringify(shown(user))}`).join("\n"));
        throw error;
      },
    );
    await waitUntil(() => fake.pendingUpdates === 0, "every update to be confirmed");
    console.log(`[pg-restart] kept until the database answered: ${kept()} chat(s)`);
    // A turn whose journal write met the restart is kept, and run again by the same process
    // once the database answers: no gateway restart.
    await waitUntil(
      () => answered() >= Users.length * PerUser,
      "every message to be answered",
      60_000,
    ).catch((error: unknown) => {
      console.log(Users.map((user) => `${user}: ${JSON.stringify(shown(user))}`).join("\n"));
      throw error;
    });
    for (const user of Users) {
      expect([...tokens(user)].sort(), `chat ${user}`).toEqual(
        [...(expected.get(user) ?? [])].sort(),
      );
      // No answer sent twice (then deleted or edited), and no turn given up.
      const sent = repliesTo(user).filter((text) => text.startsWith("ok-u"));
      expect(new Set(sent).size, `chat ${user}`).toBe(sent.length);
      expect(shown(user), `chat ${user}`).not.toContain("⚠️ The reply could not be delivered.");
    }
  }, 150_000);
});
