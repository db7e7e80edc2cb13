import { describe, expect, it } from "vitest";
import type { RecordedCall } from "../fakes/telegram/index.js";
import { CliTelegram } from "./harness/cli-telegram.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * A scheduled run cut off by a SIGKILL (docs/schedules.md, "Crashes"): the real CLI against
 * FakeTelegram and the real engine. The run went through the journal like a typed message, so
 * the restarted gateway runs it again, once, and its answer reaches the chat exactly once; a
 * run cut off again is not run a third time, and the chat is told once.
 */

const User = 78;
const telegram = CliTelegram.perTest();

const inChat = (since = 0): RecordedCall[] =>
  telegram.fake.calls
    .slice(since)
    .filter((call) => call.ok && String(call.params.chat_id) === String(User));

const texts = (calls: readonly RecordedCall[]) =>
  calls.filter((call) => call.method === "sendMessage").map((call) => String(call.params.text));

/** Starts an install whose member made the task `command`; its id. */
async function installWithTask(name: string, command: string) {
  const gateway = await telegram.install(name, {
    allowedUsers: [`telegram:${User}`],
    progress: { enabled: false },
    reactions: { enabled: false },
  });
  await gateway.start();
  telegram.fake.sendPrivateText({ userId: User, text: `/every 1h ${command}` });
  await waitUntil(() => texts(inChat()).some((t) => t.startsWith("✅ Task")), "the task made");
  const id = /Task ([A-Za-z0-9_-]+):/.exec(
    texts(inChat()).find((t) => t.startsWith("✅")) ?? "",
  )?.[1];
  if (id === undefined) throw new Error("no task id");
  return { gateway, id };
}

describe("a scheduled run SIGKILLed in the middle", () => {
  it("runs again once after the restart, and its answer reaches the chat exactly once", async () => {
    // The first run hangs (and is killed); the one after the restart answers.
    const { gateway, id } = await installWithTask(
      "tg-task-kill",
      'n=$(( $(cat /workspace/n 2>/dev/null || echo 0) + 1 )); echo $n > /workspace/n; if [ $n = 1 ]; then touch /workspace/began; sleep 120; fi; echo "answer of run $n"',
    );
    telegram.fake.sendPrivateText({ userId: User, text: `/tasks run ${id}` });
    await waitUntil(() => gateway.hasFile("/workspace/began"), "the run's command to start");
    await gateway.kill();

    const restart = telegram.fake.calls.length;
    const rerun = await gateway.start();
    await waitUntil(
      () => texts(inChat(restart)).includes("answer of run 2"),
      "the answer of the run run again",
    );
    // Its record of runs is written once its turn is over, after the answer went out.
    await waitUntil(
      () => rerun.stderr().includes('"msg":"scheduled run ended"'),
      "the run's outcome recorded",
    );
    // Another restart sends nothing more for it: the answer was delivered once.
    await gateway.kill();
    await gateway.start();
    telegram.fake.sendPrivateText({ userId: User, text: "cat /workspace/n" });
    await waitUntil(() => texts(inChat(restart)).includes("2"), "the run count read back");
    expect(texts(inChat(restart))).toEqual(["answer of run 2", "2"]);
    telegram.fake.sendPrivateText({ userId: User, text: "/tasks" });
    await waitUntil(
      () => texts(inChat(restart)).some((t) => t.includes(`${id}: every 1h`)),
      "the task list",
    );
    expect(texts(inChat(restart)).at(-1)).toMatch(/; last: done \(/);
  }, 240_000);

  it("cut off again while run again: not run a third time, told once; Run now waits for the rerun", async () => {
    const { gateway, id } = await installWithTask(
      "tg-task-kill2",
      "echo run >> /workspace/runs; touch /workspace/began-$(wc -l < /workspace/runs); sleep 120; echo never",
    );
    telegram.fake.sendPrivateText({ userId: User, text: `/tasks run ${id}` });
    await waitUntil(() => gateway.hasFile("/workspace/began-1"), "the run's command to start");
    await gateway.kill();
    let since = telegram.fake.calls.length;
    await gateway.start();
    await waitUntil(() => gateway.hasFile("/workspace/began-2"), "the run run again");
    // The run recovery runs again is the task's run going: no second one beside it.
    const runningAlready = `Task ${id} is running already; wait for its answer.`;
    telegram.fake.sendPrivateText({ userId: User, text: `/tasks run ${id}` });
    await waitUntil(() => texts(inChat(since)).length > 0, "the answer to Run now");
    expect(texts(inChat(since))).toEqual([runningAlready]);
    // Killed as soon as the answer is in the chat: it was recorded with the command's entry's
    // close before it was sent, so the next start neither runs the command again nor sends its
    // answer twice (docs/durability.md, "Command answers").
    await gateway.kill();

    since = telegram.fake.calls.length;
    await gateway.start();
    await waitUntil(
      () => texts(inChat(since)).some((t) => t.includes(`Task ${id} was cut off`)),
      "the notice for the run cut off again",
    );
    // Another message, answered after anything the restart would have sent for the run.
    telegram.fake.sendPrivateText({ userId: User, text: "cat /workspace/runs" });
    await waitUntil(() => texts(inChat(since)).includes("run\nrun"), "the runs file read back");
    expect(texts(inChat()).filter((t) => t === runningAlready)).toHaveLength(1);
    // A kill between the answer's send and its record leaves it `unconfirmed`: the restart
    // says it may not have arrived, and does not send it again.
    const unconfirmed = (t: string) => t.startsWith("⚠️ This reply may not have arrived");
    expect(texts(inChat(since)).filter((t) => !unconfirmed(t))).toEqual([
      `⚠️ Task ${id} was cut off by a restart again, after it had been run again once; it is not run a third time. Commands it started may have run in part; it runs again at its next time (/tasks has "Run now").`,
      "run\nrun",
    ]);
    expect(texts(inChat()).some((t) => t.includes("never"))).toBe(false);
    telegram.fake.sendPrivateText({ userId: User, text: "/tasks" });
    await waitUntil(
      () => texts(inChat(since)).some((t) => t.includes(`${id}: every 1h`)),
      "the task list",
    );
    expect(texts(inChat(since)).at(-1)).toMatch(/; last: interrupted \(/);
  }, 240_000);
});
