import { randomBytes } from "node:crypto";
import { chown, link, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { UnreadableNotice } from "./harness/sandbox-files.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

/** The session whose files are private. */
const Owner = 5101;
/** Another session of the same container, naming the owner's files. */
const Other = 5102;
/** The group every sandbox uid shares `/workspace` and `/root` through. */
const SandboxGid = 2_000_000;

const secret = (label: string) => `${label}-${randomBytes(12).toString("hex")}`;

/** The chat's notices (lines the gateway itself wrote), not the command's output. */
const noticesIn = (texts: readonly string[]): string[] =>
  texts.flatMap((text) => text.split("\n")).filter((line) => line.startsWith("⚠️"));

/**
 * `MEDIA:` delivers a file only when the session that named it could read it itself
 * (docs/security.md, "Files in replies"): two sessions of one profile share its container,
 * one makes files private (a 0600 file, a 0700 directory, a 0600 file in `/root`), and the
 * other names them — directly, through symlinks and a hard link — through the real gateway,
 * grammY against FakeTelegram and the real engine. What the owner keeps private never reaches
 * the other's chat, nor the web console's preview, nor a resumed delivery.
 */
describe("gateway over Telegram: MEDIA: sends a session only what it could read itself", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  /** The outbox's timers, fired by the test. */
  const scheduled: { run: () => void; delayMs: number }[] = [];
  const secrets = {
    file: secret("file"),
    inDir: secret("in-dir"),
    root: secret("root"),
    shared: secret("shared"),
    team: secret("team"),
    song: secret("song"),
    mine: secret("mine"),
  };

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-priv",
      [{ admins: [Owner], allowed: [Other] }],
      {
        web: true,
        outboxSchedule: (run, delayMs) => {
          scheduled.push({ run, delayMs });
          return () => {};
        },
      },
    );
    bot = harness.bot();
    const made = await bot.ask(
      Owner,
      [
        "cd /workspace",
        "umask 077",
        `printf '%s' ${secrets.file} > vfile.txt`,
        `mkdir vdir && printf '%s' ${secrets.inDir} > vdir/inner.txt && chmod 644 vdir/inner.txt`,
        `printf '%s' ${secrets.root} > /root/vroot.txt`,
        "umask 027",
        `printf '%s' ${secrets.shared} > shared.txt`,
        `mkdir teamdir && printf '%s' ${secrets.team} > teamdir/t.txt`,
        `printf '%s' ${secrets.song} > song.mp3`,
        "echo made",
      ].join(" && "),
    );
    expect(made).toBe("made");
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Sends `text` as `user`: what arrived in that chat and the chat's notices. */
  async function deliver(user: number, text: string) {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: user, text }));
    const texts = bot.texts(user, since);
    return {
      arrived: bot.arrived(user, since).map((f) => [f.filename, f.bytes.toString()]),
      texts: texts.join("\n"),
      notices: noticesIn(texts),
    };
  }

  const hostPath = (...parts: string[]) => join(bot.profileSlotDir(), ...parts);

  function expectNoPrivateBytes(): void {
    const everything = bot.everyUploadedByte();
    for (const value of [secrets.file, secrets.inDir, secrets.root]) {
      expect(everything.includes(Buffer.from(value)), value).toBe(false);
    }
  }

  it("the other session cannot read the owner's private files with its own commands", async () => {
    const read = await bot.ask(
      Other,
      "cat /workspace/vfile.txt /workspace/vdir/inner.txt /root/vroot.txt 2>&1; echo done",
    );
    expect(read.match(/Permission denied/g)).toHaveLength(3);
    expect(read).not.toContain(secrets.file);
    const owner = (await stat(hostPath("workspace", "vfile.txt"))).uid;
    const other = Number(await bot.ask(Other, "id -u"));
    expect(other).not.toBe(owner);
    expect(await bot.ask(Other, "id -G")).toBe(String(SandboxGid));
  });

  it("withholds a 0600 file, a file in a 0700 directory and a 0600 file in /root, saying so without naming them", async () => {
    const paths = [
      "/workspace/vfile.txt",
      "/workspace/vdir/inner.txt",
      "/root/vroot.txt",
      // Missing, but in a directory the session cannot search: the same answer, so MEDIA: does
      // not tell the other session what the directory holds.
      "/workspace/vdir/absent.txt",
    ];
    const got = await deliver(Other, paths.map((p) => `echo MEDIA:${p}`).join("; "));
    expect(got.arrived).toEqual([]);
    expect(got.notices).toEqual(paths.map(() => UnreadableNotice));
    for (const name of ["vfile", "vdir", "inner", "vroot", "absent", String(SandboxGid)]) {
      expect(got.texts).not.toContain(name);
    }
    expectNoPrivateBytes();
  });

  it("withholds them through symlinks the other session makes, absolute and relative", async () => {
    const links = {
      a: "/workspace/vfile.txt",
      b: "vfile.txt",
      c: "vdir/inner.txt",
      d: "/root/vroot.txt",
      e: "../root/vroot.txt",
      f: "vdir",
      // Out of /workspace and back into the 0700 directory: a name that is there and one that
      // is not get the same answer.
      g: "../workspace/vdir/inner.txt",
      h: "../workspace/vdir/absent.txt",
    };
    const made = Object.entries(links)
      .map(([name, target]) => `ln -s ${target} /workspace/x${name}`)
      .join(" && ");
    const tags = [...Object.keys(links).slice(0, 5), "f/inner.txt", "g", "h"].map(
      (name) => `echo MEDIA:/workspace/x${name}`,
    );
    const got = await deliver(Other, `${made} && ${tags.join("; ")}`);
    expect(got.arrived).toEqual([]);
    expect(got.notices).toEqual(tags.map(() => UnreadableNotice));
    expectNoPrivateBytes();
  });

  it("withholds a hard link to the owner's 0600 file: the link keeps the owner's uid and mode", async () => {
    // This kernel refuses the other session the link (fs.protected_hardlinks); one that does
    // not would make exactly this file, so the test makes it on the host.
    const tried = await bot.ask(Other, "ln /workspace/vfile.txt /workspace/xhard 2>&1; echo tried");
    const hard = hostPath("workspace", "xhard");
    if (!tried.includes("Operation not permitted")) expect(tried).toBe("tried");
    else await link(hostPath("workspace", "vfile.txt"), hard);
    const info = await stat(hard);
    expect(info.uid).toBe((await stat(hostPath("workspace", "vfile.txt"))).uid);
    expect(info.mode & 0o777).toBe(0o600);
    const got = await deliver(Other, "echo MEDIA:/workspace/xhard");
    expect(got.arrived).toEqual([]);
    expect(got.notices).toEqual([UnreadableNotice]);
    expectNoPrivateBytes();
  });

  it("delivers the owner's own private files to the owner", async () => {
    const got = await deliver(
      Owner,
      "echo MEDIA:/workspace/vfile.txt; echo MEDIA:/workspace/vdir/inner.txt; echo MEDIA:/root/vroot.txt",
    );
    expect(got.arrived).toEqual([
      ["vfile.txt", secrets.file],
      ["inner.txt", secrets.inDir],
      ["vroot.txt", secrets.root],
    ]);
    expect(got.notices).toEqual([]);
  });

  it("delivers the other session's own 0600 file, and the owner's files shared through the sandbox group", async () => {
    const got = await deliver(
      Other,
      [
        `umask 077 && printf '%s' ${secrets.mine} > /workspace/mine.txt`,
        "echo MEDIA:/workspace/mine.txt",
        "echo MEDIA:/workspace/shared.txt",
        "echo MEDIA:/workspace/teamdir/t.txt",
      ].join("; "),
    );
    expect(got.arrived).toEqual([
      ["mine.txt", secrets.mine],
      ["shared.txt", secrets.shared],
      ["t.txt", secrets.team],
    ]);
    expect(got.notices).toEqual([]);
    expect((await stat(hostPath("workspace", "shared.txt"))).mode & 0o777).toBe(0o640);
  });

  it("the web console previews a delivered file only while that session can still read it", async () => {
    const web = await logIn(harness);
    const deliveries = (await web.json("/api/deliveries")) as {
      id: string;
      sessionKey: string;
      files: { index: number; name?: string }[];
    }[];
    const indexOf = (name: string) => {
      for (const reply of deliveries) {
        const file = reply.files.find((f) => f.name === name);
        if (file !== undefined && reply.sessionKey.includes(String(Other)))
          return `${reply.id}/${file.index}`;
      }
      throw new Error(`no delivered ${name} in the other session's replies`);
    };
    const shared = indexOf("shared.txt");
    const mine = indexOf("mine.txt");
    expect(await web.preview(shared)).toEqual({ status: 200, body: secrets.shared });

    expect(await bot.ask(Owner, "chmod 600 /workspace/shared.txt && echo private")).toBe("private");
    expect(await web.preview(shared)).toEqual({ status: 404, body: expect.any(String) });
    expect(await web.preview(mine)).toEqual({ status: 200, body: secrets.mine });
  });

  it("a resumed delivery withholds a file its owner made private since the first attempt", async () => {
    // song.mp3 (an audio, by its name) is refused by flood control for an hour: the reply
    // stops there and the outbox schedules the rest.
    bot.fake.failNext("sendAudio", { kind: "rate_limit", retryAfterSeconds: 3600 });
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Other, text: "echo MEDIA:/workspace/song.mp3" }),
    );
    expect(bot.arrived(Other, since)).toEqual([]);
    expect(scheduled).toHaveLength(1);

    expect(await bot.ask(Owner, "chmod 600 /workspace/song.mp3 && echo private")).toBe("private");
    const resumed = bot.mark();
    scheduled[0]!.run();
    await waitUntil(
      () => noticesIn(bot.texts(Other, since)).includes(UnreadableNotice),
      "the resumed delivery's notice",
    );
    expect(bot.arrived(Other, since)).toEqual([]);
    // The refused first attempt carried the file; nothing after the owner's chmod did.
    const carried = bot.fake.calls.slice(resumed).flatMap((call) => call.files);
    expect(carried).toEqual([]);
  });
});

