import { describe, expect, it } from "vitest";
import { emptyEnv } from "./env.js";
import { ConfigError } from "./errors.js";
import { resolveConfig } from "./load.js";

const env = emptyEnv("/home/u");

function problems(schedules: unknown): string[] {
  try {
    resolveConfig({ profiles: [{ name: "default", schedules }] }, { env });
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map((i) => `${i.path}: ${i.expected}`);
    throw error;
  }
  return [];
}

const chat = { platform: "telegram", chatId: -100123, threadId: 7 };

describe("schedules in the profile config (docs/schedules.md)", () => {
  it("fills in the defaults and reads the operator's tasks with their chat", () => {
    const [plain] = resolveConfig({}, { env }).profiles;
    expect(plain?.schedules).toEqual({
      timezone: "UTC",
      userTimezones: {},
      maxPerUser: 10,
      maxPerProfile: 100,
      minIntervalSeconds: 300,
      runTimeoutSeconds: 1800,
      catchUp: "once",
      tasks: [],
    });
    const [set] = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            schedules: {
              timezone: "Europe/Berlin",
              catchUp: "skip",
              tasks: [
                { name: "report", cron: "0 9 * * 1-5", text: "make report", chat },
                { name: "tick", every: "2h", text: "tick", chat, catchUp: "once", timezone: "UTC" },
              ],
            },
          },
        ],
      },
      { env },
    ).profiles;
    expect(set?.schedules.tasks).toEqual([
      {
        name: "report",
        timing: { kind: "cron", pattern: "0 9 * * 1-5" },
        text: "make report",
        chat: { platform: "telegram", chatId: "-100123", chatType: "group", threadId: "7" },
        catchUp: "skip",
        timezone: "Europe/Berlin",
      },
      {
        name: "tick",
        timing: { kind: "every", everyMs: 7_200_000 },
        text: "tick",
        chat: { platform: "telegram", chatId: "-100123", chatType: "group", threadId: "7" },
        catchUp: "once",
        timezone: "UTC",
      },
    ]);
  });

  it("holds the operator's tasks to minIntervalSeconds, naming the task and the limit", () => {
    expect(problems({ tasks: [{ name: "tick", every: "1m", text: "t", chat }] })).toEqual([
      "profiles[0].schedules.tasks[0].every: task tick would run every 1 minute, more often than minIntervalSeconds (300 s) allows: give it a longer interval, or lower schedules.minIntervalSeconds",
    ]);
    expect(
      problems({
        minIntervalSeconds: 3600,
        tasks: [
          { name: "ok", cron: "0 9 * * 1-5", text: "t", chat },
          { name: "busy", cron: "*/30 9-17 * * *", text: "t", chat },
        ],
      }),
    ).toEqual([
      "profiles[0].schedules.tasks[1].cron: task busy would run every 30 minutes, more often than minIntervalSeconds (3600 s) allows: give it a longer interval, or lower schedules.minIntervalSeconds",
    ]);
    expect(
      problems({ minIntervalSeconds: 60, tasks: [{ name: "tick", every: "1m", text: "t", chat }] }),
    ).toEqual([]);
    expect(
      problems({ tasks: [{ name: "once", at: "2026-12-24 09:00", text: "t", chat }] }),
    ).toEqual([]);
  });

  it("names each wrong key with what to write", () => {
    expect(problems({ timezone: "Mars/Base" })).toEqual([
      'profiles[0].schedules.timezone: an IANA time zone, e.g. "Europe/Berlin", "America/New_York" or "UTC"',
    ]);
    const [both] = problems({
      tasks: [{ name: "x", every: "1h", cron: "0 9 * * *", text: "t", chat }],
    });
    expect(both).toMatch(/^profiles\[0\]\.schedules\.tasks\[0\]: exactly one of every/);
    const [cron] = problems({ tasks: [{ name: "x", cron: "0 9 * *", text: "t", chat }] });
    expect(cron).toMatch(
      /^profiles\[0\]\.schedules\.tasks\[0\]\.cron: "0 9 \* \*" is not a cron pattern/,
    );
    const [every] = problems({ tasks: [{ name: "x", every: "often", text: "t", chat }] });
    expect(every).toBe(
      'profiles[0].schedules.tasks[0].every: "often" is not an interval: write e.g. 30m, 1h or 1d',
    );
    const [twice] = problems({
      tasks: [
        { name: "x", every: "1h", text: "t", chat },
        { name: "x", every: "2h", text: "t", chat },
      ],
    });
    expect(twice).toBe("profiles[0].schedules.tasks: two tasks are named x");
    const [name] = problems({ tasks: [{ name: "Bad Name", every: "1h", text: "t", chat }] });
    expect(name).toMatch(/^profiles\[0\]\.schedules\.tasks\[0\]\.name: a name of lower-case/);
  });
});
