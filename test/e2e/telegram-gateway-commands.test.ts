import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;
const Stranger = 6666;
const StrangersGroup = -100_500;

/**
 * Access and admin commands, end to end: the real gateway from its config, the real
 * TelegramChannel and grammY against FakeTelegram, the real Docker engine — observed through
 * the engine's own API, not through the gateway.
 */
describe("gateway over Telegram: who may do what", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-cmd", [{ admins: [Admin], allowed: [Member] }]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const slotDir = () => bot.profileSlotDir();
  const sessionKey = (user: number) => `agent:${bot.profile}:telegram:dm:${user}`;
  const ask = (user: number, text: string) =>
    bot.handle((fake) => fake.sendPrivateText({ userId: user, text }));

  it("runs nothing for an unknown user: no container, no output, only a refusal in the DM", async () => {
    expect(await bot.containers()).toEqual([]);
    const since = bot.mark();
    await ask(Stranger, "touch /workspace/stranger-was-here; echo should-not-run");
    await bot.handle((fake) =>
      fake.sendGroupText({
        chatId: StrangersGroup,
        userId: Stranger,
        text: "echo group-should-not-run",
      }),
    );
    expect(await bot.containers()).toEqual([]);
    const texts = bot.texts(Stranger, since);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^⛔ You are not allowed/);
    expect(bot.callsIn(Stranger, since).map((c) => c.method)).toEqual(["sendMessage"]);
    expect(bot.callsIn(StrangersGroup, since)).toEqual([]);
    expect(existsSync(slotDir())).toBe(false);
  });

  it("runs nothing for an unknown user when the profile's container is up: no exec, no file", async () => {
    await ask(Admin, "echo warm");
    const container = await bot.runningContainer();
    const execsBefore = await harness.docker.execIds(container);
    const since = bot.mark();
    await ask(Stranger, "touch /workspace/stranger-was-here; echo should-not-run");
    const newExecs = (await harness.docker.execIds(container)).filter(
      (id) => !execsBefore.includes(id),
    );
    expect(newExecs).toEqual([]);
    expect(bot.texts(Stranger, since).join("\n")).not.toContain("should-not-run");
    await ask(Stranger, "/reset confirm");
    await ask(Stranger, "/stop");
    expect(await bot.runningContainer()).toBe(container);
    expect(bot.texts(Stranger, since).every((t) => t.startsWith("⛔ You are not allowed"))).toBe(
      true,
    );
    const ls = await harness.docker.exec(container, ["ls", "-a", "/workspace"]);
    expect(ls.stdout).not.toContain("stranger-was-here");
    expect(existsSync(join(slotDir(), "workspace", "stranger-was-here"))).toBe(false);
  });

  it("/stop kills a running `sleep 1000` and its background sibling in the container", async () => {
    const container = await bot.runningContainer();
    const sleeping = async () => {
      const ps = await harness.docker.processes(container);
      return ["sleep 1000", "sleep 1001"].filter((p) => ps.includes(p));
    };
    const since = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 1001 & sleep 1000" }),
    );
    await waitUntil(async () => (await sleeping()).length === 2, "both sleeps running");
    // typing is shown, and renewed, while the turn runs
    await waitUntil(
      () => bot.callsIn(Admin, since).filter((c) => c.method === "sendChatAction").length >= 2,
      "typing renewed during the turn",
    );
    expect(
      bot
        .callsIn(Admin, since)
        .every((c) => c.method !== "sendChatAction" || c.params.action === "typing"),
    ).toBe(true);

    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "/stop" }));
    await waitUntil(() => bot.texts(Admin, since).length > 0, "the /stop answer");
    await harness.gateway.idle();
    const texts = bot.texts(Admin, since);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^🛑 Stopped: aborted the running turn/);
    expect(await sleeping()).toEqual([]);
    expect(await bot.runningContainer()).toBe(container);

    const after = bot.mark();
    await ask(Admin, "echo still alive");
    expect(bot.texts(Admin, after)).toEqual(["still alive"]);
  });

  it("/stop kills what the session left running in the background, and only that session's", async () => {
    const container = await bot.runningContainer();
    const running = async () => {
      const ps = await harness.docker.processes(container);
      return ["sleep 1002", "sleep 1003"].filter((p) => ps.includes(p));
    };
    let since = bot.mark();
    await ask(Admin, "sleep 1002 & echo started");
    await ask(Member, "sleep 1003 & echo started too");
    expect(bot.texts(Admin, since)).toEqual(["started"]);
    expect(bot.texts(Member, since)).toEqual(["started too"]);
    expect(await running()).toEqual(["sleep 1002", "sleep 1003"]);

    since = bot.mark();
    await ask(Admin, "/stop");
    const stopped = bot.texts(Admin, since);
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toMatch(/^🛑 Stopped: killed \d+ process\(es\)\.$/);
    expect(await running()).toEqual(["sleep 1003"]);
    await ask(Member, "kill %1 2>/dev/null || pkill -f 'sleep 1003'; echo cleaned");
  });

  it("/stop drops the session's queued messages; they never run", async () => {
    const since = bot.mark();
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "sleep 1000" }));
    const container = await bot.runningContainer();
    await waitUntil(
      async () => (await harness.docker.processes(container)).includes("sleep 1000"),
      "sleep running",
    );
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "echo queued-one" }));
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "echo queued-two" }));
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "/stop" }));
    await waitUntil(
      () => bot.texts(Admin, since).some((text) => text.startsWith("🛑")),
      "the /stop answer",
    );
    await harness.gateway.idle();
    const acknowledged = (text: string) => text.startsWith("⏳ queued");
    // Each queued message was acknowledged (docs/sessions.md, "Busy sessions"), then dropped.
    expect(bot.texts(Admin, since).filter(acknowledged).sort()).toEqual([
      "⏳ queued — 1 ahead; /stop cancels",
      "⏳ queued — 2 ahead; /stop cancels",
    ]);
    const texts = bot.texts(Admin, since).filter((text) => !acknowledged(text));
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(
      /^🛑 Stopped: aborted the running turn, (killed \d+ process\(es\), )?dropped 2 queued message\(s\)\.$/,
    );
    expect(await harness.docker.processes(container)).not.toContain("sleep 1000");
  });

  it("/reset confirm during a running turn aborts it and removes the container; the turn's reply never comes", async () => {
    const container = await bot.runningContainer();
    const since = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 1000; echo too late" }),
    );
    await waitUntil(
      async () => (await harness.docker.processes(container)).includes("sleep 1000"),
      "sleep running",
    );
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "/reset confirm" }));
    await waitUntil(() => bot.texts(Admin, since).length > 0, "the /reset answer");
    await harness.gateway.idle();
    const texts = bot.texts(Admin, since);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(
      /^♻️ Reset: new conversation started, removed the container and its files\. 🛑 Stopped: aborted the running turn/,
    );
    expect(await harness.docker.exists(container)).toBe(false);
    const after = bot.mark();
    await ask(Admin, "echo fresh start");
    expect(bot.texts(Admin, after)).toEqual(["fresh start"]);
    expect(await bot.runningContainer()).not.toBe(container);
  });

  it("refuses /reset and /stop from a non-admin and changes nothing", async () => {
    await ask(Member, "echo kept > /workspace/keep.txt; echo written");
    const container = await bot.runningContainer();
    const memberSession = await bot.runtime.store.currentSessionId(sessionKey(Member));
    const adminSession = await bot.runtime.store.currentSessionId(sessionKey(Admin));
    const since = bot.mark();
    await ask(Member, "/reset confirm");
    await ask(Member, "/reset");
    await ask(Member, "/stop");
    expect(bot.texts(Member, since)).toEqual([
      "⛔ /reset is for admins only; nothing was done.",
      "⛔ /reset is for admins only; nothing was done.",
      "⛔ /stop is for admins only; nothing was done.",
    ]);
    expect(await bot.runningContainer()).toBe(container);
    expect(await harness.docker.exists(container)).toBe(true);
    expect(existsSync(join(slotDir(), "workspace", "keep.txt"))).toBe(true);
    expect(existsSync(join(slotDir(), "home"))).toBe(true);
    expect(await bot.runtime.store.currentSessionId(sessionKey(Member))).toBe(memberSession);
    expect(await bot.runtime.store.currentSessionId(sessionKey(Admin))).toBe(adminSession);
    const after = bot.mark();
    await ask(Member, "cat /workspace/keep.txt");
    expect(bot.texts(Member, after)).toEqual(["kept"]);
  });

  it("/reset from an admin asks to confirm, then removes the container and its dirs; the next message gets a new one", async () => {
    await ask(Admin, "echo mine > /workspace/mine.txt; echo written");
    const before = await bot.runningContainer();
    const session = await bot.runtime.store.currentSessionId(sessionKey(Admin));
    expect(existsSync(join(slotDir(), "workspace", "mine.txt"))).toBe(true);

    let since = bot.mark();
    await ask(Admin, "/reset");
    expect(bot.texts(Admin, since)[0]).toContain("Send /reset confirm");
    expect(bot.texts(Admin, since)[0]).toContain("2 sessions known to this gateway use it");
    // addressed to another bot in a group: not ours, nothing happens
    await bot.handle((fake) =>
      fake.sendGroupText({
        chatId: -100_501,
        userId: Admin,
        text: "/reset@someone_else_bot confirm",
      }),
    );
    expect(bot.callsIn(-100_501, since)).toEqual([]);
    expect(await bot.runningContainer()).toBe(before);
    expect(existsSync(join(slotDir(), "workspace", "mine.txt"))).toBe(true);

    since = bot.mark();
    await ask(Admin, "/reset confirm");
    expect(bot.texts(Admin, since)[0]).toMatch(
      /^♻️ Reset: new conversation started, removed the container/,
    );
    expect(await harness.docker.exists(before)).toBe(false);
    expect(await bot.containers()).toEqual([]);
    expect(existsSync(slotDir())).toBe(false);
    expect(await bot.runtime.store.currentSessionId(sessionKey(Admin))).not.toBe(session);

    since = bot.mark();
    await ask(Admin, "ls -A /workspace; echo fresh");
    expect(bot.texts(Admin, since)).toEqual(["fresh"]);
    const after = await bot.runningContainer();
    expect(after).not.toBe(before);
  });
});
