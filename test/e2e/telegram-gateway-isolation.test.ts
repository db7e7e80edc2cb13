import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sanitizeForPath } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

/** The same Telegram user is admin of both profiles: only the profile tells them apart. */
const User = 3001;
const secret = randomBytes(16).toString("hex");

/**
 * Two profiles in one gateway process, each with its own bot token (its own FakeTelegram),
 * on the real Docker engine: neither sees the other's files or container.
 */
describe("gateway over Telegram: two profiles stay apart", () => {
  let harness: TelegramGatewayHarness;
  let a: TelegramBot;
  let b: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-iso", [{ admins: [User] }, { admins: [User] }]);
    a = harness.bot(0);
    b = harness.bot(1);
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = (bot: TelegramBot, text: string) =>
    bot.handle((fake) => fake.sendPrivateText({ userId: User, text }));

  it("runs each profile in its own container", async () => {
    await ask(a, `printf ${secret} > /workspace/a-only.txt; echo MEDIA:/workspace/a-only.txt`);
    expect(a.arrived(User).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["a-only.txt", secret],
    ]);
    await ask(b, "echo b is up");
    const containerA = await a.runningContainer();
    const containerB = await b.runningContainer();
    expect(containerB).not.toBe(containerA);
    const ofA = await a.containers();
    expect(ofA.map((c) => c.labels["mediagate.profile"])).toEqual([a.profile]);
  });

  it("does not let profile B reach a file profile A wrote, by container path, host path or symlink", async () => {
    const hostPathOfA = join(a.profileSlotDir(), "workspace", "a-only.txt");
    expect(existsSync(hostPathOfA)).toBe(true);

    let since = b.mark();
    await ask(b, "cat /workspace/a-only.txt; echo MEDIA:/workspace/a-only.txt");
    expect(b.arrived(User, since)).toEqual([]);
    const texts = b.texts(User, since).join("\n");
    expect(texts).toContain("No such file");
    expect(texts).toContain("Couldn't deliver a-only.txt");

    since = b.mark();
    await ask(b, `echo MEDIA:${hostPathOfA}`);
    expect(b.arrived(User, since)).toEqual([]);
    expect(b.texts(User, since).join("\n")).toContain("Couldn't deliver a-only.txt");

    since = b.mark();
    await ask(b, `ln -sf ${hostPathOfA} /workspace/steal; echo MEDIA:/workspace/steal`);
    expect(b.arrived(User, since)).toEqual([]);
    expect(b.texts(User, since).join("\n")).toContain("An attachment was withheld");

    expect(b.everyUploadedByte().includes(Buffer.from(secret))).toBe(false);
    expect(b.texts(User).join("\n")).not.toContain(secret);
  });

  it("an admin's /reset in profile A leaves profile B's container and files alone", async () => {
    await ask(b, "echo bee > /workspace/b.txt; echo ok");
    const containerA = await a.runningContainer();
    const containerB = await b.runningContainer();
    const since = a.mark();
    await ask(a, "/reset confirm");
    expect(a.texts(User, since)[0]).toMatch(/^♻️ Reset: new conversation started, removed/);
    expect(await harness.docker.exists(containerA)).toBe(false);
    expect(await b.runningContainer()).toBe(containerB);
    expect(existsSync(join(b.profileSlotDir(), "workspace", "b.txt"))).toBe(true);
    const after = b.mark();
    await ask(b, "cat /workspace/b.txt");
    expect(b.texts(User, after)).toEqual(["bee"]);
  });
});

/**
 * Profiles that opt into one shared container (`sandbox.sharedKey`) see each other's files;
 * a profile that did not opt in still sees none of them (docs/sandbox.md, slot rule 3).
 */
