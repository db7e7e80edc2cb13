import { createLogger, Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { FakeDiscord } from "../fakes/discord/index.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
  waitUntil,
} from "./harness/gateway-home.js";

const Token = "discord-pairing-e2e-token-Qx7c";
const Admin = "300000000000000101";
const Stranger = "300000000000000766";
const Newcomer = "300000000000000767";
const CodePattern = /code(?: waiting for an admin)?: ([A-Z2-9]{4}-[A-Z2-9]{4})/;

/**
 * Pairing on Discord (docs/security.md, "Pairing"): the real gateway and discord.js against
 * the fake. A Discord DM's channel id is not the user's id: the code, and the word that the
 * user was approved, go to the DM channel the user wrote in.
 */
describe("gateway over Discord: access: pairing", () => {
  let fake: FakeDiscord;
  let gateway: Gateway | undefined;
  let home = "";
  let profile = "";
  /** Every line the gateway logs, debug included: no code may be among them. */
  const logs: string[] = [];

  beforeAll(async () => {
    fake = await FakeDiscord.start({ token: Token });
    profile = uniqueProfileName("d-pair");
    home = await createTempHome("d-pair");
    const config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            access: "pairing",
            discord: { token: Token, apiRoot: fake.apiRoot },
            admins: [`discord:${Admin}`],
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    // Status messages never post (their clock stands still): the chat gets only the answers.
    gateway = await Gateway.create(config, {
      logger: createLogger({
        level: "debug",
        secrets: [Token],
        destination: { write: (line: string) => void logs.push(line) },
      }),
      activityIntervalMs: 100,
      progressClock: manualClock(),
    });
    await gateway.start();
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
    await fake.close();
  });

  const texts = (channelId: string, since: number) =>
    fake
      .messagesIn(channelId)
      .slice(since)
      .map((m) => m.content);

  /** Sends a DM as `author`; the test then waits for what it expects in a chat. */
  const dm = (author: string, content: string) =>
    void fake.sendDirectMessage({ content, authorId: author });

  it("an unknown user's DM gets a code in that DM; in a server channel they get nothing", async () => {
    const channel = fake.guild.channels[0]!.id;
    const inChannel = fake.messagesIn(channel).length;
    fake.sendGuildMessage(channel, {
      content: "echo guild-should-not-run",
      mentionBot: true,
      authorId: Stranger,
    });
    const strangerDm = fake.world.dmChannel(Stranger);
    expect(strangerDm).not.toBe(Stranger);
    const since = fake.messagesIn(strangerDm).length;
    dm(Stranger, "echo should-not-run");
    await waitUntil(() => fake.messagesIn(strangerDm).length > since, "the code");
    await gateway!.idle();
    const answer = texts(strangerDm, since);
    expect(answer).toHaveLength(1);
    expect(answer[0]).toContain("Your one-time code:");
    expect(answer[0]).toContain(`(You are discord:${Stranger}.)`);
    expect(texts(channel, inChannel)).toEqual([]);
  });

  it("an unknown user's slash command in a server channel tells them to DM the bot, ephemerally", async () => {
    await waitUntil(() => fake.interactions.commands().length > 0, "the commands registered");
    const channel = fake.guild.channels[0]!.id;
    const inChannel = fake.messagesIn(channel).length;
    const slash = fake.sendSlashCommand({ name: "help", authorId: Stranger, channelId: channel });
    await waitUntil(() => (slash.original?.content ?? "") !== "", "the slash answer");
    expect(slash.original?.content).toBe(
      `⛔ You are not allowed to use this bot yet. Send it a direct message to ask for access: it answers with a one-time code for an admin to approve. (discord:${Stranger})`,
    );
    expect(slash.original?.flags).toBe(64); // ephemeral: only the sender sees it
    expect(texts(channel, inChannel)).toEqual([]); // no code, nothing posted in the channel
  });

  it("/approve by an admin tells the user in their DM, and their next message runs a turn", async () => {
    const strangerDm = fake.world.dmChannel(Stranger);
    const adminDm = fake.world.dmChannel(Admin);
    let since = fake.messagesIn(strangerDm).length;
    dm(Stranger, "hello?");
    await waitUntil(() => fake.messagesIn(strangerDm).length > since, "the pending code");
    const pending = texts(strangerDm, since)[0] ?? "";
    expect(pending).toContain("You already have a code waiting");
    const code = CodePattern.exec(pending)?.[1];
    expect(code).toBeDefined();

    since = fake.messagesIn(strangerDm).length;
    const adminSince = fake.messagesIn(adminDm).length;
    dm(Admin, `/approve ${code}`);
    // The user is told while the command runs, the admin's answer goes out once it ended.
    await waitUntil(
      () =>
        fake.messagesIn(strangerDm).length > since && fake.messagesIn(adminDm).length > adminSince,
      "the approval notice and the admin's answer",
    );
    expect(texts(adminDm, adminSince)).toEqual([
      expect.stringContaining(`✅ Approved discord:${Stranger}`),
    ]);
    expect(texts(strangerDm, since)).toEqual([
      "✅ An admin approved you: you may use this bot now. Send your message again.",
    ]);

    since = fake.messagesIn(strangerDm).length;
    dm(Stranger, "echo dpaired-$((2 + 3))");
    await waitUntil(
      () => texts(strangerDm, since).some((t) => t.includes("dpaired-5")),
      "the turn's reply",
    );
  });

  it("the slash /approve takes the code as its option, answered ephemerally", async () => {
    await waitUntil(() => fake.interactions.commands().length > 0, "the commands registered");
    const approve = fake.interactions.commands().find((c) => c.name === "approve");
    expect(approve?.options).toEqual([
      expect.objectContaining({ name: "code", type: 3, required: true }),
    ]);
    const newcomerDm = fake.world.dmChannel(Newcomer);
    let since = fake.messagesIn(newcomerDm).length;
    dm(Newcomer, "echo hi");
    await waitUntil(() => fake.messagesIn(newcomerDm).length > since, "the code");
    const code = CodePattern.exec(texts(newcomerDm, since)[0] ?? "")?.[1];
    expect(code).toBeDefined();

    since = fake.messagesIn(newcomerDm).length;
    const slash = fake.sendSlashCommand({
      name: "approve",
      options: { code: code! },
      authorId: Admin,
    });
    await waitUntil(() => (slash.original?.content ?? "") !== "", "the slash answer");
    expect(slash.original?.content).toContain(`✅ Approved discord:${Newcomer}`);
    // The command is logged, its code is not, at any level (docs/security.md, "Pairing").
    const logged = logs.join("\n");
    expect(logged).toContain('"command":"approve"');
    expect(logged).not.toContain(code!);
    expect(logged).not.toContain(code!.replace("-", ""));
    await waitUntil(() => fake.messagesIn(newcomerDm).length > since, "the approval notice");
    expect(texts(newcomerDm, since)).toEqual([
      "✅ An admin approved you: you may use this bot now. Send your message again.",
    ]);
  });
});