/**
 * With `user: root` every session is the container's user (root without any capability): it
 * reads what root owns, and not a private file another uid left (a per-session uid's, from
 * before the profile was switched to root mode).
 */
describe("gateway over Telegram: MEDIA: in root mode sends what the container's user can read", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-privroot", [
      { admins: [Owner], sandbox: { user: "root" } },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("delivers root's own 0600 file and another uid's 0644 file, withholds another uid's 0600 file", async () => {
    const own = secret("own");
    const left = secret("left");
    const open = secret("open");
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Owner, text: "id -u; touch /workspace/.ready" }),
    );
    expect(bot.texts(Owner, since)).toEqual(["0"]);
    const workspace = join(bot.profileSlotDir(), "workspace");
    for (const [name, value, mode] of [
      ["left.txt", left, 0o600],
      ["open.txt", open, 0o644],
    ] as const) {
      await writeFile(join(workspace, name), value, { mode });
      await chown(join(workspace, name), 2_000_123, SandboxGid);
    }

    const then = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Owner,
        text: [
          `umask 077 && printf '%s' ${own} > /workspace/own.txt`,
          "cat /workspace/left.txt 2>&1",
          "echo MEDIA:/workspace/own.txt",
          "echo MEDIA:/workspace/left.txt",
          "echo MEDIA:/workspace/open.txt",
        ].join("; "),
      }),
    );
    const texts = bot.texts(Owner, then);
    expect(texts.join("\n")).toContain("Permission denied");
    expect(bot.arrived(Owner, then).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["own.txt", own],
      ["open.txt", open],
    ]);
    expect(noticesIn(texts)).toEqual([UnreadableNotice]);
    expect(bot.everyUploadedByte().includes(Buffer.from(left))).toBe(false);
    expect(await readFile(join(workspace, "left.txt"), "utf8")).toBe(left);
  });
});

/** A logged-in client of the harness's web console (token from the home, CSRF, cookie). */
async function logIn(harness: TelegramGatewayHarness) {
  const url = harness.gateway.webUrl ?? "";
  const token = (await readFile(join(harness.home, "web-token"), "utf8")).trim();
  const csrf = await fetch(`${url}/api/csrf`);
  const { token: csrfToken } = (await csrf.json()) as { token: string };
  const cookieOf = (answer: Response) =>
    answer.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
  const login = await fetch(`${url}/login`, {
    method: "POST",
    headers: {
      origin: url,
      cookie: cookieOf(csrf),
      "x-csrf-token": csrfToken,
      "content-type": "application/json",
    },
    body: JSON.stringify({ token }),
  });
  expect(login.status).toBe(204);
  const cookie = cookieOf(login);
  return {
    json: async (path: string): Promise<unknown> =>
      (await fetch(url + path, { headers: { cookie } })).json(),
    preview: async (at: string) => {
      const answer = await fetch(`${url}/api/preview/${at}`, { headers: { cookie } });
      return { status: answer.status, body: await answer.text() };
    },
  };
}
