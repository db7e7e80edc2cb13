import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { silentLogger } from "../log.js";
import { SqliteStateStore } from "../state/store.js";
import { parseTaskCommand } from "./parse.js";
import { createTask, type TaskScope } from "./task-commands.js";

const stores: SqliteStateStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

/** 2026-01-05 12:00 UTC: 07:00 in New York (EST), 13:00 in Berlin. */
const Now = Date.UTC(2026, 0, 5, 12, 0);

async function scopeFor(user: string): Promise<TaskScope> {
  const [profile] = resolveConfig(
    {
      profiles: [
        {
          name: "default",
          schedules: {
            timezone: "Europe/Berlin",
            userTimezones: { "telegram:1": "America/New_York" },
          },
        },
      ],
    },
    { env: emptyEnv("/home/u") },
  ).profiles;
  const store = await SqliteStateStore.open(join(await tempDirForTest("mg-tasks-"), "state.db"));
  stores.push(store);
  return {
    profile: profile!,
    tasks: store.tasks,
    scheduler: undefined,
    user,
    admin: false,
    chat: { platform: "telegram", chatId: "1", chatType: "dm" },
    nowMs: Now,
    log: silentLogger(),
  };
}

const command = (text: string) => {
  const parsed = parseTaskCommand(text);
  if (parsed?.name !== "every" && parsed?.name !== "at" && parsed?.name !== "cron")
    throw new Error(`not a making command: ${text}`);
  return parsed;
};

describe("making a task in the chat", () => {
  it("reads /at in the user's own zone, else the profile's", async () => {
    const own = await scopeFor("telegram:1");
    expect(await createTask(own, command("/at 09:00 call mum"))).toMatch(
      /^✅ Task .+: once at 2026-01-05 09:00 America\/New_York, next run 2026-01-05 09:00 America\/New_York\./,
    );
    const [stored] = await own.tasks.listTasks("telegram:1");
    expect(stored?.timing).toEqual({ kind: "at", atMs: Date.UTC(2026, 0, 5, 14, 0) });
    const other = await scopeFor("telegram:2");
    await createTask(other, command("/at 09:00 call mum"));
    const [berlin] = await other.tasks.listTasks("telegram:2");
    // 09:00 in Berlin has passed at 13:00: tomorrow's.
    expect(berlin?.timing).toEqual({ kind: "at", atMs: Date.UTC(2026, 0, 6, 8, 0) });
  });

  it("checks a cron pattern's shortest gap against the minimum interval", async () => {
    const scope = await scopeFor("telegram:2");
    expect(await createTask(scope, command('/cron "*/4 9 * * *" x'))).toMatch(
      /at most every 5 minutes; this one would run every 4 minutes/,
    );
    expect(await createTask(scope, command('/cron "0 9 * * 1-5" x'))).toMatch(
      /^✅ Task .+: cron "0 9 \* \* 1-5" \(Europe\/Berlin\), next run 2026-01-06 09:00 Europe\/Berlin\./,
    );
    expect(await createTask(scope, command("/at 2025-12-24 09:00 x"))).toBe(
      "⛔ 2025-12-24 09:00 (Europe/Berlin) has passed. Nothing was made.",
    );
  });
});

describe("the task commands' grammar", () => {
  it.each([
    ["/every 1h echo hi", { name: "every", interval: "1h", text: "echo hi" }],
    ["/at 2026-12-24 09:00 gifts", { name: "at", time: "2026-12-24 09:00", text: "gifts" }],
    ['/cron "0  9 * * 1-5" report', { name: "cron", pattern: "0 9 * * 1-5", text: "report" }],
    ["/tasks@mybot", { name: "tasks" }],
    ["/tasks RUN abc_-1", { name: "task_action", action: "run", id: "abc_-1" }],
  ])("reads %j", (text, expected) => {
    expect(parseTaskCommand(text)).toEqual(expected);
  });

  it.each(["/every", "/every 1h", "/cron 0 9 * * * report", "/tasks kill abc", "/at"])(
    "answers %j with how to write it",
    (text) => {
      expect(parseTaskCommand(text)?.name).toBe("invalid");
    },
  );

  it("leaves other text alone", () => {
    expect(parseTaskCommand("/everything")).toBeUndefined();
    expect(parseTaskCommand("every 1h")).toBeUndefined();
  });
});
