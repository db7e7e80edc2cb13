import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;

/**
 * A non-persistent sandbox (`sandbox.persistent: false`): every session has its own
 * container, which /stop removes with its dirs and /reset tears down without asking.
 */
describe.each([
  { pool: "the default warm pool", warmPool: undefined },
  { pool: "no warm pool", warmPool: 0 },
])("gateway over Telegram: per-session containers, $pool", ({ warmPool }) => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-eph", [
      { admins: [Admin], allowed: [Member], sandbox: { persistent: false, warmPool } },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = async (user: number, text: string) => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: user, text }));
    return since;
  };
  // Asked of the gateway's sandbox, not found by slot label: a session that took a container
  // from the warm pool (`sandbox.warmPool`) runs in one labelled with the pool's own slot.
  const containerOf = async (user: number) => {
    const slot = `session:agent:${bot.profile}:telegram:dm:${user}`;
    const status = await bot.runtime.sandbox.status(slot);
    return status === undefined ? [] : [status.containerId];
  };

  it("gives each session its own container", async () => {
    await ask(Admin, "echo up");
    await ask(Member, "echo up");
    const admins = await containerOf(Admin);
    const members = await containerOf(Member);
    expect(admins).toHaveLength(1);
    expect(members).toHaveLength(1);
    expect(admins[0]).not.toBe(members[0]);
  });

  it("delivers a file written in the session's /workspace, and another session cannot reach it", async () => {
    let since = await ask(Admin, "printf own > /workspace/own.txt; echo MEDIA:/workspace/own.txt");
    expect(bot.arrived(Admin, since).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["own.txt", "own"],
    ]);
    since = await ask(Member, "echo MEDIA:/workspace/own.txt");
    expect(bot.arrived(Member, since)).toEqual([]);
    expect(bot.texts(Member, since).join("\n")).toContain("Couldn't deliver own.txt");
  });

  it("/stop removes the session's own container and leaves the other session's", async () => {
    await ask(Admin, "echo up");
    await ask(Member, "echo up");
    const [admins] = await containerOf(Admin);
    const [members] = await containerOf(Member);
    const since = await ask(Admin, "/stop");
    expect(bot.texts(Admin, since)[0]).toContain("removed the session's container");
    expect(await harness.docker.exists(admins!)).toBe(false);
    expect(await harness.docker.exists(members!)).toBe(true);
  });

  it("/reset needs no confirmation for a container only this session uses", async () => {
    const [members] = await containerOf(Member);
    await ask(Admin, "echo back");
    const [admins] = await containerOf(Admin);
    const since = await ask(Admin, "/reset");
    expect(bot.texts(Admin, since)[0]).toMatch(/^♻️ Reset: new conversation started, removed/);
    expect(await harness.docker.exists(admins!)).toBe(false);
    expect(await harness.docker.exists(members!)).toBe(true);
  });
});
