import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { queuedText, RevokedWhileQueuedText } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliRun, runCli } from "./harness/cli.js";
import { createTempHome, waitUntil } from "./harness/gateway-home.js";
import { TaskCommands } from "./harness/menus.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 3001;
const Stranger = 6601;
const Late = 6602;
const Guesser = 6603;
const GroupStranger = 6604;
const Waiter = 6605;
const Group = -100_660;

const TtlSeconds = 3600;
const LockSeconds = 600;
/** Every earlier test's codes are used up by the last one, which fills the cap. */
const MaxPending = 3;
const CodePattern = /code(?: waiting for an admin)?: ([A-Z2-9]{4}-[A-Z2-9]{4})/;

/**
 * Pairing end to end (docs/security.md, "Pairing"): the real gateway from its config, grammY
 * against FakeTelegram, the real engine, and the built CLI on the same home. The state
 * database's clock is the harness's manual one: codes expire and locks lift when the test
 * moves it, never by waiting.
 */
describe("gateway over Telegram: access: pairing", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let plain: TelegramBot;
  let dir = "";
  let config = "";

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-pair", [
      {
        admins: [Admin],
        settings: {
          access: "pairing",
          pairing: {
            codeTtlSeconds: TtlSeconds,
            maxFailedApprovals: 3,
            lockSeconds: LockSeconds,
            maxPendingCodes: MaxPending,
          },
        },
      },
      { admins: [Admin] },
    ]);
    bot = harness.bot(0);
    plain = harness.bot(1);
    dir = await createTempHome("t-pair-cli");
    config = join(dir, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${harness.home}`,
        "profiles:",
        `  - name: ${bot.profile}`,
        "    access: pairing",
        `    telegram: { token: "${bot.fake.token}" }`,
        `  - name: ${plain.profile}`,
        `    telegram: { token: "${plain.fake.token}" }`,
        "",
      ].join("\n"),
    );
  });

  afterAll(async () => {
    await harness?.close();
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  const dm = (b: TelegramBot, user: number, text: string) =>
    b.handle((fake) => fake.sendPrivateText({ userId: user, text }));
  const pairing = (...args: string[]): Promise<CliRun> =>
    runCli(["pairing", ...args, "--config", config], { home: dir });
  /** The texts `user`'s DM got from the send at `since` on. */
  const told = (user: number, since: number, b = bot) => b.texts(user, since);
  const codeIn = (text: string | undefined): string => {
    const match = CodePattern.exec(text ?? "");
    if (match === null) throw new Error(`no code in ${JSON.stringify(text)}`);
    return match[1]!;
  };

  it("allowlist mode (the default) never offers a code, and /approve there is a message for the agent", async () => {
    const since = plain.mark();
    await dm(plain, Stranger, "hello");
    expect(told(Stranger, since, plain)).toEqual([
      `⛔ You are not allowed to use this bot. Ask its operator to add your user id. (telegram:${Stranger})`,
    ]);
    await dm(plain, Admin, "/approve ABCD-EFGH");
    const answer = told(Admin, since, plain).join("\n");
    expect(answer).not.toMatch(/pending code|Approved/);
    expect(answer).toContain("/approve"); // the shell ran it: "sh: …/approve: not found"
  });

  it("an unknown user's DM gets a one-time code, the same one again on the next message, and runs nothing", async () => {
    const since = bot.mark();
    await dm(bot, Stranger, "echo should-not-run > /workspace/stranger");
    await dm(bot, Stranger, "echo again");
    const texts = told(Stranger, since);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toContain("This bot needs an admin's approval. Your one-time code:");
    expect(texts[0]).toContain("expires in 60 minutes");
    expect(texts[0]).toContain("send it again");
    expect(texts[1]).toContain("You already have a code waiting for an admin");
    expect(codeIn(texts[1])).toBe(codeIn(texts[0]));
    expect(texts.join("\n")).not.toContain("should-not-run");
    expect(await bot.containers()).toEqual([]);
    // No code in the logs: `mediagate pairing list` is where the operator finds it.
    expect(harness.logs.join("\n")).not.toContain(codeIn(texts[0]).replace("-", ""));
  });

  it("an unknown user in a group gets no code and no turn: the group hears nothing", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendGroupText({
        chatId: Group,
        userId: GroupStranger,
        text: `@${bot.fake.bot.username} echo group-should-not-run`,
      }),
    );
    expect(bot.callsIn(Group, since)).toEqual([]);
    expect(bot.callsIn(GroupStranger, since)).toEqual([]);
    const list = await pairing("list");
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(`telegram:${GroupStranger}`);
  });

  it("mediagate pairing list shows the pending code on the same home, while the gateway runs", async () => {
    const since = bot.mark();
    await dm(bot, Stranger, "what now?");
    const code = codeIn(told(Stranger, since)[0]);
    const list = await pairing("list");
    expect(list.code, list.output).toBe(0);
    const lines = list.stdout.trim().split("\n");
    expect(lines[0]).toBe("PROFILE\tSTATE\tUSER\tNAME\tCODE\tBY\tTIME");
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${bot.profile}\\tpending\\ttelegram:${Stranger}\\t[^\\t]+\\t${code}\\t-\\texpires `,
        ),
      ),
    );
    expect(list.stdout).toContain(`profile ${plain.profile}: access is allowlist`);
  });

  it("/approve CODE by an admin lets the user in: told so, and their next message runs a turn in the sandbox", async () => {
    let since = bot.mark();
    await dm(bot, Stranger, "hi");
    const code = codeIn(told(Stranger, since)[0]);
    // Not an admin command for the one asking.
    await dm(bot, Stranger, `/approve ${code}`);
    expect(told(Stranger, since).at(-1)).toContain("You already have a code waiting");

    since = bot.mark();
    const logged = harness.logs.length;
    await dm(bot, Admin, `/approve ${code.toLowerCase()}`);
    expect(told(Admin, since)).toEqual([
      expect.stringContaining(`✅ Approved telegram:${Stranger}`),
    ]);
    // The command is logged, its code is not (docs/security.md: codes are never logged).
    const lines = harness.logs.slice(logged).join("\n").toLowerCase();
    expect(lines).not.toContain(code.toLowerCase());
    expect(lines).not.toContain(code.replace("-", "").toLowerCase());
    expect(lines).toContain('"command":{"name":"approve","codegiven":true}');
    expect(told(Stranger, since)).toEqual([
      "✅ An admin approved you: you may use this bot now. Send your message again.",
    ]);
    // Approved again (a second admin, the same message sent twice): said so, not a wrong code.
    since = bot.mark();
    for (let i = 0; i < 3; i++) await dm(bot, Admin, `/approve ${code}`);
    expect(told(Admin, since)).toEqual(
      Array(3).fill(
        expect.stringMatching(
          new RegExp(
            `^☑️ ${code} was used already: telegram:${Stranger} \\(.+\\) was approved by telegram:${Admin} at .+ UTC, and still is\\. Nothing was done, and it does not count as a wrong code\\.$`,
          ),
        ),
      ),
    );
    expect(told(Stranger, since)).toEqual([]);
    expect((await pairing("list")).stdout).not.toContain("/approve is locked");
    // The admin's first message made their chat known: their menu lists /approve as well (a
    // shell profile: no /new or /compact, which are the openai agent's).
    const adminScope = { type: "chat", chat_id: Admin };
    await waitUntil(() => bot.fake.menus.get(adminScope) !== undefined, "the admin's menu");
    expect(bot.fake.menus.get(adminScope)?.map((entry) => entry.command)).toEqual([
      "help",
      ...TaskCommands,
      "status",
      "stop",
      "reset",
      "approve",
    ]);

    since = bot.mark();
    await dm(bot, Stranger, "echo paired-$((40 + 2)); id -u");
    expect(told(Stranger, since).join("\n")).toContain("paired-42");
    expect((await bot.containers()).some((c) => c.state === "running")).toBe(true);
    // A user, not an admin.
    since = bot.mark();
    await dm(bot, Stranger, "/status");
    expect(told(Stranger, since)).toEqual(["⛔ /status is for admins only; nothing was done."]);
    const list = await pairing("list");
    expect(list.stdout).toMatch(
      new RegExp(
        `${bot.profile}\\tapproved\\ttelegram:${Stranger}\\t[^\\t]+\\t-\\ttelegram:${Admin}\\tapproved `,
      ),
    );
  });

  it("mediagate pairing revoke takes it back (a new code on the next DM), and pairing approve lets them in again", async () => {
    const revoke = await pairing("revoke", `telegram:${Stranger}`);
    expect(revoke.code, revoke.output).toBe(0);
    expect(revoke.stdout).toContain(
      `profile ${bot.profile}: revoked the approval of telegram:${Stranger}`,
    );

    let since = bot.mark();
    await dm(bot, Stranger, "echo after-revoke");
    const texts = told(Stranger, since);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain("Your one-time code:");
    const code = codeIn(texts[0]);

    const approve = await pairing("approve", code.toLowerCase().replace("-", " "));
    expect(approve.code, approve.output).toBe(0);
    expect(approve.stdout).toContain(`approved telegram:${Stranger}`);
    expect(approve.stdout).toContain(`in profile ${bot.profile}`);
    const again = await pairing("approve", code);
    expect(again.code, again.output).toBe(0);
    expect(again.stdout).toContain(`code ${code} was used already: telegram:${Stranger}`);
    expect(again.stdout).toContain(`in profile ${bot.profile} by cli at `);
    const unknown = await pairing("approve", code.startsWith("A") ? "BBBB-BBBB" : "AAAA-AAAA");
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toContain("no pending code");

    since = bot.mark();
    await dm(bot, Stranger, "echo back-$((1 + 1))");
    expect(told(Stranger, since).join("\n")).toContain("back-2");
    const list = await pairing("list", "-p", bot.profile);
    expect(list.stdout).toMatch(new RegExp(`\\ttelegram:${Stranger}\\t[^\\t]+\\t-\\tcli\\t`));
    const bad = await pairing("revoke", "nobody");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('"nobody" is neither a user id');
  });

  it("a message queued before mediagate pairing revoke does not run once its turn comes; the user is told", async () => {
    let since = bot.mark();
    await dm(bot, Waiter, "hello");
    const approve = await pairing("approve", codeIn(told(Waiter, since)[0]));
    expect(approve.code, approve.output).toBe(0);

    // The first turn waits in its container for a gate file, so the second surely queues.
    const gate = `/workspace/gate-${randomBytes(4).toString("hex")}`;
    const inEveryContainer = async (argv: readonly string[]) => {
      const running = (await bot.containers()).filter((c) => c.state === "running");
      const codes = await Promise.all(
        running.map(async (c) => (await harness.docker.exec(c.id, argv)).exitCode),
      );
      return codes.includes(0);
    };
    since = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({
        userId: Waiter,
        text: `touch ${gate}.started; i=0; while [ ! -f ${gate} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo gate-open`,
      }),
    );
    await waitUntil(() => inEveryContainer(["test", "-f", `${gate}.started`]), "the first turn");
    await bot.post((fake) => fake.sendPrivateText({ userId: Waiter, text: "echo ran-$((2 + 3))" }));
    await waitUntil(() => told(Waiter, since).length >= 1, "the queued line");

    const revoke = await pairing("revoke", `telegram:${Waiter}`);
    expect(revoke.code, revoke.output).toBe(0);
    await inEveryContainer(["touch", gate]);
    await waitUntil(() => told(Waiter, since).length >= 3, "both answers");
    await harness.gateway.idle();
    // The turn already running when it was revoked finishes (docs/security.md); the one
    // waiting behind it does not run.
    expect(told(Waiter, since)).toEqual([
      queuedText(1, false),
      "gate-open",
      RevokedWhileQueuedText,
    ]);

    // Closed in the journal: a restart does not run it either.
    await harness.restart();
    await harness.gateway.idle();
    expect(told(Waiter, since).join("\n")).not.toContain("ran-5");
  });

  it("a code is refused once the clock passes its lifetime; the user's next DM gets a new one that works", async () => {
    let since = bot.mark();
    await dm(bot, Late, "hello");
    const old = codeIn(told(Late, since)[0]);
    harness.stateClock.advance(TtlSeconds * 1000);

    since = bot.mark();
    await dm(bot, Admin, `/approve ${old}`);
    expect(told(Admin, since)[0]).toContain(`⛔ No pending code ${old}`);
    expect(told(Late, since)).toEqual([]);
    since = bot.mark();
    await dm(bot, Late, "echo still-not-in");
    const texts = told(Late, since);
    expect(texts[0]).toContain("Your one-time code:"); // a new one, not "already have"
    const fresh = codeIn(texts[0]);
    expect(fresh).not.toBe(old);

    since = bot.mark();
    await dm(bot, Admin, `/approve ${fresh}`);
    expect(told(Admin, since)[0]).toContain(`✅ Approved telegram:${Late}`);
    since = bot.mark();
    await dm(bot, Late, "echo late-ok");
    expect(told(Late, since).join("\n")).toContain("late-ok");
  });

  it("after 3 wrong codes /approve locks, even for the right code, until the lock has passed", async () => {
    let since = bot.mark();
    await dm(bot, Guesser, "let me in");
    const code = codeIn(told(Guesser, since)[0]);
    const wrong = code.startsWith("A") ? "BBBB-BBBB" : "AAAA-AAAA";

    since = bot.mark();
    await dm(bot, Admin, `/approve ${wrong}`);
    await dm(bot, Admin, `/approve ${wrong}`);
    await dm(bot, Admin, `/approve ${wrong}`);
    await dm(bot, Admin, `/approve ${code}`);
    await dm(bot, Admin, "/approve not-a-code");
    const answers = told(Admin, since);
    expect(answers).toHaveLength(5);
    expect(answers[0]).toContain("2 more wrong codes lock /approve");
    expect(answers[1]).toContain("1 more wrong code locks /approve");
    expect(answers[2]).toContain(
      "Too many wrong codes in a row: /approve is locked for 10 minutes",
    );
    expect(answers[3]).toContain("/approve is locked after too many wrong codes");
    expect(answers[3]).toContain("no code was checked");
    expect(answers[3]).toContain("mediagate pairing approve CODE");
    expect(answers[4]).toContain("is not a pairing code");
    expect(told(Guesser, since)).toEqual([]);

    since = bot.mark();
    await dm(bot, Guesser, "echo locked-out");
    expect(told(Guesser, since)[0]).toContain("You already have a code waiting");

    harness.stateClock.advance(LockSeconds * 1000);
    since = bot.mark();
    await dm(bot, Admin, `/approve ${code}`);
    expect(told(Admin, since)[0]).toContain(`✅ Approved telegram:${Guesser}`);
    since = bot.mark();
    await dm(bot, Guesser, "echo guessed-in");
    expect(told(Guesser, since).join("\n")).toContain("guessed-in");
  });

  it("past maxPendingCodes waiting, a new user is told to try later; the users who have one still get theirs", async () => {
    const users = [6610, 6611, 6612];
    const codes: string[] = [];
    let since = bot.mark();
    for (const user of users) {
      await dm(bot, user, "hi");
      codes.push(codeIn(told(user, since)[0]));
    }
    const extra = 6613;
    await dm(bot, extra, "me too");
    expect(told(extra, since)).toEqual([
      "⏳ This bot needs an admin's approval, and too many requests are waiting for one right now. Try again later.",
    ]);
    await dm(bot, users[0]!, "still there?");
    expect(codeIn(told(users[0]!, since).at(-1))).toBe(codes[0]);

    // A flood of strangers while it is full: one summary line per period (from the first
    // refusal, `extra`'s above), not a line each.
    const logged = harness.logs.length;
    const flood = [6620, 6621, 6622, 6623];
    for (const user of [...flood, ...flood, extra]) await dm(bot, user, "let me in");
    const warnings = () =>
      harness.logs
        .slice(logged)
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level >= 40);
    expect(warnings()).toEqual([]);
    harness.stateClock.advance(60_000);
    expect(warnings()).toEqual([
      expect.objectContaining({
        msg: `pairing: refused a code to 10 requests of 5 users in the last 60 s: ${MaxPending} codes are pending already (pairing.maxPendingCodes)`,
        refused: 10,
        users: 5,
        maxPendingCodes: MaxPending,
      }),
    ]);

    const revoke = await pairing("revoke", codes[1]!);
    expect(revoke.code, revoke.output).toBe(0);
    since = bot.mark();
    await dm(bot, extra, "now?");
    expect(told(extra, since)[0]).toContain("Your one-time code:");
  });
});
