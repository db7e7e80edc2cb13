import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { silentLogger } from "../log.js";
import { SqliteStateStore } from "../state/store.js";
import { parseTaskCommand } from "./parse.js";
import { createTask, describeNextRuns, listTasks, type TaskScope } from "./task-commands.js";
import { nextDueAfter } from "./timing.js";
import { answerTimezone, canonicalZone } from "./user-timezone.js";

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
  it("makes one task of a command run twice (after a crash), two of two commands", async () => {
    const scope = { ...(await scopeFor("telegram:1")), receiptId: "telegram:501" };
    const first = await createTask(scope, command("/every 2h water the plants"));
    const again = await createTask(
      { ...scope, nowMs: Now + 60_000 },
      command("/every 2h water the plants"),
    );
    expect(again).toBe(first);
    expect((await scope.tasks.listTasks("telegram:1")).map((t) => t.text)).toEqual([
      "water the plants",
    ]);
    await createTask(
      { ...scope, receiptId: "telegram:502" },
      command("/every 2h water the plants"),
    );
    expect(await scope.tasks.listTasks("telegram:1")).toHaveLength(2);
  });

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

  it.each(["1000000y", "99999999999999999999999d"])(
    "refuses /every %s with the longest interval, and /tasks and /status still list",
    async (interval) => {
      const scope = await scopeFor("telegram:2");
      await createTask(scope, command("/every 1d water the plants"));
      expect(await createTask(scope, command(`/every ${interval} x`))).toBe(
        `⛔ "${interval}" is longer than an interval may be (366 days): for something that rare, use /at with a date or a yearly /cron. Nothing was made.`,
      );
      expect((await listTasks(scope)).text).toMatch(/^Your tasks:\n• .+: every 1d/);
      expect(await describeNextRuns(scope.tasks)).toHaveLength(2);
    },
  );
});

describe("a user's own time zone: /tz", () => {
  it("shows the zone a user's times are read in, and where it came from", async () => {
    const scope = await scopeFor("telegram:2");
    const tz = (zone?: string) => answerTimezone(scope.profile, scope.tasks, scope.user, zone);
    expect(await tz()).toMatch(/^🕘 Your time zone: Europe\/Berlin \(the bot's\)\./);
    expect(await tz("asia/tokyo")).toMatch(/^🕘 Your time zone is Asia\/Tokyo now/);
    expect(await tz()).toMatch(/^🕘 Your time zone: Asia\/Tokyo \(you chose it\)\..*\/tz reset/);
    expect(await tz("reset")).toContain("new tasks read times in Europe/Berlin");
    expect(await tz()).toContain("Europe/Berlin (the bot's)");
    const configured = await scopeFor("telegram:1");
    expect(
      await answerTimezone(configured.profile, configured.tasks, configured.user, undefined),
    ).toContain("America/New_York (set for you by the operator)");
  });

  it.each(["Berlin", "CEST", "+02:00", "Europe/Nowhere", "../../etc/passwd", "UTC+2"])(
    "refuses %j with an example, changing nothing",
    async (zone) => {
      const scope = await scopeFor("telegram:2");
      expect(await answerTimezone(scope.profile, scope.tasks, scope.user, zone)).toBe(
        `⛔ "${zone}" is not a time zone I know. Write its IANA name, e.g. /tz Europe/Berlin, /tz America/New_York or /tz UTC; nothing was changed.`,
      );
      expect(await scope.tasks.userTimezone(scope.user)).toBeUndefined();
    },
  );

  it("spells a zone as IANA does", () => {
    expect(canonicalZone("europe/berlin")).toBe("Europe/Berlin");
    expect(canonicalZone("UTC")).toBe("UTC");
    expect(canonicalZone("Etc/GMT-2")).toBe("Etc/GMT-2");
  });

  it("reads a new task's /at and /cron in the chosen zone over the operator's, daylight saving included", async () => {
    // 2026-03-07 12:00 UTC: the day before New York moves its clocks forward.
    const scope = { ...(await scopeFor("telegram:1")), nowMs: Date.UTC(2026, 2, 7, 12, 0) };
    await answerTimezone(scope.profile, scope.tasks, scope.user, "Asia/Tokyo");
    await createTask(scope, command("/at 09:00 tokyo morning"));
    await answerTimezone(scope.profile, scope.tasks, scope.user, "America/Chicago");
    await createTask(scope, command('/cron "0 9 * * *" chicago morning'));
    const [at, cron] = await scope.tasks.listTasks(scope.user);
    expect(at?.timezone).toBe("Asia/Tokyo");
    // 09:00 in Tokyo (UTC+9, no daylight saving) on the 8th is 00:00 UTC.
    expect(at?.nextDueMs).toBe(Date.UTC(2026, 2, 8, 0, 0));
    expect(cron?.timezone).toBe("America/Chicago");
    // 09:00 in Chicago: 15:00 UTC on CST (the 7th), 14:00 UTC on CDT (the 8th on).
    expect(cron?.nextDueMs).toBe(Date.UTC(2026, 2, 7, 15, 0));
    const second = nextDueAfter(cron!.timing, cron!.timezone, cron!.createdAtMs, cron!.nextDueMs);
    const third = nextDueAfter(cron!.timing, cron!.timezone, cron!.createdAtMs, second!);
    expect([second, third]).toEqual([Date.UTC(2026, 2, 8, 14, 0), Date.UTC(2026, 2, 9, 14, 0)]);
  });
});

describe("the task commands' grammar", () => {
  it.each([
    ["/every 1h echo hi", { name: "every", interval: "1h", text: "echo hi" }],
    ["/at 2026-12-24 09:00 gifts", { name: "at", time: "2026-12-24 09:00", text: "gifts" }],
    ['/cron "0  9 * * 1-5" report', { name: "cron", pattern: "0 9 * * 1-5", text: "report" }],
    ["/tasks@mybot", { name: "tasks" }],
    ["/tasks RUN abc_-1", { name: "task_action", action: "run", id: "abc_-1" }],
    ["/tz", { name: "tz", zone: undefined }],
    ["/tz@mybot Europe/Berlin", { name: "tz", zone: "Europe/Berlin" }],
  ])("reads %j", (text, expected) => {
    expect(parseTaskCommand(text)).toEqual(expected);
  });

  it.each(["/every", "/every 1h", "/cron 0 9 * * * report", "/tasks kill abc", "/at", "/tz a b"])(
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
