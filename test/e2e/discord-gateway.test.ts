import { randomBytes } from "node:crypto";
import { Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { asShown, FakeDiscord, type StoredMessage } from "../fakes/discord/index.js";
import { DockerObserver } from "./harness/docker-observer.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
  waitUntil,
} from "./harness/gateway-home.js";

const Token = "discord-gateway-e2e-token-Pm3v";
const Admin = "300000000000000001";
const Stranger = "300000000000000666";

/**
 * The whole gateway on Discord: config → channel factory → the real DiscordChannel and
 * discord.js against the fake, the shell agent in a real Docker sandbox.
 */
describe("gateway over Discord against the real Docker engine", () => {
  let fake: FakeDiscord;
  let gateway: Gateway | undefined;
  let home = "";
  let profile = "";
  /** The status messages' clock: moved by the live-progress test only. */
  const clock = manualClock();
  const docker = new DockerObserver();

  beforeAll(async () => {
    fake = await FakeDiscord.start({ token: Token });
    profile = uniqueProfileName("e2e-discord");
    home = await createTempHome("e2e-discord");
    const config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            discord: { token: Token, apiRoot: fake.apiRoot },
            admins: [`discord:${Admin}`],
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    gateway = await Gateway.create(config, {
      activityIntervalMs: 100,
      typingAfterMs: 0,
      progressClock: clock,
    });
    await gateway.start();
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
    await fake.close();
  });

  /** The next message the bot posts in `channelId` after the ones already there. */
  async function nextPost(channelId: string, send: () => void): Promise<StoredMessage> {
    const before = fake.messagesIn(channelId).length;
    send();
    await fake.waitForCall(() => fake.messagesIn(channelId).length > before);
    return fake.messagesIn(channelId)[before]!;
  }

  it("answers /status in a DM with the DM's session key", async () => {
    const dm = fake.world.dmChannel(Admin);
    const post = await nextPost(dm, () =>
      fake.sendDirectMessage({ content: "/status", authorId: Admin }),
    );
    expect(post.content).toContain(`Session: agent:${profile}:discord:dm:${dm}`);
  });

  it("keys a guild channel per user and a thread per thread", async () => {
    const channel = fake.guild.channels[0]!.id;
    const thread = fake.guild.threads[0]!.id;
    const inChannel = await nextPost(channel, () =>
      fake.sendGuildMessage(channel, { content: "/status", mentionBot: true, authorId: Admin }),
    );
    expect(inChannel.content).toContain(
      `Session: agent:${profile}:discord:group:${channel}:user:${Admin}`,
    );
    const inThread = await nextPost(thread, () =>
      fake.sendThreadMessage(thread, { content: "/status", mentionBot: true, authorId: Admin }),
    );
    expect(inThread.content).toContain(
      `Session: agent:${profile}:discord:group:${channel}:thread:${thread}\n`,
    );
  });

  it("runs the message in the sandbox and delivers the MEDIA file as an attachment in the thread", async () => {
    const thread = fake.guild.threads[0]!.id;
    const post = await nextPost(thread, () =>
      fake.sendThreadMessage(thread, {
        content: "printf 'made in the sandbox' > /workspace/d.txt; echo MEDIA:/workspace/d.txt",
        mentionBot: true,
        authorId: Admin,
      }),
    );
    await gateway!.idle();
    const files = fake.messagesIn(thread).flatMap((message) => message.files);
    expect(files.map((file) => [file.filename, file.bytes.toString()])).toContainEqual([
      "d.txt",
      "made in the sandbox",
    ]);
    expect(post.content).not.toContain("MEDIA:");
    expect(fake.calls.some((call) => call.path === `/channels/${thread}/typing`)).toBe(true);
  });

  it("/stop from a Discord admin aborts the running turn", async () => {
    const dm = fake.world.dmChannel(Admin);
    const typingBefore = fake.calls.filter((call) => call.path === `/channels/${dm}/typing`).length;
    fake.sendDirectMessage({ content: "sleep 1000", authorId: Admin });
    await fake.waitForCall(
      () =>
        fake.calls.filter((call) => call.path === `/channels/${dm}/typing`).length > typingBefore,
    );
    const stopped = await nextPost(dm, () =>
      fake.sendDirectMessage({ content: "/stop", authorId: Admin }),
    );
    expect(stopped.content).toMatch(/^🛑 Stopped: aborted the running turn/);
    await gateway!.idle();
  });

  it("shows a long turn's status in one message it edits (a failed edit too) and deletes after the one reply", async () => {
    const dm = fake.world.dmChannel(Admin);
    const gate = `/workspace/gate-${randomBytes(4).toString("hex")}`;
    // Earlier tests' sessions have containers of this profile too: run `argv` in every running
    // one (the DM's among them); 0 when it succeeded in any.
    const inContainer = async (argv: readonly string[]) => {
      const running = (await docker.containers({ "mediagate.profile": profile })).filter(
        (c) => c.state === "running",
      );
      const codes = await Promise.all(
        running.map(async (c) => (await docker.exec(c.id, argv)).exitCode),
      );
      return codes.includes(0) ? 0 : 1;
    };
    const since = fake.calls.length;
    const calls = (method: string) =>
      fake.calls
        .slice(since)
        .filter(
          (c) => c.method === method && c.path.includes(dm) && !c.path.includes("/reactions/"),
        );
    const advance = async (ms: number) => {
      await waitUntil(() => clock.pending().length > 0, "a status timer armed");
      clock.advance(ms);
    };
    fake.sendDirectMessage({
      content: `: *slow*; touch ${gate}.started; i=0; while [ ! -f ${gate} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo '*slow*' done`,
      authorId: Admin,
    });
    await waitUntil(
      async () => (await inContainer(["test", "-f", `${gate}.started`])) === 0,
      "the command to run",
    );
    await advance(3000);
    await waitUntil(() => fake.messagesIn(dm).some((m) => m.content.startsWith("⏳")), "status");
    const status = fake.messagesIn(dm).find((m) => m.content.startsWith("⏳"))!;
    // Escaped: the command's `*` shows as typed, not as italics.
    expect(status.content).toMatch(/^⏳ working — 3s\n\$ : \\\*slow\\\*; touch /);
    await advance(1000);
    await waitUntil(() => calls("PATCH").length === 1, "an edit");
    fake.injectFailure({ kind: "server_error", method: "PATCH", path: /\/messages\/\d+$/ });
    await advance(1000);
    await waitUntil(() => calls("PATCH").length === 2, "a failed edit");
    await advance(1000);
    await waitUntil(() => calls("PATCH").length === 3, "an edit after it");
    expect(calls("PATCH").map((c) => c.status)).toEqual([200, 500, 200]);
    expect(fake.messagesIn(dm).find((m) => m.id === status.id)?.content).toMatch(
      /^⏳ working — 6s\n/,
    );

    await inContainer(["touch", gate]);
    await waitUntil(() => calls("DELETE").length === 1, "the status deleted");
    await gateway!.idle();
    const posts = fake.messagesIn(dm).filter((m) => BigInt(m.id) > BigInt(status.id));
    expect(posts.map((m) => asShown(m.content))).toEqual(["*slow* done"]);
    expect(fake.messagesIn(dm).some((m) => m.id === status.id)).toBe(false);
    expect(calls("DELETE")[0]).toMatchObject({ status: 204, messageId: status.id });
    expect(
      calls("POST").filter((c) => c.path.endsWith("/messages") && c.status === 200),
    ).toHaveLength(2);
  });

  it("tells the chat when Discord refuses a reply's text, in the same attempt", async () => {
    const dm = fake.world.dmChannel(Admin);
    const before = fake.messagesIn(dm).length;
    fake.injectFailure({ kind: "client_error" });
    fake.sendDirectMessage({ content: "echo refused-text", authorId: Admin });
    await waitUntil(() => fake.messagesIn(dm).length > before, "the chat to be told");
    await gateway!.idle();
    expect(
      fake
        .messagesIn(dm)
        .slice(before)
        .map((message) => message.content),
    ).toEqual(["⚠️ Couldn't deliver this reply's text: Discord did not take it."]);
    expect(gateway!.outbox.scheduled).toBe(0);
  });

  it("gives a user who is not allowed no agent turn", async () => {
    const dm = fake.world.dmChannel(Stranger);
    fake.sendDirectMessage({ content: "echo should-not-run", authorId: Stranger });
    const admin = fake.world.dmChannel(Admin);
    await nextPost(admin, () =>
      fake.sendDirectMessage({ content: "echo sentinel", authorId: Admin }),
    );
    await gateway!.idle();
    const answers = fake.messagesIn(dm).map((message) => message.content);
    expect(answers.join("\n")).not.toContain("should-not-run");
  });
});
