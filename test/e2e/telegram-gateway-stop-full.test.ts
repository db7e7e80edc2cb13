import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 5001;
const Member = 5002;
/** The member's four chats: four sessions of theirs on the profile's one container. */
const Groups = [-100_701, -100_702, -100_703, -100_704];
/** Small, so the container fills in moments; docs/security.md, "A fork loop stays in its session". */
const PidsLimit = 64;
const SessionProcessLimit = 24;

/**
 * `/stop all` and `/reset` when the container has no process to spare (docs/security.md,
 * "Stopping"): a member's fork loops in four sessions hold the container at its pids limit,
 * and the admin's one command must end them on the first try. Through the real gateway,
 * grammY against FakeTelegram and the real engine, observed from the host (`docker top`,
 * the engine's stats), never by running anything in the full container.
 */
describe("gateway over Telegram: stopping a container at its process limit", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  // A harness per test: each starts with an empty container.
  beforeEach(async () => {
    harness = await TelegramGatewayHarness.start("t-full", [
      {
        admins: [Admin],
        allowed: [Member],
        sandbox: { pidsLimit: PidsLimit, sessionProcessLimit: SessionProcessLimit },
        telegram: { groups: { requireMention: false } },
      },
    ]);
    bot = harness.bot();
  });

  afterEach(async () => {
    await harness?.close();
  });

  /**
   * A fork loop that never gives up: an interactive shell does not exit when a fork fails,
   * it reads the next `sleep … &` from `yes`. It starts once /tmp/go-<tag> exists, so each of the
   * member's chats has one running before the container is full.
   */
  const forkLoop = (tag: number) =>
    `(while [ ! -e /tmp/go-${tag} ]; do sleep 0.1; done; yes 'sleep ${tag} &' | sh -i) >/dev/null 2>&1 & echo started`;

  /** Starts the member's four loops and waits until they hold the container at its limit. */
  async function fill(tag: number): Promise<string> {
    for (const chatId of Groups) {
      const since = bot.mark();
      await bot.handle((fake) =>
        fake.sendGroupText({ chatId, userId: Member, text: forkLoop(tag) }),
      );
      expect(bot.texts(chatId, since)).toEqual(["started"]);
    }
    expect(await bot.ask(Member, `touch /tmp/go-${tag} && echo go`)).toBe("go");
    const container = await bot.runningContainer();
    await waitUntil(
      async () => (await harness.docker.pids(container)).current >= PidsLimit,
      "the container at its pids limit",
    );
    return container;
  }

  /** The loops' processes, as the engine lists them from the host. */
  const flood = async (container: string, tag: number) =>
    (await harness.docker.top(container)).filter(
      (p) => p.includes(`sleep ${tag}`) || p === "sh -i" || p === "yes sleep",
    );

  it("ends every fork loop with one /stop all, keeping the container", async () => {
    expect(await bot.ask(Admin, "echo warm")).toBe("warm");
    const container = await fill(7771);
    expect((await flood(container, 7771)).length).toBeGreaterThan(SessionProcessLimit);

    const stopped = await bot.ask(Admin, "/stop all");
    expect(stopped).toMatch(
      /^🛑 Stopped everything in slot profile:[^:]+: killed \d+ process\(es\)/,
    );
    expect(stopped).not.toContain("⚠️");
    expect(Number(/killed (\d+)/.exec(stopped)?.[1])).toBeGreaterThan(SessionProcessLimit);
    expect(await flood(container, 7771)).toEqual([]);
    expect(harness.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
    expect(await bot.runningContainer()).toBe(container);
    expect(await bot.ask(Admin, "echo back")).toBe("back");
  });

  it("resets the shared container with one /reset confirm: removed, and the next message gets a fresh one", async () => {
    const container = await fill(7772);
    const reset = await bot.ask(Admin, "/reset confirm");
    expect(reset).toBe("♻️ Reset: new conversation started, removed the container and its files.");
    expect(await harness.docker.exists(container)).toBe(false);
    expect(harness.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
    expect(await bot.ask(Member, "echo fresh; ls /tmp")).toBe("fresh");
    expect(await bot.runningContainer()).not.toBe(container);
  });
});
