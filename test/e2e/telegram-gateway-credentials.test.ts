import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WithheldNotice as Withheld } from "./harness/sandbox-files.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;

/**
 * The credential surface end to end (docs/media.md): whatever the agent tags — a symlink to a host
 * file, a credential dir, the profile home's secrets (mounted into the sandbox here, as an
 * operator might), a path with `..` — the bytes never reach Telegram, and the chat is told
 * that an attachment was withheld without the path being echoed.
 */
describe("gateway over Telegram: credential files are never sent", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let outside = "";

  beforeAll(async () => {
    outside = await mkdtemp(join(tmpdir(), "mediagate-e2e-outside-"));
    harness = await TelegramGatewayHarness.start("t-cred", [
      {
        admins: [Admin],
        // The operator mounted the profile home read-only: its secrets must still never leave.
        sandbox: (profileHome) => ({ volumes: [`${profileHome}:/gateway-home:ro`] }),
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
    await rm(outside, { recursive: true, force: true });
  });

  it("withholds a symlink to a host file and says so; the host bytes never reach Telegram", async () => {
    const hostPasswd = await readFile("/etc/passwd");
    const secret = randomBytes(24).toString("hex");
    const hostSecret = join(outside, "secret.txt");
    await writeFile(hostSecret, secret);
    const profileEnv = join(bot.runtime.profile.home, ".env");
    await writeFile(profileEnv, `TELEGRAM_BOT_TOKEN=${secret}-env\n`);

    for (const [name, target] of [
      ["p", "/etc/passwd"],
      ["s", hostSecret],
      ["e", profileEnv],
    ] as const) {
      const since = bot.mark();
      await bot.handle((fake) =>
        fake.sendPrivateText({
          userId: Admin,
          text: `ln -sf ${target} /workspace/${name}; echo MEDIA:/workspace/${name}`,
        }),
      );
      expect(bot.arrived(Admin, since), `symlink to ${target}`).toEqual([]);
      const texts = bot.texts(Admin, since);
      expect(texts.join("\n"), `symlink to ${target}`).toContain(Withheld);
      expect(texts.join("\n")).not.toContain(target);
    }
    const everything = bot.everyUploadedByte();
    expect(everything.includes(hostPasswd)).toBe(false);
    expect(everything.includes(Buffer.from(secret))).toBe(false);
  });

  it("withholds credential files — /root/.ssh in the container, the profile home's config.yaml and .env — without echoing the path", async () => {
    const secret = randomBytes(24).toString("hex");
    const home = bot.runtime.profile.home;
    await writeFile(join(home, "config.yaml"), `token: ${secret}-yaml\n`);
    await writeFile(join(home, ".env"), `TELEGRAM_BOT_TOKEN=${secret}-env\n`);
    const cases = [
      [
        "mkdir -p /root/.ssh && printf '%s' " +
          `${secret}-ssh > /root/.ssh/id_rsa && echo MEDIA:/root/.ssh/id_rsa`,
        "id_rsa",
      ],
      // The session's uid cannot read the root-only home through the volume; the tag alone
      // must still be withheld (the gateway resolves it on the host).
      ["echo MEDIA:/gateway-home/config.yaml", "config.yaml"],
      ["echo MEDIA:/gateway-home/.env", ".env"],
    ] as const;
    for (const [command, name] of cases) {
      const since = bot.mark();
      await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: command }));
      expect(bot.arrived(Admin, since), name).toEqual([]);
      const texts = bot.texts(Admin, since).join("\n");
      expect(texts, name).toContain(Withheld);
      expect(texts, name).not.toContain(name);
    }
    expect(bot.everyUploadedByte().includes(Buffer.from(secret))).toBe(false);
  });

  /**
   * Sends each command as the admin and returns what went wrong for each tag that should have
   * been withheld: a file arrived, no withheld notice came, or the notice echoed the name.
   */
  async function leaksOf(cases: readonly (readonly [string, string])[]): Promise<string[]> {
    const leaks: string[] = [];
    for (const [command, name] of cases) {
      const since = bot.mark();
      await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: command }));
      const arrived = bot.arrived(Admin, since);
      const texts = bot.texts(Admin, since).join("\n");
      if (arrived.length > 0 || !texts.includes(Withheld) || texts.includes(name)) {
        const sent = arrived.map((f) => [f.filename, f.bytes.toString()]);
        leaks.push(`${command} → sent ${JSON.stringify(sent)}, said ${JSON.stringify(texts)}`);
      }
    }
    return leaks;
  }

  it("withholds what a path reaches through `..`, /proc, the Docker socket, or a link that resolves on the host", async () => {
    const secret = randomBytes(24).toString("hex");
    await writeFile(join(outside, "secret.txt"), `${secret}-outside`);
    const leaks = await leaksOf([
      ["echo MEDIA:/workspace/../../etc/passwd", "passwd"],
      ["echo MEDIA:/var/run/docker.sock", "docker.sock"],
      ["echo MEDIA:/proc/self/environ", "environ"],
      // a relative link inside the container's home, into its credential dir
      [
        `mkdir -p /root/.ssh && printf '%s' ${secret}-ssh > /root/.ssh/id_rsa && ` +
          "ln -sf .ssh/id_rsa /root/innocent.txt && echo MEDIA:/root/innocent.txt",
        "innocent.txt",
      ],
      // a directory link in the workspace to a host directory outside the slot
      [
        `ln -sfn ${outside} /workspace/outside && echo MEDIA:/workspace/outside/secret.txt`,
        "secret.txt",
      ],
    ]);
    expect(leaks).toEqual([]);
    expect(bot.everyUploadedByte().includes(Buffer.from(secret))).toBe(false);
  });

  it("withholds a credential reached through a directory symlink that resolves only inside the container", async () => {
    // A link to a container path dangles on the host, so the gateway falls back to copying
    // the file out of the container (archive API) — where Docker resolves the link. The
    // policy must hold for the path the link leads to, not only for the path that was named.
    const secret = randomBytes(24).toString("hex");
    const home = bot.runtime.profile.home;
    await writeFile(join(home, ".env"), `SECRET=${secret}-env\n`);
    await writeFile(join(home, "config.yaml"), `token: ${secret}-yaml\n`);
    const leaks = await leaksOf([
      [
        `mkdir -p /root/.ssh && printf '%s' ${secret}-ssh > /root/.ssh/id_rsa && ` +
          "ln -sfn /root/.ssh /workspace/keys && echo MEDIA:/workspace/keys/id_rsa",
        "id_rsa",
      ],
      ["ln -sfn /root/.ssh /tmp/keys && echo MEDIA:/tmp/keys/id_rsa", "id_rsa"],
      [
        "ln -sfn /gateway-home /workspace/gh && echo MEDIA:/workspace/gh/config.yaml",
        "config.yaml",
      ],
      ["ln -sfn /gateway-home /tmp/gh && echo MEDIA:/tmp/gh/.env", ".env"],
    ]);
    expect(leaks).toEqual([]);
    expect(bot.everyUploadedByte().includes(Buffer.from(secret))).toBe(false);
  });
});
