import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import {
  type DispatchedMessage,
  FakeDiscord,
  type RecordedCall,
  type StoredMessage,
} from "../fakes/discord/index.js";
import { FakeTelegram, type RecordedCall as TelegramCall } from "../fakes/telegram/index.js";
import { DockerObserver } from "./harness/docker-observer.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
} from "./harness/gateway-home.js";

const DiscordToken = "discord-gateway-media-token-Jt4w";
const Admin = "300000000000000001";
/** Allowed to talk to the agent, not an admin. */
const Member = "300000000000000002";
const TelegramAdmin = 5550001;
/** Discord `uploadMaxBytes` of the profile: small, so a sandbox file can exceed it cheaply. */
const UploadMaxBytes = 50_000;
const Withheld = /^⚠️ An attachment was withheld/;

/** A `printf` format that writes exactly `bytes` (every byte as an octal escape). */
function printfBytes(bytes: Buffer): string {
  return [...bytes].map((byte) => `\\${byte.toString(8).padStart(3, "0")}`).join("");
}

/** Every byte value once, then random bytes: NUL, newlines, quotes and 0xff included. */
function awkwardBytes(randomLength: number): Buffer {
  return Buffer.concat([
    Buffer.from(Array.from({ length: 256 }, (_, index) => index)),
    randomBytes(randomLength),
  ]);
}

/**
 * The whole gateway built from a config with a `discord:` section (and a `telegram:` one, same
 * profile) against the Discord and Telegram fakes, the real discord.js and grammY, the shell
 * agent in the real Docker engine: what a file made in the sandbox becomes in Discord chats.
 */
