import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeInteraction, SlashCommandOption } from "../fakes/discord/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { DockerObserver } from "./harness/docker-observer.js";
import { waitUntil } from "./harness/gateway-home.js";

const Token = "discord-menus-e2e-token-Qw7z";
const Admin = "300000000000000001";
const Member = "300000000000000002";
const Stranger = "300000000000000666";
const Ephemeral = 64;

/** The text the user sees as the command's answer, once the gateway gave it. */
async function answerOf(interaction: FakeInteraction): Promise<string> {
  await waitUntil(
    () => (interaction.original?.content ?? "") !== "",
    `the answer to /${interaction.commandName}`,
  );
  return interaction.original!.content;
}

/**
 * Discord's slash commands end to end (docs/sessions.md, "Command menus"): the real gateway
 * registers them through discord.js against the fake at start-up, and a slash command goes
 * through the same gating and code as the typed command, answered ephemerally.
 */
describe("gateway over Discord: slash commands", () => {
  let harness: DiscordGatewayHarness;
  const docker = new DockerObserver();

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dmenu", Token, {
      profile: { admins: [`discord:${Admin}`], allowedUsers: [`discord:${Member}`] },
    });
    // Discord offers a command only once it is registered (the fake does the same)
    await waitUntil(
      () => harness.fake.interactions.commands().length > 0,
      "the commands registered",
    );
  });

  afterAll(async () => {
    await harness?.close();
  });

  const containers = async () =>
    (await docker.profileContainers(harness.profile)).filter((c) => c.state === "running");

  it("registers the shell profile's /help, the task commands, /status, /stop and /reset as global commands at start-up", async () => {
    const { fake } = harness;
    await waitUntil(() => fake.interactions.commands().length > 0, "the commands registered");
    expect(
      fake.interactions
        .commands()
        .map((c) => [c.name, c.description, c.options.map((o) => o.name)]),
    ).toEqual([
      ["help", "What this bot is, how to send files, your commands", []],
      ["every", "Make a task that runs every interval (30m, 1h, 1d)", ["interval", "prompt"]],
      [
        "at",
        "Make a task that runs once, at a time (09:00 or 2026-12-24 09:00)",
        ["time", "prompt"],
      ],
      [
        "cron",
        "Make a task by a cron pattern (minute hour day month weekday)",
        ["pattern", "prompt"],
      ],
      [
        "tasks",
        "Your scheduled tasks, with buttons to pause, run now and delete",
        ["action", "id"],
      ],
      ["tz", "Your time zone for /at and /cron: shows it, or sets it (Europe/Berlin)", ["zone"]],
      ["status", "This session, its sandbox container and queue", []],
      ["stop", "Abort the running command, kill what this session started", ["all"]],
      ["reset", "Stop, then a new conversation and a fresh sandbox", ["confirm"]],
    ]);
    const command = (name: string) => fake.interactions.commands().find((c) => c.name === name)!;
    expect(command("stop").options[0]).toMatchObject({ type: 5, required: false });
    // The task commands' timing and prompt are text the user must fill in.
    for (const name of ["every", "at", "cron"]) {
      expect(command(name).options.map((o) => [o.type, o.required])).toEqual([
        [3, true],
        [3, true],
      ]);
    }
    expect(command("tasks").options[0]).toMatchObject({
      type: 3,
      required: false,
      choices: ["pause", "resume", "run", "delete"].map((value) => ({ name: value, value })),
    });
    const puts = fake.calls.filter((call) => call.method === "PUT");
    expect(puts.map((call) => [call.route, call.status])).toEqual([
      ["/applications/:id/commands", 200],
    ]);
    expect(puts[0]!.path).toBe(`/applications/${fake.botUser.id}/commands`);
  });

  it("answers slash /help ephemerally with the member's commands, in the channel's session, posting nothing", async () => {
    const { fake } = harness;
    const channel = fake.guild.channels[0]!.id;
    const help = fake.sendSlashCommand({ name: "help", channelId: channel, authorId: Member });
    const text = await answerOf(help);
    expect(help.callback).toEqual({ type: 5, flags: Ephemeral });
    expect(help.original!.flags).toBe(Ephemeral);
    expect(text).toContain(`profile "${harness.profile}" (shell agent)`);
    expect(text).toContain("/help — this text");
    expect(text).not.toContain("/reset");
    await harness.gateway.idle();
    expect(fake.messagesIn(channel)).toEqual([]);
  });

  it("answers slash /status ephemerally for an admin, with the DM's session", async () => {
    const { fake } = harness;
    const status = fake.sendSlashCommand({ name: "status", authorId: Admin });
    const text = await answerOf(status);
    expect(status.original!.flags).toBe(Ephemeral);
    expect(text).toContain(
      `Session: agent:${harness.profile}:discord:dm:${fake.world.dmChannel(Admin)}`,
    );
    expect(fake.messagesIn(fake.world.dmChannel(Admin))).toEqual([]);
  });

  it("answers a slash command in a thread in the thread's own session", async () => {
    const { fake } = harness;
    const thread = fake.guild.threads[0]!.id;
    const parent = fake.guild.channels[0]!.id;
    const status = fake.sendSlashCommand({ name: "status", channelId: thread, authorId: Admin });
    expect(await answerOf(status)).toContain(
      `Session: agent:${harness.profile}:discord:group:${parent}:thread:${thread}\n`,
    );
    expect(fake.messagesIn(thread)).toEqual([]);
  });

  it("keeps answering in a thread after a slash command answered there privately, as after a typed one", async () => {
    const { fake } = harness;
    const thread = fake.createThread(fake.guild.channels[1]!.id, "slash-started").id;
    const help = fake.sendSlashCommand({ name: "help", channelId: thread, authorId: Member });
    await answerOf(help);
    await harness.gateway.idle();
    fake.sendThreadMessage(thread, { content: "echo thread-$((6 * 7))", authorId: Member });
    await waitUntil(
      () => fake.messagesIn(thread).some((m) => m.content.includes("thread-42")),
      "the unmentioned message's answer",
    );
  });

  it("refuses slash /reset and /status from a member ephemerally and changes nothing", async () => {
    const { fake } = harness;
    const dm = fake.world.dmChannel(Member);
    fake.sendDirectMessage({
      content: "echo kept > /workspace/keep.txt; echo written",
      authorId: Member,
    });
    await waitUntil(() => fake.messagesIn(dm).length > 0, "the member's turn");
    await harness.gateway.idle();
    const [container] = await containers();
    expect(container).toBeDefined();
    const reset = fake.sendSlashCommand({
      name: "reset",
      options: { confirm: true },
      authorId: Member,
    });
    expect(await answerOf(reset)).toBe("⛔ /reset is for admins only; nothing was done.");
    expect(reset.original!.flags).toBe(Ephemeral);
    const status = fake.sendSlashCommand({ name: "status", authorId: Member });
    expect(await answerOf(status)).toBe("⛔ /status is for admins only; nothing was done.");
    await harness.gateway.idle();
    expect(await docker.exists(container!.id)).toBe(true);
    const before = fake.messagesIn(dm).length;
    fake.sendDirectMessage({ content: "cat /workspace/keep.txt", authorId: Member });
    await waitUntil(() => fake.messagesIn(dm).length > before, "the member's second turn");
    expect(fake.messagesIn(dm)[before]!.content).toBe("kept");
  });

  it("refuses every slash command of a user who is not allowed, ephemerally, in a server channel", async () => {
    const { fake } = harness;
    const channel = fake.guild.channels[0]!.id;
    const help = fake.sendSlashCommand({ name: "help", channelId: channel, authorId: Stranger });
    expect(await answerOf(help)).toBe(
      `⛔ You are not allowed to use this bot. Ask its operator to add your user id. (discord:${Stranger})`,
    );
    expect(help.original!.flags).toBe(Ephemeral);
    await harness.gateway.idle();
    expect(fake.messagesIn(channel)).toEqual([]);
  });

  it("slash /reset from an admin asks in the chat with buttons on the shared container, then with confirm removes it", async () => {
    const { fake } = harness;
    const [container] = await containers();
    expect(container).toBeDefined();
    const ask = fake.sendSlashCommand({ name: "reset", authorId: Admin });
    // The question is posted in the chat with Confirm / Cancel, as the typed /reset's is.
    expect(await answerOf(ask)).toBe("The question is in the chat, with buttons to answer it.");
    const question = fake.messagesIn(fake.world.dmChannel(Admin)).at(-1);
    expect(question?.content).toContain("Send /reset confirm to go ahead.");
    expect(JSON.stringify(question?.json.components)).toContain('"label":"Confirm"');
    await harness.gateway.idle();
    expect(await docker.exists(container!.id)).toBe(true);
    const reset = fake.sendSlashCommand({
      name: "reset",
      options: { confirm: true },
      authorId: Admin,
    });
    expect(await answerOf(reset)).toMatch(
      /^♻️ Reset: new conversation started, removed the container and its files\./,
    );
    expect(reset.original!.flags).toBe(Ephemeral);
    await harness.gateway.idle();
    expect(await docker.exists(container!.id)).toBe(false);
  });

  it("slash /stop from an admin kills the running sleep turn", async () => {
    const { fake } = harness;
    const dm = fake.world.dmChannel(Admin);
    const before = fake.messagesIn(dm).length;
    fake.sendDirectMessage({ content: "sleep 1000; echo too late", authorId: Admin });
    let container = "";
    await waitUntil(async () => {
      const [running] = await containers();
      if (running === undefined) return false;
      container = running.id;
      return (await docker.processes(container)).some((p) => p.includes("sleep 1000"));
    }, "sleep running");
    const stop = fake.sendSlashCommand({ name: "stop", authorId: Admin });
    expect(await answerOf(stop)).toMatch(/^🛑 Stopped: aborted the running turn/);
    expect(stop.original!.flags).toBe(Ephemeral);
    await harness.gateway.idle();
    expect((await docker.processes(container)).some((p) => p.includes("sleep 1000"))).toBe(false);
    expect(
      fake
        .messagesIn(dm)
        .slice(before)
        .map((m) => m.content),
    ).not.toContain("too late");
  });

  it("makes tasks with slash /every, /at and /cron (the pattern as its own option), lists and pauses them with /tasks", async () => {
    const { fake } = harness;
    const every = fake.sendSlashCommand({
      name: "every",
      options: { interval: "1h", prompt: "echo hourly" },
      authorId: Member,
    });
    const made = await answerOf(every);
    expect(made).toMatch(/^✅ Task [A-Za-z0-9_-]+: every 1h, next run /);
    expect(every.original!.flags).toBe(Ephemeral);
    const cron = fake.sendSlashCommand({
      name: "cron",
      options: { pattern: "0 9 * * 1-5", prompt: "echo weekdays" },
      authorId: Member,
    });
    expect(await answerOf(cron)).toMatch(/^✅ Task [A-Za-z0-9_-]+: cron "0 9 \* \* 1-5" \(UTC\)/);
    const wrongZone = fake.sendSlashCommand({
      name: "tz",
      options: { zone: "Berlin" },
      authorId: Member,
    });
    expect(await answerOf(wrongZone)).toContain(
      '⛔ "Berlin" is not a time zone I know. Write its IANA name, e.g. /tz Europe/Berlin',
    );
    const tz = fake.sendSlashCommand({
      name: "tz",
      options: { zone: "Europe/Berlin" },
      authorId: Member,
    });
    expect(await answerOf(tz)).toMatch(/^🕘 Your time zone is Europe\/Berlin now/);
    const at = fake.sendSlashCommand({
      name: "at",
      options: { time: "2099-12-24 09:00", prompt: "echo once" },
      authorId: Member,
    });
    expect(await answerOf(at)).toMatch(/once at 2099-12-24 09:00 Europe\/Berlin/);
    const wrong = fake.sendSlashCommand({
      name: "every",
      options: { interval: "soon", prompt: "echo never" },
      authorId: Member,
    });
    expect(await answerOf(wrong)).toContain('"soon" is not an interval');

    const id = /Task ([A-Za-z0-9_-]+):/.exec(made)![1]!;
    const list = fake.sendSlashCommand({ name: "tasks", authorId: Member });
    expect(await answerOf(list)).toBe("The question is in the chat, with buttons to answer it.");
    const posted = fake.messagesIn(fake.world.dmChannel(Member)).at(-1);
    // The list is Markdown: an id's `_` is escaped (`\_`), and Discord shows it plain.
    const shown = posted?.content.replace(/\\([\\_*~`|>])/g, "$1");
    expect(shown).toContain(`• ${id}: every 1h`);
    expect(posted?.content).toContain("“echo weekdays”");
    const pause = fake.sendSlashCommand({
      name: "tasks",
      options: { action: "pause", id },
      authorId: Member,
    });
    expect(await answerOf(pause)).toMatch(new RegExp(`^⏸ Task ${id} paused by `));
    const store = harness.gateway.runtimes.get(harness.profile)!.store.tasks;
    const tasks = await store.listTasks();
    expect(await store.userTimezone(`discord:${Member}`)).toBe("Europe/Berlin");
    expect(tasks.map((task) => [task.text, task.paused]).sort()).toEqual([
      ["echo hourly", true],
      ["echo once", false],
      ["echo weekdays", false],
    ]);
    for (const task of tasks) await store.deleteTask(task.id);
  });
});

describe("gateway over Discord: slash command registration switched off or failing", () => {
  it("registers nothing with commands.register: false, and still answers a slash command", async () => {
    const harness = await DiscordGatewayHarness.start("e2e-dmenu-off", Token, {
      profile: { admins: [`discord:${Admin}`] },
      discord: () => ({ commands: { register: false } }),
    });
    try {
      const { fake } = harness;
      // one whole turn: the start (where registration would go) is long over
      const dm = fake.world.dmChannel(Admin);
      fake.sendDirectMessage({ content: "echo alive", authorId: Admin });
      await waitUntil(() => fake.messagesIn(dm).length > 0, "the turn");
      expect(fake.calls.filter((call) => call.route.startsWith("/applications"))).toEqual([]);
      expect(fake.interactions.commands()).toEqual([]);
      expect(harness.logs.join("\n")).toContain(
        "discord slash commands not registered (commands.register: false)",
      );
      // registered by another program (or an earlier start): still answered
      const help = fake.sendSlashCommand({ name: "help", authorId: Admin, unregistered: true });
      expect(await answerOf(help)).toContain("Commands (you are an admin):");
    } finally {
      await harness.close();
    }
  });

  it("goes on when Discord refuses the registration: a bounded number of tries, one warning, messages answered", async () => {
    const harness = await DiscordGatewayHarness.start("e2e-dmenu-fail", Token, {
      profile: { admins: [`discord:${Admin}`] },
      beforeStart: (fake) =>
        fake.injectFailure({
          kind: "server_error",
          method: "PUT",
          path: /^\/applications\/\d+\/commands$/,
          status: 502,
          times: 100,
        }),
    });
    try {
      const { fake } = harness;
      await waitUntil(
        () => harness.logs.some((line) => line.includes("discord slash commands not registered;")),
        "the warning",
      );
      const warning = JSON.parse(
        harness.logs.find((line) => line.includes("discord slash commands not registered;"))!,
      ) as { level: number; err: { status?: number } };
      expect(warning.level).toBe(40);
      const tries = fake.calls.filter((call) => call.method === "PUT");
      expect(tries.length).toBeGreaterThan(1);
      expect(tries.length).toBeLessThanOrEqual(4);
      expect(fake.interactions.commands()).toEqual([]);
      const dm = fake.world.dmChannel(Admin);
      fake.sendDirectMessage({ content: "echo still here", authorId: Admin });
      await waitUntil(() => fake.messagesIn(dm).length > 0, "the turn");
      expect(fake.messagesIn(dm)[0]!.content).toBe("still here");
      expect((await harness.gateway.health()).channels[0]!.state).toBe("up");
    } finally {
      await harness.close();
    }
  });
});

/**
 * Slash commands registered by another program under the same names (`commands.register:
 * false`, or an older registration): Discord sends their options with the types that
 * registration declares. None may reach the process as an exception (it used to end it:
 * `getBoolean` threw outside any handler); each is answered with what was wrong, and the
 * channel goes on answering.
 */
describe("gateway over Discord: slash commands with options this gateway does not register", () => {
  let harness: DiscordGatewayHarness;

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dmenu-wrong", Token, {
      profile: { admins: [`discord:${Admin}`] },
      discord: () => ({ commands: { register: false } }),
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Every way another registration's options can differ from this gateway's. */
  const wrong: readonly (readonly [string, readonly SlashCommandOption[], string])[] = [
    ["text for a boolean", [{ name: "OPTION", type: 3, value: "yes" }], "Discord sent text"],
    ["a number for a boolean", [{ name: "OPTION", type: 10, value: 1 }], "Discord sent a number"],
    ["a whole number for a boolean", [{ name: "OPTION", type: 4, value: 0 }], "a whole number"],
    ["a boolean without its value", [{ name: "OPTION", type: 5 }], "Discord sent no value"],
    ["an unknown option", [{ name: "verbose", type: 5, value: true }], 'has no option "verbose"'],
    ["a text option", [{ name: "target", type: 3, value: "secret-42" }], 'has no option "target"'],
    [
      "a subcommand",
      [{ name: "everything", type: 1, options: [{ name: "now", type: 5, value: true }] }],
      'has no subcommand "everything"',
    ],
  ];
  // The commands with options first: their wrong types are what used to end the process.
  const commands = [
    ["reset", "confirm"],
    ["stop", "all"],
    ["help", undefined],
    ["status", undefined],
  ] as const;

  it("answers every command with every wrong option clearly, runs none, and keeps answering", async () => {
    const { fake } = harness;
    for (const [command, option] of commands) {
      for (const [what, options, said] of wrong) {
        // A command without options gets the wrong one under a name it does not have.
        const sent = options.map((o) => ({
          ...o,
          name: o.name === "OPTION" ? (option ?? "x") : o.name,
        }));
        const expected =
          option === undefined && options[0]!.name === "OPTION" ? 'has no option "x"' : said;
        const interaction = fake.sendSlashCommand({
          name: command,
          options: sent,
          authorId: Admin,
          unregistered: true,
        });
        const text = await answerOf(interaction);
        expect(text, `/${command} with ${what}`).toMatch(/^⚠️ Not run: /);
        expect(text, `/${command} with ${what}`).toContain(expected);
        expect(text).toContain(`Type the command as a message instead: /${command}`);
        expect(text).not.toContain("secret-42");
        expect(interaction.original!.flags).toBe(Ephemeral);
      }
    }
    await harness.gateway.idle();
    // Nothing ran: no container was made, nothing was posted.
    expect(await new DockerObserver().profileContainers(harness.profile)).toEqual([]);
    expect(fake.messagesIn(fake.world.dmChannel(Admin))).toEqual([]);
    // The channel goes on: a command without options runs as usual.
    const status = fake.sendSlashCommand({ name: "status", authorId: Admin, unregistered: true });
    expect(await answerOf(status)).toContain("Session: ");
    const stop = fake.sendSlashCommand({
      name: "stop",
      options: { all: false },
      authorId: Admin,
      unregistered: true,
    });
    expect(await answerOf(stop)).toBe("Nothing was running for this session.");
    expect(harness.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
    expect(harness.logs.join("\n")).not.toContain("secret-42");
  });
});
