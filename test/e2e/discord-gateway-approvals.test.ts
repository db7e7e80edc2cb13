import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Gateway, type GatewayConfig, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import { FakeDiscord, type FakeInteraction, type StoredMessage } from "../fakes/discord/index.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
} from "./harness/gateway-home.js";

const Token = "discord-approvals-e2e-token-Qx7w";
const Admin = "300000000000000001";
const Asker = "300000000000000002";
const Other = "300000000000000003";
const TenMinutesMs = 10 * 60 * 1000;
const Ephemeral = 64;

/**
 * Approvals over Discord, end to end (docs/approvals.md): the real gateway with the shell agent
 * and `agent.approvals: always`, discord.js against the fake (message components, component
 * interactions), the real Docker engine. What ran is read from the sandbox's files.
 */
describe("gateway over Discord: approvals with buttons", () => {
  let fake: FakeDiscord;
  let gateway: Gateway | undefined;
  let config: GatewayConfig;
  let home = "";
  let profile = "";
  const clock = manualClock(Date.now());
  const options = () => ({
    activityIntervalMs: 100,
    progressClock: manualClock(),
    now: clock.now,
    approvalSchedule: clock.schedule,
    drainTimeoutMs: 300,
  });

  beforeAll(async () => {
    fake = await FakeDiscord.start({ token: Token });
    profile = uniqueProfileName("d-appr");
    home = await createTempHome("d-appr");
    config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            discord: { token: Token, apiRoot: fake.apiRoot },
            admins: [`discord:${Admin}`],
            allowedUsers: [`discord:${Asker}`, `discord:${Other}`],
            agent: { kind: "shell", approvals: "always" },
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    gateway = await Gateway.create(config, options());
    await gateway.start();
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
    await fake?.close();
  });

  /** The profile slot's files on the host (docs/sandbox.md), not asked of the gateway. */
  const made = (name: string) => {
    const slot = `profile:${profile}`;
    const hash = createHash("sha256").update(slot).digest("hex").slice(0, 12);
    const dir = join(config.profiles[0]!.home, "sandboxes", "docker", `profile_${profile}-${hash}`);
    return existsSync(join(dir, "workspace", name));
  };
  const dm = (user: string) => fake.world.dmChannel(user);
  const send = (user: string, content: string) =>
    fake.sendDirectMessage({ authorId: user, content });
  const buttonsOf = (message: StoredMessage | undefined) =>
    (
      (message?.json.components ?? []) as { components: { label: string; custom_id: string }[] }[]
    ).flatMap((row) => row.components);

  /** The next message with buttons the bot posts in `user`'s DM after `before` messages. */
  async function question(user: string, before: number): Promise<StoredMessage> {
    return waitFor(() => {
      const found = fake
        .messagesIn(dm(user))
        .slice(before)
        .find((m) => buttonsOf(m).length > 0);
      expect(found).toBeDefined();
      return found as StoredMessage;
    });
  }
  const current = (user: string, id: string) => fake.messagesIn(dm(user)).find((m) => m.id === id);

  async function press(user: string, q: StoredMessage, button: string, by: string) {
    const interaction = fake.pressButton({
      channelId: dm(user),
      messageId: q.id,
      button,
      authorId: by,
    });
    await waitUntil(() => interaction.callback !== undefined, "the press answered");
    return interaction;
  }

  const refusalOf = (interaction: FakeInteraction) => {
    expect(interaction.callback).toEqual({ type: 4, flags: Ephemeral });
    return interaction.original?.content;
  };

  it("runs the command only after Allow once; the message shows who allowed it", async () => {
    const before = fake.messagesIn(dm(Asker)).length;
    send(Asker, "touch /workspace/d-allowed && echo made-it");
    const q = await question(Asker, before);
    expect(q.content).toContain("touch /workspace/d-allowed");
    expect(buttonsOf(q).map((b) => b.label)).toEqual([
      "Allow once",
      "Allow for this session",
      "Deny",
    ]);
    expect(made("d-allowed")).toBe(false);

    const interaction = await press(Asker, q, "Allow once", Asker);
    expect(interaction.callback?.type).toBe(7);
    await gateway!.idle();
    expect(made("d-allowed")).toBe(true);
    expect(current(Asker, q.id)?.content).toMatch(/^✅ Allowed once by/);
    expect(buttonsOf(current(Asker, q.id))).toEqual([]);
    expect(fake.messagesIn(dm(Asker)).some((m) => m.content.includes("made-it"))).toBe(true);
  });

  it("refuses someone else's press privately; Deny runs nothing; a second press is told", async () => {
    const before = fake.messagesIn(dm(Asker)).length;
    send(Asker, "touch /workspace/d-denied");
    const q = await question(Asker, before);
    const stranger = await press(Asker, q, "Allow once", Other);
    expect(refusalOf(stranger)).toMatch(/^Only the person who asked \(or an admin\)/);
    expect(buttonsOf(current(Asker, q.id))).toHaveLength(3);

    await press(Asker, q, "Deny", Asker);
    const again = fake.sendComponentPress({
      channelId: dm(Asker),
      messageId: q.id,
      customId: buttonsOf(q)[0]!.custom_id,
      authorId: Asker,
    });
    await waitUntil(() => again.callback !== undefined, "the second press answered");
    expect(refusalOf(again)).toMatch(/^Already decided: 🚫 Denied by/);
    await gateway!.idle();
    expect(made("d-denied")).toBe(false);
    expect(current(Asker, q.id)?.content).toMatch(/^🚫 Denied by/);
  });

  it("refuses forged data; expires after 10 minutes and the agent is told", async () => {
    const before = fake.messagesIn(dm(Asker)).length;
    send(Asker, "touch /workspace/d-expired");
    const q = await question(Asker, before);
    const forged = fake.sendComponentPress({
      channelId: dm(Asker),
      messageId: q.id,
      customId: "ap:AAAAAAAAAAAAAAAAAAAAAA:once",
      authorId: Asker,
    });
    await waitUntil(() => forged.callback !== undefined, "the forged press answered");
    expect(refusalOf(forged)).toBe("This button does nothing any more.");

    clock.advance(TenMinutesMs);
    await gateway!.idle();
    expect(made("d-expired")).toBe(false);
    expect(current(Asker, q.id)?.content).toMatch(/^⌛ Expired/);
    expect(
      fake.messagesIn(dm(Asker)).some((m) => /nobody approved it within 10 min/.test(m.content)),
    ).toBe(true);
  });

  it("a press after a restart is answered clearly; the message asks anew and runs after Allow", async () => {
    const before = fake.messagesIn(dm(Asker)).length;
    send(Asker, "touch /workspace/d-restart");
    const old = await question(Asker, before);
    await gateway!.stop();
    gateway = await Gateway.create(config, options());
    const restarted = fake.messagesIn(dm(Asker)).length;
    await gateway.start();
    expect(current(Asker, old.id)?.content).toMatch(/^⚠️ Not run: the gateway restarted/);
    const stale = fake.sendComponentPress({
      channelId: dm(Asker),
      messageId: old.id,
      customId: buttonsOf(old)[0]!.custom_id,
      authorId: Asker,
    });
    await waitUntil(() => stale.callback !== undefined, "the stale press answered");
    expect(refusalOf(stale)).toMatch(/^Already decided: ⚠️ Not run: the gateway restarted/);
    expect(made("d-restart")).toBe(false);

    const fresh = await question(Asker, restarted);
    await press(Asker, fresh, "Allow once", Admin);
    await gateway.idle();
    expect(made("d-restart")).toBe(true);
  });

  it("registers /allow and /deny where approvals ask, next to the shell profile's commands", async () => {
    await waitUntil(() => fake.interactions.commands().length > 0, "the commands registered");
    expect(fake.interactions.commands().map((c) => [c.name, c.options.map((o) => o.name)])).toEqual(
      [
        ["help", []],
        ["allow", ["session"]],
        ["deny", []],
        ["every", ["interval", "prompt"]],
        ["at", ["time", "prompt"]],
        ["cron", ["pattern", "prompt"]],
        ["tasks", ["action", "id"]],
        ["tz", ["zone"]],
        ["status", []],
        ["stop", ["all"]],
        ["reset", ["confirm"]],
      ],
    );
  });

  it("a slash /reset asks with Confirm / Cancel in the chat, closed at a restart; Confirm resets", async () => {
    expect(made("d-allowed")).toBe(true);
    const slashAnswer = async (interaction: FakeInteraction) => {
      await waitUntil(() => (interaction.original?.content ?? "") !== "", "the slash answer");
      return interaction.original!.content;
    };
    let before = fake.messagesIn(dm(Admin)).length;
    const first = fake.sendSlashCommand({ name: "reset", authorId: Admin });
    const q = await question(Admin, before);
    expect(q.content).toContain("is shared");
    expect(buttonsOf(q).map((b) => b.label)).toEqual(["Confirm", "Cancel"]);
    expect(await slashAnswer(first)).toBe(
      "The question is in the chat, with buttons to answer it.",
    );

    await gateway!.stop();
    gateway = await Gateway.create(config, options());
    await gateway.start();
    expect(current(Admin, q.id)?.content).toMatch(/^⚠️ Not reset: the gateway restarted/);
    expect(buttonsOf(current(Admin, q.id))).toEqual([]);
    const stale = fake.sendComponentPress({
      channelId: dm(Admin),
      messageId: q.id,
      customId: buttonsOf(q)[0]!.custom_id,
      authorId: Admin,
    });
    await waitUntil(() => stale.callback !== undefined, "the stale press answered");
    expect(refusalOf(stale)).toMatch(/^This \/reset question is no longer open/);
    await gateway.idle();
    expect(made("d-allowed")).toBe(true);

    before = fake.messagesIn(dm(Admin)).length;
    const second = fake.sendSlashCommand({ name: "reset", authorId: Admin });
    const again = await question(Admin, before);
    await slashAnswer(second);
    const member = await press(Admin, again, "Confirm", Asker);
    expect(refusalOf(member)).toBe("⛔ /reset is for admins only; nothing was done.");
    await press(Admin, again, "Confirm", Admin);
    await waitFor(() =>
      expect(
        fake.messagesIn(dm(Admin)).some((m) => m.content.startsWith("♻️ Reset: new conversation")),
      ).toBe(true),
    );
    expect(current(Admin, again.id)?.content).toMatch(/^♻️ Reset confirmed by/);
    expect(made("d-allowed")).toBe(false);
  });
});
