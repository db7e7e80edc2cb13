import type { ProfileConfig } from "../config/types.js";
import type { TaskStore } from "../state/tasks.js";
import { isTimeZone } from "./timing.js";

/**
 * A user's own time zone (docs/schedules.md, "Time zones"): the one they chose with `/tz`,
 * else the operator's `schedules.userTimezones` entry, else the profile's `schedules.timezone`.
 * `/at` and `/cron` read a new task's times in it; a task keeps the zone it was made in.
 */

/** Where a user's zone came from, for `/tz`'s answer. */
export type ZoneSource = "chosen" | "config" | "profile";

/** The zone `user` makes tasks in, and where it came from. */
export async function userZone(
  profile: ProfileConfig,
  tasks: TaskStore,
  user: string,
): Promise<{ readonly zone: string; readonly source: ZoneSource }> {
  const chosen = await tasks.userTimezone(user);
  if (chosen !== undefined) return { zone: chosen, source: "chosen" };
  const configured = profile.schedules.userTimezones[user];
  if (configured !== undefined) return { zone: configured, source: "config" };
  return { zone: profile.schedules.timezone, source: "profile" };
}

/** IANA names only (`Europe/Berlin`, `UTC`, `Etc/GMT-2`): no offsets, no abbreviations. */
const ZoneName = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/;

/** The canonical spelling of the IANA zone `text` (`europe/berlin` → `Europe/Berlin`), if it is one. */
export function canonicalZone(text: string): string | undefined {
  if (!ZoneName.test(text) || !isTimeZone(text)) return undefined;
  return new Intl.DateTimeFormat("en-US", { timeZone: text }).resolvedOptions().timeZone;
}

const Example = "e.g. /tz Europe/Berlin, /tz America/New_York or /tz UTC";

/** What `/tz` (zone `undefined`), `/tz <zone>` and `/tz reset` answer, having done it. */
export async function answerTimezone(
  profile: ProfileConfig,
  tasks: TaskStore,
  user: string,
  given: string | undefined,
): Promise<string> {
  if (given === undefined) {
    const { zone, source } = await userZone(profile, tasks, user);
    const why =
      source === "chosen"
        ? "you chose it"
        : source === "config"
          ? "set for you by the operator"
          : "the bot's";
    return `🕘 Your time zone: ${zone} (${why}). /at and /cron read times in it. Change it with /tz <zone> (${Example})${source === "chosen" ? ", or /tz reset for the bot's" : ""}.`;
  }
  if (given.toLowerCase() === "reset") {
    await tasks.setUserTimezone(user, undefined);
    const { zone } = await userZone(profile, tasks, user);
    return `🕘 Your own time zone is forgotten: new tasks read times in ${zone}. Tasks you made keep theirs.`;
  }
  const zone = canonicalZone(given);
  if (zone === undefined) {
    return `⛔ "${given.slice(0, 60)}" is not a time zone I know. Write its IANA name, ${Example}; nothing was changed.`;
  }
  await tasks.setUserTimezone(user, zone);
  return `🕘 Your time zone is ${zone} now: /at and /cron read times in it, daylight saving included. Tasks you made before keep theirs.`;
}
