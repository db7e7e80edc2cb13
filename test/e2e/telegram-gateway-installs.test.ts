import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueProfileName } from "./harness/gateway-home.js";
import { installOf, type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 4001;

/**
 * Two gateways with different root homes (`MEDIAGATE_HOME`) on one Docker engine, each with a
 * profile of the same name, as two installs on one machine would be: the install label keeps
 * their containers, and so their workspaces, apart.
 */
describe("gateway over Telegram: two installs on one engine", () => {
  const name = uniqueProfileName("t-inst");
  let first: TelegramGatewayHarness;
  let second: TelegramGatewayHarness;
  let a: TelegramBot;
  let b: TelegramBot;

  beforeAll(async () => {
    first = await TelegramGatewayHarness.start("t-inst1", [{ name, admins: [Admin] }]);
    second = await TelegramGatewayHarness.start("t-inst2", [{ name, admins: [Admin] }]);
    a = first.bot();
    b = second.bot();
  });

  afterAll(async () => {
    await first?.close();
    await second?.close();
  });

  const ask = async (bot: TelegramBot, text: string) => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text }));
    return bot.texts(Admin, since);
  };

  it("runs each install's profile in its own container, writing only into its own workspace", async () => {
    expect(a.profile).toBe(b.profile);
    expect(await ask(a, "echo first > /workspace/who.txt; echo written")).toEqual(["written"]);
    expect(await ask(b, "echo second > /workspace/who.txt; echo written")).toEqual(["written"]);

    expect(readFileSync(join(a.profileSlotDir(), "workspace", "who.txt"), "utf8")).toBe("first\n");
    expect(readFileSync(join(b.profileSlotDir(), "workspace", "who.txt"), "utf8")).toBe("second\n");
    expect(await ask(a, "cat /workspace/who.txt")).toEqual(["first"]);

    const inA = await a.runningContainer();
    const inB = await b.runningContainer();
    expect(inB).not.toBe(inA);
    const [labelsA] = (await a.containers()).map((c) => c.labels);
    expect(labelsA?.["mediagate.install"]).toBe(installOf(first.home));
    expect(installOf(first.home)).not.toBe(installOf(second.home));
  });

  it("a /reset in one install leaves the other install's container and files alone", async () => {
    const inB = await b.runningContainer();
    expect((await ask(a, "/reset confirm"))[0]).toMatch(/^♻️ Reset/);
    expect(await b.runningContainer()).toBe(inB);
    expect(existsSync(join(b.profileSlotDir(), "workspace", "who.txt"))).toBe(true);
    expect(await ask(b, "cat /workspace/who.txt")).toEqual(["second"]);
  });
});