describe("gateway over Telegram: a shared sandbox key", () => {
  let harness: TelegramGatewayHarness;
  let a: TelegramBot;
  let b: TelegramBot;
  let c: TelegramBot;
  const key = `team-${randomBytes(4).toString("hex")}`;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-shr", [
      { admins: [User], sandbox: { sharedKey: key } },
      { admins: [User], sandbox: { sharedKey: key } },
      { admins: [User] },
    ]);
    a = harness.bot(0);
    b = harness.bot(1);
    c = harness.bot(2);
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = (bot: TelegramBot, text: string) =>
    bot.handle((fake) => fake.sendPrivateText({ userId: User, text }));

  it("lets profiles with the same key share one container and its files, and no one else", async () => {
    await ask(a, `printf ${secret} > /workspace/team.txt; echo written`);
    const sinceB = b.mark();
    await ask(b, "echo MEDIA:/workspace/team.txt");
    expect(b.arrived(User, sinceB).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["team.txt", secret],
    ]);
    const shared = await harness.docker.containers({ "mediagate.agent": "1" });
    const ids = new Set(
      shared.filter((x) => x.labels["mediagate.slot"] === `shared_${key}`).map((x) => x.id),
    );
    expect(ids.size).toBe(1);

    const sinceC = c.mark();
    await ask(c, "cat /workspace/team.txt; echo MEDIA:/workspace/team.txt");
    expect(c.arrived(User, sinceC)).toEqual([]);
    expect(c.texts(User, sinceC).join("\n")).toContain("Couldn't deliver team.txt");
    expect(ids.has(await c.runningContainer())).toBe(false);
  });

  it("asks before /reset tears down the shared container, naming the sessions that use it", async () => {
    const since = a.mark();
    await ask(a, "/reset");
    expect(a.texts(User, since)[0]).toContain("2 sessions known to this gateway use it");
  });
});

/**
 * Media lookup offers only the directories of the container that ran the turn. A profile with
 * a shared key but `persistent: false` runs each session in its own container, which never
 * binds the shared slot's dirs, so their files are not its to deliver; and a persistent
 * profile's container does not bind the per-session dir an earlier non-persistent setup left.
 */
describe("gateway over Telegram: media lookup follows the turn's container", () => {
  let harness: TelegramGatewayHarness;
  let shared: TelegramBot;
  let ephemeral: TelegramBot;
  let plain: TelegramBot;
  const key = `team-${randomBytes(4).toString("hex")}`;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-lay", [
      { admins: [User], sandbox: { sharedKey: key } },
      { admins: [User], sandbox: { sharedKey: key, persistent: false } },
      { admins: [User] },
    ]);
    shared = harness.bot(0);
    ephemeral = harness.bot(1);
    plain = harness.bot(2);
  });

  afterAll(async () => {
    await harness?.close();
  });

  const ask = (bot: TelegramBot, text: string) =>
    bot.handle((fake) => fake.sendPrivateText({ userId: User, text }));

  it("never delivers a file that exists only in the shared slot's dir to a non-persistent profile", async () => {
    await ask(
      shared,
      `printf ${secret} > /workspace/shared-only.txt; printf ${secret} > /root/shared-home.txt; echo ok`,
    );
    let since = ephemeral.mark();
    await ask(ephemeral, "echo MEDIA:/workspace/shared-only.txt; echo MEDIA:/root/shared-home.txt");
    expect(ephemeral.arrived(User, since)).toEqual([]);
    const texts = ephemeral.texts(User, since).join("\n");
    expect(texts).toContain("Couldn't deliver shared-only.txt");
    expect(texts).toContain("Couldn't deliver shared-home.txt");
    expect(ephemeral.everyUploadedByte().includes(Buffer.from(secret))).toBe(false);

    since = ephemeral.mark();
    await ask(ephemeral, "printf mine > /workspace/mine.txt; echo MEDIA:/workspace/mine.txt");
    expect(ephemeral.arrived(User, since).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["mine.txt", "mine"],
    ]);
  });

  it("does not deliver from a per-session dir the persistent profile's container does not bind", async () => {
    const sessionKey = `agent:${plain.profile}:telegram:dm:${User}`;
    const legacyDir = join(
      plain.runtime.profile.home,
      "sandboxes",
      "docker",
      sanitizeForPath(`session:${sessionKey}`),
      "workspace",
    );
    mkdirSync(legacyDir, { recursive: true });
    writeFileSync(join(legacyDir, "left-behind.txt"), secret);
    const since = plain.mark();
    await ask(plain, "echo MEDIA:/workspace/left-behind.txt");
    expect(plain.arrived(User, since)).toEqual([]);
    expect(plain.texts(User, since).join("\n")).toContain("Couldn't deliver left-behind.txt");
  });
});
