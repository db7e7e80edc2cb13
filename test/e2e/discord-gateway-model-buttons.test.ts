import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import type { FakeInteraction, StoredMessage } from "../fakes/discord/index.js";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";

const Token = "discord-model-buttons-e2e-token-Hq2c";
const Admin = "300000000000000301";
const Member = "300000000000000302";
const Stranger = "300000000000000309";
const Ephemeral = 64;
const Gone = "This button does nothing any more; send /model for the current choices.";

/**
 * `/model` buttons on Discord (docs/models-and-usage.md, "Buttons"): discord.js against the
 * fake (message components, component interactions), three models on three fake endpoints,
 * members limited to two. Which model answered is read from which fake endpoint was called.
 */
describe("gateway over Discord: /model buttons", () => {
  let main: FakeOpenAIServer;
  let second: FakeOpenAIServer;
  let big: FakeOpenAIServer;
  let harness: DiscordGatewayHarness;

  beforeAll(async () => {
    main = await FakeOpenAIServer.start();
    second = await FakeOpenAIServer.start();
    big = await FakeOpenAIServer.start();
    harness = await DiscordGatewayHarness.start("d-mbtn", Token, {
      profile: {
        admins: [`discord:${Admin}`],
        allowedUsers: [`discord:${Member}`],
        agent: {
          kind: "openai",
          models: [
            { name: "main", baseUrl: main.baseUrl, model: "main-model" },
            { name: "second", baseUrl: second.baseUrl, model: "second-model" },
            { name: "big", baseUrl: big.baseUrl, model: "big-model" },
          ],
          memberModels: ["main", "second"],
        },
      },
    });
  });

  afterAll(async () => {
    await harness?.close();
    await main?.close();
    await second?.close();
    await big?.close();
  });

  const dm = (user: string) => harness.fake.world.dmChannel(user);
  const buttonsOf = (message: StoredMessage | undefined) =>
    (
      (message?.json.components ?? []) as { components: { label: string; custom_id: string }[] }[]
    ).flatMap((row) => row.components);
  const current = (user: string, id: string) =>
    harness.fake.messagesIn(dm(user)).find((m) => m.id === id);

  /** Sends a DM and answers what the bot said back in it. */
  const say = async (user: string, content: string) => {
    const { fake } = harness;
    const since = fake.messagesIn(dm(user)).length;
    fake.sendDirectMessage({ content, authorId: user });
    await waitUntil(() => fake.messagesIn(dm(user)).length > since, "the answer");
    await harness.gateway.idle();
    return fake
      .messagesIn(dm(user))
      .slice(since)
      .map((message) => message.content);
  };

  async function picker(user: string): Promise<StoredMessage> {
    const since = harness.fake.messagesIn(dm(user)).length;
    harness.fake.sendDirectMessage({ content: "/model", authorId: user });
    return waitFor(() => {
      const found = harness.fake
        .messagesIn(dm(user))
        .slice(since)
        .find((m) => buttonsOf(m).length > 0);
      expect(found).toBeDefined();
      return found as StoredMessage;
    });
  }

  async function answered(interaction: FakeInteraction): Promise<FakeInteraction> {
    await waitUntil(() => interaction.callback !== undefined, "the press answered");
    return interaction;
  }

  const press = (user: string, p: StoredMessage, button: string, by: string) =>
    answered(
      harness.fake.pressButton({ channelId: dm(user), messageId: p.id, button, authorId: by }),
    );
  const forge = (user: string, p: StoredMessage, customId: string, by: string) =>
    answered(
      harness.fake.sendComponentPress({
        channelId: dm(user),
        messageId: p.id,
        customId,
        authorId: by,
      }),
    );

  const refusalOf = (interaction: FakeInteraction) => {
    expect(interaction.callback).toEqual({ type: 4, flags: Ephemeral });
    return interaction.original?.content;
  };

  it("shows a member their choices; a press switches the session and closes the picker", async () => {
    const p = await picker(Member);
    expect(p.content).toContain("Model of this session: main (main-model), the default.");
    expect(buttonsOf(p).map((b) => b.label)).toEqual(["✓ main", "second"]);
    const interaction = await press(Member, p, "second", Member);
    expect(interaction.original?.content).toBeUndefined();
    expect(interaction.callback?.type).toBe(7);
    await waitFor(() =>
      expect(current(Member, p.id)?.content).toMatch(
        /^🔁 .+ switched this session to second \(second-model\)\./,
      ),
    );
    expect(buttonsOf(current(Member, p.id))).toEqual([]);
    second.enqueue(reply.text("second speaking"));
    const before = main.requests.length;
    expect(await say(Member, "who are you?")).toEqual(["second speaking"]);
    expect(main.requests).toHaveLength(before);

    const again = await forge(Member, p, buttonsOf(p)[0]!.custom_id, Member);
    expect(refusalOf(again)).toMatch(/^Already chosen: second by .+\./);
  });

  it("offers a member no admin-only model and refuses a forged press for it", async () => {
    const admin = await picker(Admin);
    expect(buttonsOf(admin).map((b) => b.label)).toEqual(["✓ main", "second", "big"]);
    const member = await picker(Member);
    expect(buttonsOf(member).map((b) => b.label)).toEqual(["main", "✓ second"]);
    const forged = buttonsOf(member)[0]!.custom_id.replace(/:0$/, ":2");
    expect(refusalOf(await forge(Member, member, forged, Member))).toBe(Gone);
    expect(refusalOf(await forge(Member, member, buttonsOf(admin)[2]!.custom_id, Member))).toBe(
      Gone,
    );
    expect(buttonsOf(current(Member, member.id))).toHaveLength(2);
    second.enqueue(reply.text("still second"));
    expect(await say(Member, "which?")).toEqual(["still second"]);
    expect(big.requests).toHaveLength(0);
  });

  it("refuses another user's and a stranger's press; the DM's admin may pick any", async () => {
    const p = await picker(Admin);
    expect(refusalOf(await press(Admin, p, "big", Member))).toBe(
      "These buttons choose the model of someone else's session; send /model for yours.",
    );
    expect(refusalOf(await press(Admin, p, "big", Stranger))).toBe(
      "⛔ You are not allowed to use this bot.",
    );
    expect((await press(Admin, p, "big", Admin)).callback?.type).toBe(7);
    big.enqueue(reply.text("big speaking"));
    expect(await say(Admin, "who?")).toEqual(["big speaking"]);
  });
});