describe("gateway over Discord: sandbox files, retries, access and credentials", () => {
  const docker = new DockerObserver();
  const marker = randomBytes(6).toString("hex");
  const profile = uniqueProfileName("t-discord-media");
  let fake: FakeDiscord;
  let telegram: FakeTelegram;
  let gateway: Gateway | undefined;
  let home = "";
  let profileHome = "";
  let guildChannel = "";
  let adminDm = "";

  beforeAll(async () => {
    fake = await FakeDiscord.start({ token: DiscordToken });
    telegram = new FakeTelegram();
    await telegram.start();
    home = await createTempHome("e2e-discord-media");
    profileHome = join(home, "profiles", profile);
    await mkdir(profileHome, { recursive: true });
    await writeFile(join(profileHome, "config.yaml"), `discord-token: CONFIG-SECRET-${marker}\n`);
    await writeFile(join(profileHome, ".env"), `DISCORD_BOT_TOKEN=ENV-SECRET-${marker}\n`);
    const config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            discord: { token: DiscordToken, apiRoot: fake.apiRoot, uploadMaxBytes: UploadMaxBytes },
            telegram: { token: telegram.token, apiRoot: telegram.apiRoot },
            admins: [`discord:${Admin}`, `telegram:${TelegramAdmin}`],
            allowedUsers: [`discord:${Member}`],
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    // Status messages only when a test moves this clock (none does here): a slow turn posts
    // none that a test could take for its reply.
    gateway = await Gateway.create(config, {
      activityIntervalMs: 100,
      progressClock: manualClock(),
    });
    await gateway.start();
    guildChannel = fake.guild.channels[0]!.id;
    adminDm = fake.world.dmChannel(Admin);
  });

  afterAll(async () => {
    await teardownGateway(gateway, home);
    await fake?.close();
    await telegram?.stop();
  });

  /**
   * Dispatches one message and waits until the gateway has fully handled it (first post seen,
   * then idle); returns what the bot posted in `channelId` meanwhile and the REST calls made.
   */
  async function turn(
    channelId: string,
    send: () => DispatchedMessage,
  ): Promise<{ posts: StoredMessage[]; calls: RecordedCall[]; sent: DispatchedMessage }> {
    const postsBefore = fake.messagesIn(channelId).length;
    const callsBefore = fake.calls.length;
    const sent = send();
    await fake.waitForCall(() => fake.messagesIn(channelId).length > postsBefore);
    await gateway!.idle();
    return {
      posts: fake.messagesIn(channelId).slice(postsBefore),
      calls: fake.calls.slice(callsBefore),
      sent,
    };
  }

  const inDm = (content: string, authorId = Admin) =>
    turn(fake.world.dmChannel(authorId), () => fake.sendDirectMessage({ content, authorId }));

  const inGuild = (content: string, authorId = Admin) =>
    turn(guildChannel, () =>
      fake.sendGuildMessage(guildChannel, { content, mentionBot: true, authorId }),
    );

  /** Sends a Telegram DM as the Telegram admin; returns the texts the bot sent back. */
  async function telegramTurn(text: string): Promise<string[]> {
    const seqBefore = telegram.calls.at(-1)?.seq ?? 0;
    const isReply = (call: TelegramCall) => call.method === "sendMessage" && call.seq > seqBefore;
    telegram.sendPrivateText({ userId: TelegramAdmin, text });
    await telegram.waitFor(isReply, 30_000);
    await gateway!.idle();
    return telegram.calls.filter(isReply).map((call) => String(call.params.text));
  }

  const filesOf = (posts: readonly StoredMessage[]) => posts.flatMap((post) => post.files);

  it("delivers a file written in the sandbox byte-for-byte in a guild channel (bot mentioned) and in a DM", async () => {
    const where = { guild: inGuild, dm: (content: string) => inDm(content) };
    for (const [name, send] of Object.entries(where)) {
      const bytes = awkwardBytes(4000);
      const { posts, sent } = await send(
        `mkdir -p /workspace/bytes; printf '${printfBytes(bytes)}' > /workspace/bytes/${name}.bin; echo MEDIA:/workspace/bytes/${name}.bin`,
      );
      expect(posts).toHaveLength(1);
      expect(posts[0]?.files.map((file) => file.filename)).toEqual([`${name}.bin`]);
      expect(posts[0]?.files[0]?.bytes.equals(bytes)).toBe(true);
      expect(posts[0]?.content).toBe("");
      expect(posts[0]?.replyTo).toBe(sent.id);
    }
  });

  it("keeps a file name with spaces and non-ASCII characters on the attachment", async () => {
    const { posts } = await inDm(
      `printf 'named ${marker}' > '/workspace/my résumé №1.txt'; echo 'MEDIA:"/workspace/my résumé №1.txt"'`,
    );
    expect(filesOf(posts).map((file) => [file.filename, file.bytes.toString()])).toEqual([
      ["my résumé №1.txt", `named ${marker}`],
    ]);
  });

  it("sends twelve files produced in the sandbox as two messages of ten and two, in order", async () => {
    const names = Array.from({ length: 12 }, (_, index) => `f${String(index).padStart(2, "0")}`);
    const { posts } = await inGuild(
      `mkdir -p /workspace/twelve; for n in ${names.join(" ")}; do printf "twelve-$n-${marker}" > /workspace/twelve/$n.txt; echo MEDIA:/workspace/twelve/$n.txt; done`,
    );
    expect(posts.map((post) => post.files.length)).toEqual([10, 2]);
    expect(filesOf(posts).map((file) => [file.filename, file.bytes.toString()])).toEqual(
      names.map((name) => [`${name}.txt`, `twelve-${name}-${marker}`]),
    );
  });

  it("refuses a file over the configured uploadMaxBytes with its size and the limit, and sends none of its bytes", async () => {
    const { posts, calls } = await inDm(
      `head -c 120000 /dev/urandom > /workspace/big.bin; printf 'small one' > /workspace/small.txt; echo MEDIA:/workspace/big.bin; echo MEDIA:/workspace/small.txt`,
    );
    expect(filesOf(posts).map((file) => [file.filename, file.bytes.toString()])).toEqual([
      ["small.txt", "small one"],
    ]);
    const notices = posts.filter((post) => post.content.includes("big.bin"));
    expect(notices).toHaveLength(1);
    expect(notices[0]?.content).toMatch(/120 KB/);
    expect(notices[0]?.content).toMatch(/50 KB/);
    const uploaded = calls.flatMap((call) => call.files.map((file) => file.filename));
    expect(uploaded).not.toContain("big.bin");
  });

  it("copies a file outside the mounts (/tmp) out of the container byte-for-byte, and refuses an oversize one there too", async () => {
    const bytes = awkwardBytes(3000);
    const { posts, calls } = await inGuild(
      `printf '${printfBytes(bytes)}' > /tmp/kept.bin; head -c 90000 /dev/urandom > /tmp/huge.bin; echo MEDIA:/tmp/kept.bin; echo MEDIA:/tmp/huge.bin`,
    );
    const files = filesOf(posts);
    expect(files.map((file) => file.filename)).toEqual(["kept.bin"]);
    expect(files[0]?.bytes.equals(bytes)).toBe(true);
    const notices = posts.filter((post) => post.content.includes("huge.bin"));
    expect(notices.map((post) => post.content)).toEqual([expect.stringMatching(/90 KB.*50 KB/)]);
    expect(calls.flatMap((call) => call.files.map((file) => file.filename))).not.toContain(
      "huge.bin",
    );
  });

  it("posts a sandbox file once when Discord answers 5xx after it created the message", async () => {
    const bytes = awkwardBytes(1000);
    const createsBefore = fake.messageCreates(guildChannel).length;
    fake.injectFailure({ kind: "server_error_after_processing", status: 502 });
    const { posts } = await inGuild(
      `printf '${printfBytes(bytes)}' > /workspace/once.bin; echo MEDIA:/workspace/once.bin`,
    );
    const creates = fake.messageCreates(guildChannel).slice(createsBefore);
    expect(creates.map((call) => [call.status, call.deduplicated])).toEqual([
      [502, false],
      [200, true],
    ]);
    expect(creates[1]?.nonce).toBe(creates[0]?.nonce);
    expect(posts).toHaveLength(1);
    expect(posts[0]?.files.map((file) => file.filename)).toEqual(["once.bin"]);
    expect(posts[0]?.files[0]?.bytes.equals(bytes)).toBe(true);
  });

  it("resumes after the websocket drops and the gateway still answers the next message", async () => {
    const identifies = fake.gateway.identifyCount;
    const resumes = fake.gateway.resumeCount;
    const reconnected = Promise.race([
      once(fake.gateway, "resume").then(() => "resumed"),
      once(fake.gateway, "identify").then(() => "identified again"),
    ]);
    fake.dropSocket();
    expect(await reconnected).toBe("resumed");
    const { posts } = await inDm(`echo after-resume-${marker}`);
    expect(posts.map((post) => post.content)).toEqual([`after-resume-${marker}`]);
    expect(fake.gateway.identifyCount).toBe(identifies);
    expect(fake.gateway.resumeCount).toBe(resumes + 1);
  });

  it("refuses /reset from a member who is not an admin and leaves the container as it was", async () => {
    const keep = `/workspace/keep-${marker}`;
    const made = await inDm(`echo kept-${marker} > ${keep}; echo made`, Member);
    expect(made.posts.map((post) => post.content)).toEqual(["made"]);
    const before = await docker.profileContainers(profile);
    expect(before.map((container) => container.state)).toEqual(["running"]);

    for (const command of ["/reset confirm", "/reset"]) {
      const inDmReply = await inDm(command, Member);
      expect(inDmReply.posts.map((post) => post.content)).toEqual([
        expect.stringMatching(/admins only.*nothing was done/),
      ]);
    }
    const inGuildReply = await inGuild("/reset confirm", Member);
    expect(inGuildReply.posts.map((post) => post.content)).toEqual([
      expect.stringMatching(/admins only.*nothing was done/),
    ]);

    const after = await docker.profileContainers(profile);
    expect(after.map((container) => [container.id, container.state])).toEqual([
      [before[0]?.id, "running"],
    ]);
    const still = await inDm(`cat ${keep}`, Member);
    expect(still.posts.map((post) => post.content)).toEqual([`kept-${marker}`]);
  });

  describe("credential files and symlink escapes are withheld as on Telegram", () => {
    const cases: [string, () => string, () => string[]][] = [
      [
        "a workspace symlink to /etc/passwd",
        () => "ln -s /etc/passwd /workspace/p; echo MEDIA:/workspace/p",
        () => ["/workspace/p", "passwd"],
      ],
      [
        "an SSH key made in the container's /root/.ssh",
        () =>
          `mkdir -p /root/.ssh; printf 'KEY-${marker}' > /root/.ssh/id_rsa; echo MEDIA:/root/.ssh/id_rsa`,
        () => ["id_rsa", ".ssh", `KEY-${marker}`],
      ],
      [
        "the profile home's config.yaml named by its host path",
        () => `echo MEDIA:${profileHome}/config.yaml`,
        () => ["config.yaml", profileHome, `CONFIG-SECRET-${marker}`],
      ],
      [
        "the profile home's .env named by its host path",
        () => `echo MEDIA:${profileHome}/.env`,
        () => [".env", profileHome, `ENV-SECRET-${marker}`],
      ],
      [
        "a workspace symlink to the profile home's .env",
        () => `ln -s ${profileHome}/.env /workspace/e; echo MEDIA:/workspace/e`,
        () => ["/workspace/e", ".env", profileHome, `ENV-SECRET-${marker}`],
      ],
      [
        "a workspace symlink to the profile home's config.yaml",
        () => `ln -s ${profileHome}/config.yaml /workspace/c; echo MEDIA:/workspace/c`,
        () => ["/workspace/c", "config.yaml", profileHome, `CONFIG-SECRET-${marker}`],
      ],
      [
        "the profile's state database named by its host path",
        () => `echo MEDIA:${profileHome}/state.db`,
        () => ["state.db", profileHome],
      ],
      [
        "a workspace symlink to a directory (/etc) with a file below it",
        () => "ln -s /etc /workspace/etcdir; echo MEDIA:/workspace/etcdir/passwd",
        () => ["etcdir", "passwd"],
      ],
      [
        "a relative workspace symlink that reaches the slot's home (.ssh) only on the host",
        () =>
          `mkdir -p /root/.ssh; printf 'HOSTKEY-${marker}' > /root/.ssh/id_ed25519; ln -s ../home/.ssh/id_ed25519 /workspace/k; echo MEDIA:/workspace/k`,
        () => ["/workspace/k", "id_ed25519", `HOSTKEY-${marker}`],
      ],
    ];

    it.each(cases)("withholds %s with the notice and sends no bytes", async (_, command, never) => {
      const { posts, calls } = await inDm(command());
      expect(posts.map((post) => post.content)).toEqual([expect.stringMatching(Withheld)]);
      expect(calls.flatMap((call) => call.files)).toEqual([]);
      const said = posts.map((post) => post.content).join("\n");
      for (const text of never()) expect(said).not.toContain(text);
    });
  });

  it("withholds a symlink to a system file that only exists in the container", async () => {
    const { posts, calls } = await inDm("ln -s /etc/passwd /tmp/pw; echo MEDIA:/tmp/pw");
    expect(calls.flatMap((call) => call.files)).toEqual([]);
    const said = posts.map((post) => post.content).join("\n");
    expect(said).not.toContain("root:x:0:0");
    expect(said).not.toContain("/tmp/pw");
    expect(said).toMatch(Withheld);
  });

  it("runs a Telegram turn and a Discord turn of the profile side by side in its container", async () => {
    // Each command waits (bounded) for a file the other one writes: both can only say "met"
    // when the two turns run at the same time, each in its own shell.
    const waitFor = (file: string, label: string) =>
      `i=0; while [ ! -f ${file} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -f ${file} ] && echo ${label}-met-${marker} || echo ${label}-alone`;
    const seqBefore = telegram.calls.at(-1)?.seq ?? 0;
    const telegramReply = telegram.waitFor(
      (call) => call.method === "sendMessage" && call.seq > seqBefore,
      30_000,
    );
    telegram.sendPrivateText({
      userId: TelegramAdmin,
      text: `touch /workspace/tg-started-${marker}; ${waitFor(`/workspace/dc-started-${marker}`, "tg")}`,
    });
    const discord = await inDm(
      `touch /workspace/dc-started-${marker}; ${waitFor(`/workspace/tg-started-${marker}`, "dc")}`,
    );
    expect((await telegramReply).params.text).toBe(`tg-met-${marker}`);
    await gateway!.idle();
    expect(discord.posts.map((post) => post.content)).toEqual([`dc-met-${marker}`]);
  });

  it("keeps a user's Telegram and Discord chats as different sessions on the profile's one container", async () => {
    const fromTelegram = await telegramTurn(
      `cd /tmp; echo cross-${marker} > /workspace/cross.txt; pwd`,
    );
    expect(fromTelegram).toEqual(["/tmp"]);
    const fromDiscord = await inDm("pwd; cat /workspace/cross.txt");
    expect(fromDiscord.posts.map((post) => post.content)).toEqual([`/workspace\ncross-${marker}`]);

    const statusField = (text: string, field: string) =>
      new RegExp(`^${field}: (.*)$`, "m").exec(text)?.[1];
    const [telegramStatus = ""] = await telegramTurn("/status");
    const discordStatus = (await inDm("/status")).posts[0]?.content ?? "";
    expect(statusField(telegramStatus, "Session")).toBe(
      `agent:${profile}:telegram:dm:${TelegramAdmin}`,
    );
    expect(statusField(discordStatus, "Session")).toBe(`agent:${profile}:discord:dm:${adminDm}`);
    expect(statusField(discordStatus, "Session id")).not.toBe(
      statusField(telegramStatus, "Session id"),
    );
    const telegramContainer = statusField(telegramStatus, "Container")?.split(" ")[0];
    const discordContainer = statusField(discordStatus, "Container")?.split(" ")[0];
    expect(telegramContainer).toMatch(/^[0-9a-f]{12}$/);
    expect(discordContainer).toBe(telegramContainer);
    const containers = await docker.profileContainers(profile);
    expect(containers).toHaveLength(1);
    expect(containers[0]?.id.startsWith(telegramContainer ?? "-")).toBe(true);
  });
});
