import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { waitUntil } from "../../test-support/wait.js";
import type { FakeDiscord } from "../fakes/discord/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";

const Token = "discord-gateway-tasks-token-Qe7v";
const Member = "300000000000000077";
const Minute = 60_000;

/**
 * Scheduled tasks over Discord (docs/schedules.md): discord.js against the fake, the shell agent
 * in the real engine. A task made bare in a guild channel answers there when it comes due, by a
 * clock the test moves.
 */
describe("scheduled tasks over Discord", () => {
  const clock = manualClock(Date.now());
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;
  let channel = "";

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dtasks", Token, {
      profile: { allowedUsers: [`discord:${Member}`] },
      discord: (discord) => ({ channels: [discord.guild.channels[1]!.id] }),
      options: {
        taskClock: { wallMs: clock.now, monoMs: clock.now },
        taskSchedule: clock.schedule,
      },
    });
    ({ fake } = harness);
    channel = fake.guild.channels[1]!.id;
  });

  afterAll(async () => {
    await harness?.close();
  });

  const posts = (from: number) => fake.messagesIn(channel).slice(from);

  it("delivers a due task's MEDIA: file to the guild channel it was made in", async () => {
    let from = fake.messagesIn(channel).length;
    fake.sendGuildMessage(channel, {
      content:
        "/every 10m date +%s > /workspace/tick.txt; echo tick; echo MEDIA:/workspace/tick.txt",
      authorId: Member,
    });
    await waitUntil(
      () => posts(from).some((p) => p.content.startsWith("✅ Task")),
      "the task made",
    );
    expect(posts(from)[0]?.content).toMatch(/^✅ Task [A-Za-z0-9_-]+: every 10m, next run /);
    from = fake.messagesIn(channel).length;
    clock.advance(10 * Minute);
    await waitUntil(() => {
      clock.advance(0);
      return posts(from).some((p) => p.files.length > 0);
    }, "the task's file");
    const post = posts(from).find((p) => p.files.length > 0);
    expect(post?.files.map((f) => f.filename)).toEqual(["tick.txt"]);
    expect(post?.files[0]?.bytes.toString()).toMatch(/^\d+\n$/);
    await waitUntil(() => posts(from).some((p) => p.content === "tick"), "the task's text");
    // No message is behind a scheduled run: it replies to none.
    expect(post?.replyTo).toBeUndefined();
  }, 120_000);
});
