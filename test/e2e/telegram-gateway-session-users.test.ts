import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, chown, copyFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 4001;
const Member = 4002;
/** The group every sandbox uid shares `/workspace` and `/root` through. */
const SandboxGid = 2_000_000;

/**
 * Sessions of one profile share its container; each is a chat user with a shell. Attacked
 * the way a member would attack the admin's session: through the real gateway, grammY
 * against FakeTelegram and the real engine, observed through the engine's own API.
 */
describe("gateway over Telegram: sessions of one profile stay apart", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let container: string;
  const secret = `tok-${randomBytes(8).toString("hex")}`;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-users", [
      {
        admins: [Admin],
        allowed: [Member],
        sandbox: { pidsLimit: 80, sessionProcessLimit: 24 },
      },
    ]);
    bot = harness.bot();
    await bot.ask(Admin, `export ADMIN_TOKEN=${secret}; cd /tmp; echo set`);
    container = await bot.runningContainer();
    // What provisioning prepares for per-session users: the slot dirs shared through the
    // sandbox group (root-owned, setgid, group-writable).
    for (const sub of ["workspace", "home"]) {
      const dir = join(bot.profileSlotDir(), sub);
      await chown(dir, 0, SandboxGid);
      await chmod(dir, 0o2770);
    }
  });

  afterAll(async () => {
    await harness?.close();
  });

  const processes = async (needle: string) =>
    (await harness.docker.processes(container)).filter((p) => p.includes(needle));

  it("a member can neither read the admin's exported variables nor plant code in the admin's next turn", async () => {
    const snoop = await bot.ask(
      Member,
      "cat /tmp/.mediagate/*.env /run/mediagate/s/*/env; grep -rs ADMIN_TOKEN /tmp /run /root",
    );
    expect(snoop).not.toContain(secret);
    await bot.ask(
      Member,
      "for f in /tmp/.mediagate/*.env /run/mediagate/s/*/env; do echo 'echo HIJACKED' >>\"$f\"; done; echo tried",
    );
    expect(await bot.ask(Admin, 'echo "$ADMIN_TOKEN"; pwd')).toBe(`${secret}\n/tmp`);
  });

  it("a member cannot read the environment of the admin's processes or kill them", async () => {
    await bot.ask(Admin, "sleep 3331 & echo started");
    expect(await processes("sleep 3331")).toHaveLength(1);
    const environ = await bot.ask(
      Member,
      "grep -ao 'ADMIN_TOKEN=[a-z0-9-]*' /proc/[0-9]*/environ; echo scanned",
    );
    expect(environ).toContain("scanned");
    expect(environ).not.toContain(secret);
    await bot.ask(Member, "pkill -9 -f 'sleep 3331'; for p in $(pidof sleep); do kill -9 $p; done");
    expect(await processes("sleep 3331")).toHaveLength(1);
  });

  it("a setuid copy a member makes in /workspace is not root's on the host", async () => {
    const workspace = join(bot.profileSlotDir(), "workspace");
    await copyFile("/usr/bin/id", join(workspace, "id-source"));
    expect(
      await bot.ask(
        Member,
        "cp /workspace/id-source /workspace/id-suid && chmod 4755 /workspace/id-suid && echo made",
      ),
    ).toBe("made");
    const planted = join(workspace, "id-suid");
    const info = await stat(planted);
    expect(info.uid).not.toBe(0);
    expect(info.gid).toBe(SandboxGid);
    // Host user nobody runs it through an inherited descriptor, past the directory modes.
    const euid = execFileSync("bash", [
      "-c",
      'setpriv --reuid=65534 --regid=65534 --clear-groups /proc/self/fd/3 -u 3<"$1"',
      "run-as-nobody",
      planted,
    ])
      .toString()
      .trim();
    expect(euid).not.toBe("0");
  });

  it("a fork loop of a member leaves the admin working, and the admin's /stop all ends it", async () => {
    const loop = "while :; do sh -c 'while :; do sleep 3332 & done' 2>/dev/null; done";
    expect(await bot.ask(Member, `(${loop}) & echo started`)).toContain("started");
    await waitUntil(async () => (await processes("sleep 3332")).length > 10, "the loop forking");
    expect(await bot.ask(Admin, "echo ok")).toBe("ok");

    expect(await bot.ask(Member, "/stop all")).toBe(
      "⛔ /stop is for admins only; nothing was done.",
    );
    expect((await processes("sleep 3332")).length).toBeGreaterThan(10);

    const stopped = await bot.ask(Admin, "/stop all");
    expect(stopped).toMatch(
      /^🛑 Stopped everything in slot profile:[^:]+: killed \d+ process\(es\)/,
    );
    expect(Number(/killed (\d+)/.exec(stopped)?.[1])).toBeGreaterThan(10);
    expect(await processes("sleep 333")).toEqual([]);
    expect(await bot.runningContainer()).toBe(container);
    expect(await bot.ask(Member, "echo back")).toBe("back");
    expect(await bot.ask(Admin, 'echo "$ADMIN_TOKEN"')).toBe(secret);
  });
});
