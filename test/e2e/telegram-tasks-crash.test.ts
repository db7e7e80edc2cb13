import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeTelegram, type RecordedCall } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * A scheduled run cut off by a SIGKILL (docs/schedules.md, "Crashes"): the real CLI against
 * FakeTelegram and the real engine. The run went through the journal like a typed message, so
 * the restarted gateway tells its chat once and does not run it again.
 */

const User = 78;
let fake: FakeTelegram;
const disposers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  fake = new FakeTelegram();
  await fake.start();
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await fake.stop();
});

const inChat = (since = 0): RecordedCall[] =>
  fake.calls.slice(since).filter((call) => call.ok && String(call.params.chat_id) === String(User));

const texts = (calls: readonly RecordedCall[]) =>
  calls.filter((call) => call.method === "sendMessage").map((call) => String(call.params.text));

describe("a scheduled run SIGKILLed in the middle", () => {
  it("is told once after the restart, never answered twice, never run again", async () => {
    const gateway = await CliInstall.create("tg-task-kill", {
      telegram: { token: fake.token, apiRoot: fake.apiRoot, pollTimeoutSeconds: 1 },
      allowedUsers: [`telegram:${User}`],
      progress: { enabled: false },
      reactions: { enabled: false },
    });
    disposers.push(() => gateway.dispose());
    await gateway.start();
    fake.sendPrivateText({
      userId: User,
      text: "/every 1h echo run >> /workspace/runs; touch /tmp/began; sleep 120; echo never",
    });
    await waitUntil(() => texts(inChat()).some((t) => t.startsWith("✅ Task")), "the task made");
    const id = /Task ([A-Za-z0-9_-]+):/.exec(
      texts(inChat()).find((t) => t.startsWith("✅")) ?? "",
    )?.[1];
    expect(id).toBeDefined();
    fake.sendPrivateText({ userId: User, text: `/tasks run ${id}` });
    await waitUntil(() => gateway.hasFile("/tmp/began"), "the run's command to start");
    await gateway.kill();

    const restart = fake.calls.length;
    await gateway.start();
    await waitUntil(
      () => texts(inChat(restart)).some((t) => t.includes(`while running task ${id}`)),
      "the notice for the cut-off run",
    );
    // Another message, answered after anything the restart would have sent for the run.
    fake.sendPrivateText({ userId: User, text: "cat /workspace/runs" });
    await waitUntil(() => texts(inChat(restart)).includes("run"), "the runs file read back");
    expect(texts(inChat(restart))).toEqual([
      `⚠️ The gateway restarted while running task ${id}. It did not finish, and commands it started may have run in part; it runs again at its next time (/tasks has "Run now").`,
      "run",
    ]);
    expect(texts(inChat()).some((t) => t.includes("never"))).toBe(false);
    // The task's record of runs says so too.
    fake.sendPrivateText({ userId: User, text: "/tasks" });
    await waitUntil(
      () => texts(inChat(restart)).some((t) => t.includes(`${id}: every 1h`)),
      "the task list",
    );
    expect(texts(inChat(restart)).at(-1)).toMatch(/; last: interrupted \(/);
  }, 180_000);
});
